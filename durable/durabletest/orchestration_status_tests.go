package durabletest

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// orchestrationStatusTests ports tests/orchestration_status_tests.rs.
func orchestrationStatusTests() []sample {
	return []sample{
		{"test_status_not_found", testStatusNotFound},
		{"test_status_running", testStatusRunning},
		{"test_status_completed", testStatusCompleted},
		{"test_status_failed", testStatusFailed},
		{"test_status_after_continue_as_new", testStatusAfterContinueAsNew},
		{"test_status_cancelled", testStatusCancelled},
		{"test_status_lifecycle_transitions", testStatusLifecycleTransitions},
		{"test_status_independence", testStatusIndependence},
	}
}

// closeAtEnd closes ch when the test ends, before the runtimes started
// earlier shut down: long-running activities wait on it so shutdown need
// not wait for them (Rust's shutdown aborts them).
func (e *env) closeAtEnd(ch chan struct{}) {
	e.t.Cleanup(func() { close(ch) })
}

func (e *env) status(instance string) *durable.OrchestrationStatus {
	e.t.Helper()
	st, err := e.client().Status(e.ctx, instance)
	require.NoError(e.t, err)
	return st
}

func activityOnly(name string) durable.OrchestrationFunc {
	return func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallActivity[string](ctx, name, in).Await()
	}
}

func testStatusNotFound(e *env) {
	require.Equal(e.t, durable.StateNotFound, e.status("nonexistent-instance").State)
}

func testStatusRunning(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "RunningOrch", activityOnly("BlockForever"))
	release := make(chan struct{})
	act(e.t, r, "BlockForever", func(ctx durable.ActivityContext, _ string) (string, error) {
		select {
		case <-ctx.Done():
		case <-release:
		}
		return "never", nil
	})
	e.start(r, nil)
	e.closeAtEnd(release)
	e.startOrch("test-running", "RunningOrch", "")
	e.waitHist("test-running", "activity scheduled", func(h []duroxide.Event) bool { return hasKind[duroxide.ActivityScheduled](h, nil) })
	require.Equal(e.t, durable.StateRunning, e.status("test-running").State)
}

func testStatusCompleted(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "ReturnValue", func(_ durable.ActivityContext, in string) (string, error) { return "result: " + in, nil })
	orch(e.t, r, "CompletedOrch", activityOnly("ReturnValue"))
	e.start(r, nil)
	e.startOrch("test-completed", "CompletedOrch", "test-input")
	require.Equal(e.t, "result: test-input", e.completed("test-completed"))
	st := e.status("test-completed")
	require.Equal(e.t, durable.StateCompleted, st.State)
	require.Equal(e.t, "result: test-input", st.Output)
}

func requireAppFailed(e *env, d duroxide.ErrorDetails, msg string) {
	e.t.Helper()
	a, ok := appDetails(d)
	require.True(e.t, ok && a.Kind.Type == duroxide.AppOrchestrationFailed && a.Message == msg, "%#v", d)
}

func testStatusFailed(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "FailActivity", func(durable.ActivityContext, string) (string, error) { return "", errors.New("intentional failure") })
	orch(e.t, r, "FailedOrch", activityOnly("FailActivity"))
	e.start(r, nil)
	e.startOrch("test-failed", "FailedOrch", "")
	requireAppFailed(e, e.failedDetails("test-failed"), "intentional failure")
	st := e.status("test-failed")
	require.Equal(e.t, durable.StateFailed, st.State)
	requireAppFailed(e, st.Details, "intentional failure")
}

func testStatusAfterContinueAsNew(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "ContinueAsNewOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		if n < 2 {
			return "", durable.ContinueAsNew(ctx, strconv.Itoa(n+1))
		}
		return "done: " + strconv.Itoa(n), nil
	})
	e.start(r, nil)
	e.startOrch("test-continue", "ContinueAsNewOrch", "0")
	e.waitFor("final execution completed", func() bool {
		st := e.status("test-continue")
		require.NotEqual(e.t, durable.StateFailed, st.State, "Orchestration failed unexpectedly: %s", st.FailureMessage())
		return st.State == durable.StateCompleted && st.Output == "done: 2"
	})
	require.True(e.t, hasKind(e.history("test-continue"), func(k duroxide.OrchestrationStarted) bool { return k.Input == "2" }),
		"History should contain the final execution's start event with input=2")
}

func testStatusCancelled(e *env) {
	r := durable.NewRegistry()
	release := make(chan struct{})
	act(e.t, r, "LongTask", func(ctx durable.ActivityContext, _ string) (string, error) {
		select {
		case <-ctx.Done():
		case <-release:
		case <-time.After(10 * time.Second):
		}
		return "done", nil
	})
	orch(e.t, r, "CancellableOrch", activityOnly("LongTask"))
	e.start(r, nil)
	e.closeAtEnd(release)
	e.startOrch("test-cancelled", "CancellableOrch", "")
	e.waitHist("test-cancelled", "activity scheduled", func(h []duroxide.Event) bool { return hasKind[duroxide.ActivityScheduled](h, nil) })
	_ = e.client().CancelInstance(e.ctx, "test-cancelled", "test requested cancellation")
	d := e.failedDetails("test-cancelled")
	a, ok := appDetails(d)
	require.True(e.t, ok && a.Kind.Type == duroxide.AppCancelled && strings.Contains(a.Kind.Reason, "test requested cancellation"), "%#v", d)
}

func testStatusLifecycleTransitions(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "QuickTask", func(durable.ActivityContext, string) (string, error) {
		time.Sleep(200 * time.Millisecond)
		return "quick", nil
	})
	orch(e.t, r, "LifecycleOrch", activityOnly("QuickTask"))
	e.start(r, fastOptions(nil))
	require.Equal(e.t, durable.StateNotFound, e.status("test-lifecycle").State)
	e.startOrch("test-lifecycle", "LifecycleOrch", "")
	// Rust sleeps 50 ms; here: until the first turn is visible.
	var st *durable.OrchestrationStatus
	e.waitFor("first turn", func() bool { st = e.status("test-lifecycle"); return st.State != durable.StateNotFound })
	require.Equal(e.t, durable.StateRunning, st.State, "Should be Running after start")
	require.Equal(e.t, "quick", e.completed("test-lifecycle"))
	require.Equal(e.t, durable.StateCompleted, e.status("test-lifecycle").State)
}

func testStatusIndependence(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "SuccessTask", func(durable.ActivityContext, string) (string, error) { return "success", nil })
	act(e.t, r, "FailTask", func(durable.ActivityContext, string) (string, error) { return "", errors.New("failed") })
	orch(e.t, r, "SuccessOrch", activityOnly("SuccessTask"))
	orch(e.t, r, "FailOrch", activityOnly("FailTask"))
	e.start(r, nil)
	e.startOrch("inst-success", "SuccessOrch", "")
	e.startOrch("inst-fail", "FailOrch", "")
	require.Equal(e.t, durable.StateCompleted, e.wait("inst-success").State, "inst-success should be Completed")
	require.Equal(e.t, durable.StateFailed, e.wait("inst-fail").State, "inst-fail should be Failed")
}
