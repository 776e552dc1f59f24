package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/embedded"
)

// A run on a finished store starts nothing and reports what is there.
func TestResumeRunsAgainOnAFinishedStore(t *testing.T) {
	for _, k := range []string{cdb.EnvEndpoint, cdb.EnvKey, cdb.EnvConnectionString, cdb.EnvDatabase, cdb.EnvContainer} {
		t.Setenv(k, "")
	}
	t.Setenv(embedded.EnvDataDir, t.TempDir())
	for i := range 2 {
		var out bytes.Buffer
		if err := run(t.Context(), &out, options{Orders: 3}); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, out.String())
		}
		if !strings.Contains(out.String(), "summary    3 of 3 orders completed exactly once") {
			t.Fatalf("run %d:\n%s", i, out.String())
		}
	}
}

// historyCompletedOnce must see a second completion: otherwise the
// summary proves nothing.
func TestHistoryCompletedOnceCountsCompletions(t *testing.T) {
	// Built from a real run's history so the test needs no hand-made events.
	for _, k := range []string{cdb.EnvEndpoint, cdb.EnvKey, cdb.EnvConnectionString, cdb.EnvDatabase, cdb.EnvContainer} {
		t.Setenv(k, "")
	}
	t.Setenv(embedded.EnvDataDir, t.TempDir())
	if err := run(t.Context(), &bytes.Buffer{}, options{Orders: 1}); err != nil {
		t.Fatal(err)
	}
	st, err := embedded.Open(t.Context(), &embedded.Options{Log: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	history, err := durable.NewClient(st.Provider).ExecutionHistory(t.Context(), "order-01", 1)
	if err != nil {
		t.Fatal(err)
	}
	if !historyCompletedOnce(history, "order-01") {
		t.Fatal("a clean history is not completed once")
	}
	last := history[len(history)-1]
	if historyCompletedOnce(append(history, last), "order-01") {
		t.Error("a history with two completions counts as completed once")
	}
	for i, e := range history {
		if _, ok := e.Kind.(duroxide.ActivityCompleted); ok {
			dup := append(append([]duroxide.Event(nil), history[:i+1]...), history[i:]...)
			if historyCompletedOnce(dup, "order-01") {
				t.Error("a history with an activity result recorded twice counts as completed once")
			}
			break
		}
	}
}
