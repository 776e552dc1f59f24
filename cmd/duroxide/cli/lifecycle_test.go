package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/cmd/duroxide/cli"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/durable/durabletest"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/demo"
	"github.com/duroxide-go/cdb/memprovider"
)

// TestRewindAFailedInstance: after the fix, rewind runs the failed
// activity again and keeps the result before it; show lists both
// executions.
func TestRewindAFailedInstance(t *testing.T) {
	e := newOpsEnv(t)
	e.start("Fixable", "a", "fx-1")
	if st := e.terminal("fx-1"); st.FailureMessage() != "bug #123" {
		t.Fatalf("before the fix: %v %q", st.State, st.FailureMessage())
	}
	e.fixed.Store(true)
	out, _ := e.want(cli.ExitOK, "rewind", "-reason", "fixed #123", "fx-1")
	if !strings.Contains(out, "rewind requested for fx-1") {
		t.Fatalf("rewind: %s", out)
	}
	e.until("fx-1", func(st *durable.OrchestrationStatus) bool { return st.State == durable.StateCompleted })
	if st := e.terminal("fx-1"); st.Output != "step(a) flaky(a)" || e.steps.Load() != 1 {
		t.Fatalf("after rewind: %v %q, Step ran %d times", st.State, st.Output, e.steps.Load())
	}
	out, _ = e.want(cli.ExitOK, "show", "fx-1")
	for _, want := range []string{"Status         Completed", "Execution 1 (Failed)", "FAILED: bug #123", "Execution 2 (Completed)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("show lacks %q:\n%s", want, out)
		}
	}
	// Once it completed, it did not fail: a second rewind is refused.
	if _, errOut := e.want(cli.ExitFailed, "rewind", "fx-1"); !strings.Contains(errOut, "needs a failed instance") {
		t.Fatalf("second rewind: %s", errOut)
	}
}

// TestRestartWithTheSameOrANewInput: restart runs an ended instance
// again as a new execution, with its input or a new one.
func TestRestartWithTheSameOrANewInput(t *testing.T) {
	e := newOpsEnv(t)
	e.start("Echo", "first", "ok-1")
	e.want(cli.ExitOK, "restart", "-input", "second", "ok-1")
	e.until("ok-1", func(st *durable.OrchestrationStatus) bool { return st.Output == "second" })
	e.want(cli.ExitOK, "restart", "-pin", "1.0.0", "ok-1")
	for {
		out, _ := e.want(cli.ExitOK, "show", "-json", "ok-1")
		if strings.Contains(out, `"execution_id": 3`) && strings.Contains(out, `"state": "Completed"`) {
			if !strings.Contains(out, `"version": "1.0.0"`) || !strings.Contains(out, `"output": "second"`) {
				t.Fatalf("a restart without -input keeps the last input; -pin its version:\n%s", out)
			}
			break
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("the second restart never ended:\n%s", out)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestSuspendAndResume: a suspended instance takes no turns (an event
// raised meanwhile waits), its status says why, and resume delivers what
// waited.
func TestSuspendAndResume(t *testing.T) {
	e := newOpsEnv(t)
	e.start("Wait", "approval", "w-1")
	e.want(cli.ExitOK, "suspend", "-reason", "vendor down", "w-1")
	e.until("w-1", func(st *durable.OrchestrationStatus) bool { return st.State == durable.StateSuspended })
	e.want(cli.ExitOK, "raise", "w-1", "approval", "yes")
	out, _ := e.want(cli.ExitOK, "show", "w-1")
	if !strings.Contains(out, "Status         Suspended") || !strings.Contains(out, "Suspended      vendor down") {
		t.Fatalf("suspended:\n%s", out)
	}
	if st := e.settle("w-1"); st.State != durable.StateSuspended {
		t.Fatalf("the event ran a suspended instance: %v", st.State)
	}
	_, errOut := e.want(cli.ExitFailed, "suspend", "w-1")
	if !strings.Contains(errOut, "already Suspended") {
		t.Fatalf("suspending twice: %s", errOut)
	}
	e.want(cli.ExitOK, "resume", "w-1")
	if st := e.terminal("w-1"); st.State != durable.StateCompleted || st.Output != "yes" {
		t.Fatalf("after resume: %v %q", st.State, st.Output)
	}
}

// TestRedriveAPoisonedInstance: an activity whose message exceeded its
// attempts fails the instance with poison; redrive runs it again.
func TestRedriveAPoisonedInstance(t *testing.T) {
	p := memprovider.New()
	fp := durabletest.NewFaultyProvider(p)
	e := newOpsEnvWith(t, p, fp, &durable.Options{MaxAttempts: 2})
	e.fixed.Store(true)
	fp.InjectActivityAttempts(3) // Step's first delivery counts as its third attempt
	e.start("Fixable", "a", "px-1")
	out, _ := e.want(cli.ExitOK, "show", "px-1")
	if !strings.Contains(out, "poison: ") {
		t.Fatalf("not poisoned:\n%s", out)
	}
	e.want(cli.ExitOK, "redrive", "px-1")
	e.until("px-1", func(st *durable.OrchestrationStatus) bool { return st.State == durable.StateCompleted })
	if st := e.terminal("px-1"); st.Output != "step(a) flaky(a)" {
		t.Fatalf("after redrive: %v %q", st.State, st.Output)
	}
}

// TestLifecycleInBulk: the lifecycle actions take filters too, skip the
// instances they do not apply to (with why), and report progress.
func TestLifecycleInBulk(t *testing.T) {
	e := newOpsEnv(t)
	e.start("Fixable", "a", "fx-1", "fx-2")
	e.start("Wait", "approval", "w-1", "w-2")

	out, errOut := e.want(cli.ExitOK, "rewind", "-prefix", "fx-", "-dry-run")
	if strings.Count(out, "\n") != 2 || !strings.Contains(errOut, "would apply to 2 instance(s)") {
		t.Fatalf("dry run:\n%s\n%s", out, errOut)
	}
	e.fixed.Store(true)
	out, errOut = e.want(cli.ExitOK, "rewind", "-name", "Fixable", "-progress")
	if !strings.Contains(out, "rewind: 2 done, 0 skipped, 0 failed, of 2 matching") || !strings.Contains(errOut, "] 2/2 rewind\n") {
		t.Fatalf("bulk rewind:\n%s\n%s", out, errOut)
	}
	for _, id := range []string{"fx-1", "fx-2"} {
		e.until(id, func(st *durable.OrchestrationStatus) bool { return st.State == durable.StateCompleted })
	}
	out, _ = e.want(cli.ExitOK, "suspend", "-prefix", "w-")
	if !strings.Contains(out, "suspend: 2 done") {
		t.Fatalf("bulk suspend:\n%s", out)
	}
	for _, id := range []string{"w-1", "w-2"} {
		e.until(id, func(st *durable.OrchestrationStatus) bool { return st.State == durable.StateSuspended })
	}
	// Resume meets instances that are not suspended: the Client refuses
	// them, and they are skipped with its reason.
	out, errOut = e.want(cli.ExitOK, "resume", "-status", "suspended,completed")
	if !strings.Contains(out, "resume: 2 done, 2 skipped, 0 failed, of 4 matching") || strings.Count(errOut, "already ended") != 2 {
		t.Fatalf("bulk resume:\n%s\n%s", out, errOut)
	}
	out, _ = e.want(cli.ExitOK, "restart", "-prefix", "fx-", "-input", "b")
	if !strings.Contains(out, "restart: 2 done, 0 skipped") {
		t.Fatalf("bulk restart:\n%s", out)
	}
	for _, id := range []string{"fx-1", "fx-2"} {
		e.until(id, func(st *durable.OrchestrationStatus) bool { return st.Output == "step(b) flaky(b)" })
	}
}

// TestShowListsPendingRequests: a request made while no runtime runs
// (here a suspend and a cancel after it) shows in `show` as pending,
// on both providers, until a runtime takes it.
func TestShowListsPendingRequests(t *testing.T) {
	for name, p := range map[string]duroxide.Provider{"memprovider": memprovider.New(), "cosmos": demo.CosmosProvider(t)} {
		t.Run(name, func(t *testing.T) {
			sw := new(switches)
			rt, err := durable.Start(t.Context(), p, opsRegistry(t, sw), nil)
			must(t, err)
			e := &opsEnv{t: t, p: p, c: durable.NewClient(p), switches: sw}
			e.start("Wait", "approval", "pend-1")
			e.settle("pend-1")
			must(t, rt.Shutdown(context.Background())) // the service is down

			e.want(cli.ExitOK, "suspend", "-reason", "vendor down", "pend-1")
			out, _ := e.want(cli.ExitOK, "show", "pend-1")
			if !strings.Contains(out, "Status         Running") || !strings.Contains(out, "Pending        suspend: vendor down (requested;") {
				t.Fatalf("show while no runtime runs:\n%s", out)
			}
			js, _ := e.want(cli.ExitOK, "show", "-json", "pend-1")
			if !strings.Contains(js, `"pending": [`) || !strings.Contains(js, `"kind": "suspend"`) {
				t.Fatalf("show -json lacks the pending request:\n%s", js)
			}

			demo.StartRuntime(t, p, opsRegistry(t, sw), nil)
			e.until("pend-1", func(st *durable.OrchestrationStatus) bool { return st.State == durable.StateSuspended })
			if out, _ := e.want(cli.ExitOK, "show", "pend-1"); strings.Contains(out, "Pending") {
				t.Fatalf("the runtime took the request, show still lists it:\n%s", out)
			}
		})
	}
}
