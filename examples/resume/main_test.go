package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/embedded"
)

// exampleEnv is the environment the example runs in: no account, the
// store in dir.
func exampleEnv(dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COSMOS_") && !strings.HasPrefix(kv, embedded.EnvDataDir+"=") {
			env = append(env, kv)
		}
	}
	return append(env, embedded.EnvDataDir+"="+dir)
}

// TestResumeAfterKill9 is the README's three commands: build and run the
// example, SIGKILL it once the first order completed (later ones still
// wait on their durable timers, a second apart), run it again. The second
// run must finish every order, and every instance in the store must have
// completed exactly once.
func TestResumeAfterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example twice")
	}
	dir := t.TempDir()
	bin := filepath.Join(t.TempDir(), "resume")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	args := []string{"-n", "8", "-stagger", "1s"}

	first := exec.CommandContext(t.Context(), bin, args...)
	first.Env = exampleEnv(dir)
	stdout, err := first.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	var seen []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.HasPrefix(sc.Text(), "completed  order-01") {
			if err := first.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	_, _ = bufio.NewReader(stdout).WriteTo(&bytes.Buffer{})
	err = first.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("first run was not killed midway (%v); its output:\n%s", err, strings.Join(seen, "\n"))
	}
	t.Logf("first run, killed:\n%s", strings.Join(seen, "\n"))

	second := exec.CommandContext(t.Context(), bin, args...)
	second.Env = exampleEnv(dir)
	out, err := second.CombinedOutput()
	t.Logf("second run:\n%s", out)
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	// order-01 completed before the kill, so the second run resumes.
	if !regexp.MustCompile(`started    8 orders \(order-01 \.\. order-08\): [1-8] already completed`).Match(out) {
		t.Error("second run does not report the orders the first completed")
	}
	if !strings.Contains(string(out), "summary    8 of 8 orders completed exactly once") {
		t.Fatal("second run does not report every order completed exactly once")
	}

	// Check the store itself, not only what the example printed.
	st, err := embedded.Open(t.Context(), &embedded.Options{DataDir: dir, Log: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ids, err := st.Provider.Admin().ListInstances(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 8 {
		t.Fatalf("store holds %d instances %v, want the 8 orders", len(ids), ids)
	}
	once, err := completedOnce(t.Context(), durable.NewClient(st.Provider), ids)
	if err != nil {
		t.Fatal(err)
	}
	if once != 8 {
		t.Fatalf("%d of 8 instances completed exactly once", once)
	}
}

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
	history, err := durable.NewClient(st.Provider).ReadExecutionHistory(t.Context(), "order-01", 1)
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
