package walkthrough

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
)

func newProvider(t *testing.T) (context.Context, *cdb.Provider) {
	t.Helper()
	srv := cosmostest.New(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	p, err := cdb.New(ctx, cdb.Config{Endpoint: srv.Endpoint(), Key: srv.Key()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return ctx, p
}

func start(ctx context.Context, t *testing.T, p *cdb.Provider, instance string) {
	t.Helper()
	err := p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: instance, Orchestration: "O", Input: "", Version: ptr("1.0.0"), ExecutionID: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
}

// In a shared container the fetch helpers skip other instances' work and
// hand it back untouched: unlocked, attempt count unchanged.
func TestFetchHelpersSkipOtherInstances(t *testing.T) {
	ctx, p := newProvider(t)
	start(ctx, t, p, "other")
	time.Sleep(2 * time.Millisecond) // "other" is strictly older
	start(ctx, t, p, "mine")

	item, err := FetchOrchestration(ctx, p, "mine")
	if err != nil || item.Instance != "mine" {
		t.Fatalf("FetchOrchestration = %+v, %v", item, err)
	}
	other, err := FetchOrchestration(ctx, p, "other")
	if err != nil || other.AttemptCount != 1 {
		t.Fatalf("the skipped item: %+v, %v; want it fetchable with attempt 1", other, err)
	}

	for _, inst := range []string{"other", "mine"} {
		if err := p.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: "A", Input: inst}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	w, err := FetchActivity(ctx, p, "mine")
	if err != nil || w.Item.InstanceID() != "mine" {
		t.Fatalf("FetchActivity = %+v, %v", w, err)
	}
	w, err = FetchActivity(ctx, p, "other")
	if err != nil || w.AttemptCount != 1 {
		t.Fatalf("the skipped activity: %+v, %v; want it fetchable with attempt 1", w, err)
	}
}

func TestRunRefusesAnInstanceWithHistory(t *testing.T) {
	ctx, p := newProvider(t)
	var out bytes.Buffer
	if err := Run(ctx, p, &out, "greet-1"); err != nil {
		t.Fatalf("first run: %v\n%s", err, out.String())
	}
	err := Run(ctx, p, &out, "greet-1")
	if err == nil || !strings.Contains(err.Error(), "already has") {
		t.Fatalf("second run with the same id = %v, want a clear refusal", err)
	}
}

func TestDelta(t *testing.T) {
	before := cdb.RequestStats{cdb.OpQuery: {Requests: 2}}
	after := cdb.RequestStats{cdb.OpQuery: {Requests: 3}, cdb.OpBatch: {Requests: 1}}
	if got := Delta(before, after); got != "2 requests: batch 1, query 1" {
		t.Errorf("Delta = %q", got)
	}
	if got := Delta(after, after); got != "no requests" {
		t.Errorf("Delta of nothing = %q", got)
	}
}
