package durabletest

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// cancellationTests ports tests/cancellation_tests.rs.
func cancellationTests() []sample {
	return []sample{
		{"cancel_parent_down_propagates_to_child", cancelParentDownPropagatesToChild},
		{"cancel_after_completion_is_noop", cancelAfterCompletionIsNoop},
		{"cancel_child_directly_signals_parent", cancelChildDirectlySignalsParent},
		{"cancel_continue_as_new_second_exec", cancelContinueAsNewSecondExec},
		{"orchestration_completes_before_activity_finishes", orchestrationCompletesBeforeActivityFinishes},
		{"orchestration_fails_before_activity_finishes", orchestrationFailsBeforeActivityFinishes},
		{"cancel_parent_with_multiple_children", cancelParentWithMultipleChildren},
		{"activity_receives_cancellation_signal", activityReceivesCancellationSignal},
		{"select2_loser_activity_receives_cancellation_signal", select2LoserActivityReceivesCancellationSignal},
		{"activity_result_dropped_when_orchestration_cancelled", activityResultDroppedWhenOrchestrationCancelled},
		{"activity_skipped_when_orchestration_terminal_at_fetch", activitySkippedWhenOrchestrationTerminalAtFetch},
		{"activity_aborted_after_cancellation_grace", activityAbortedAfterCancellationGrace},
		{"cancel_nonexistent_instance_is_noop", cancelNonexistentInstanceIsNoop},
		{"multiple_cancel_calls_are_idempotent", multipleCancelCallsAreIdempotent},
		{"cancel_before_orchestration_starts", cancelBeforeOrchestrationStarts},
		{"explicit_drop_activity_triggers_cancellation", explicitDropActivityTriggersCancellation},
		{"activity_out_of_scope_triggers_cancellation", activityOutOfScopeTriggersCancellation},
		{"select2_loser_sub_orchestration_cancelled", select2LoserSubOrchestrationCancelled},
		{"select2_loser_sub_orchestration_explicit_id_cancelled", select2LoserSubOrchestrationExplicitIDCancelled},
		{"explicit_drop_sub_orchestration_cancelled", explicitDropSubOrchestrationCancelled},
		{"user_cancel_instance_and_dropped_future_both_enqueue_cancelinstance_for_child", userCancelAndDroppedFutureBothEnqueue},
		{"sub_orchestration_out_of_scope_cancelled", subOrchestrationOutOfScopeCancelled},
		{"positional_arrival_before_sub_outstanding", positionalArrivalBeforeSubOutstanding},
		{"cancelled_subscription_does_not_steal_future_event", cancelledSubscriptionDoesNotStealFutureEvent},
		{"positional_matching_fifo_without_cancellation", positionalMatchingFIFOWithoutCancellation},
		{"duplicate_external_events_not_deduplicated", duplicateExternalEventsNotDeduplicated},
	}
}

// waitGo is a child that parks on an event that never comes.
func waitGo(ctx *durable.OrchestrationContext, _ string) (string, error) {
	_, _ = durable.WaitEvent[string](ctx, "Go").Await()
	return "done", nil
}

// neverComes is a child that parks on "NeverComes".
func neverComes(ctx *durable.OrchestrationContext, _ string) (string, error) {
	_, _ = durable.WaitEvent[string](ctx, "NeverComes").Await()
	return "child_completed", nil
}

// waitChildrenCancelled waits until at least n instances under prefix
// exist and every one records a cancel request and fails with reason
// "parent canceled"; it returns them. A child exists once its start's
// turn commits, which may be after the parent's cancel turn: listing
// once, at the parent's failure, could miss it.
func (e *env) waitChildrenCancelled(prefix string, n int) []string {
	e.t.Helper()
	var children []string
	e.waitFor(fmt.Sprintf("%d instances under %s", n, prefix), func() bool {
		children = e.instancesWithPrefix(prefix)
		return len(children) >= n
	})
	for _, c := range children {
		e.waitHist(c, "child cancelled", func(h []duroxide.Event) bool {
			return hasKind[duroxide.OrchestrationCancelRequested](h, nil) && failedCancelled(h, "parent canceled")
		})
	}
	return children
}

func cancelParentDownPropagatesToChild(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Child", waitGo)
	orch(e.t, r, "Parent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_, _ = durable.CallSubOrchestration[string](ctx, "Child", "seed").Await()
		return "parent_done", nil
	})
	e.start(r, fastOptions(nil))
	e.startOrch("inst-cancel-1", "Parent", "")
	// The child must exist before the cancel for the cascade to reach it.
	e.waitHist("inst-cancel-1", "child scheduled", func(h []duroxide.Event) bool {
		return hasKind[duroxide.SubOrchestrationScheduled](h, nil)
	})
	e.cancel("inst-cancel-1", "by_test")
	h := e.waitHist("inst-cancel-1", "parent cancelled", func(h []duroxide.Event) bool { return failedCancelled(h, "by_test") })
	require.True(e.t, hasKind[duroxide.OrchestrationCancelRequested](h, nil), "missing cancel requested event for parent")
	require.NotEmpty(e.t, e.waitChildrenCancelled("inst-cancel-1::", 1), "expected a child instance")
}

func cancelAfterCompletionIsNoop(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Quick", func(*durable.OrchestrationContext, string) (string, error) { return "ok", nil })
	e.start(r, nil)
	e.startOrch("inst-cancel-noop", "Quick", "")
	require.Equal(e.t, "ok", e.completed("inst-cancel-noop"))
	_ = e.client().CancelInstance(e.ctx, "inst-cancel-noop", "late")
	time.Sleep(50 * time.Millisecond) // Rust's settle time: a no-op leaves no trace to wait for
	h := e.history("inst-cancel-noop")
	require.True(e.t, hasKind(h, func(k duroxide.OrchestrationCompleted) bool { return k.Output == "ok" }))
	require.False(e.t, hasKind[duroxide.OrchestrationCancelRequested](h, nil))
}

func cancelChildDirectlySignalsParent(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "ChildD", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_, _ = durable.WaitEvent[string](ctx, "__pending_forever").Await() // Rust: future::pending()
		return "", errors.New("unreachable")
	})
	orch(e.t, r, "ParentD", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v, err := durable.CallSubOrchestration[string](ctx, "ChildD", "x").Await()
		if err != nil {
			return "child_err:" + err.Error(), nil
		}
		return "ok:" + v, nil
	})
	e.start(r, nil)
	e.startOrch("inst-chdirect", "ParentD", "")
	child := "inst-chdirect::sub::2"
	e.waitFor("child started", func() bool {
		h, err := e.p.Read(e.ctx, child)
		return err == nil && len(h) > 0
	})
	_ = e.client().CancelInstance(e.ctx, child, "by_test_child")
	s := e.completed("inst-chdirect")
	require.True(e.t, strings.HasPrefix(s, "child_err:canceled: by_test_child"), "unexpected parent out: %s", s)
	ph := e.history("inst-chdirect")
	found := false
	for _, ev := range ph {
		if k, ok := ev.Kind.(duroxide.SubOrchestrationFailed); ok && ev.SourceEventID != nil && *ev.SourceEventID == 2 && isCancelled(k.Details, "by_test_child") {
			found = true
		}
	}
	require.True(e.t, found, "history: %s", kinds(ph))
}

func cancelContinueAsNewSecondExec(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "CanCancel", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		switch in {
		case "start":
			return "", durable.ContinueAsNew(ctx, "wait")
		case "wait":
			_, _ = durable.WaitEvent[string](ctx, "Go").Await()
			return "done", nil
		}
		return in, nil
	})
	e.start(r, nil)
	e.startOrch("inst-can-can", "CanCancel", "start")
	e.waitFor("second execution waiting", func() bool {
		h, err := e.p.Read(e.ctx, "inst-can-can")
		return err == nil && len(h) > 0 && h[0].ExecutionID == 2 && hasKind[duroxide.ExternalSubscribed](h, nil)
	})
	_ = e.client().CancelInstance(e.ctx, "inst-can-can", "by_test_can")
	require.True(e.t, isCancelled(e.failedDetails("inst-can-can"), "by_test_can"))
	h := e.waitHist("inst-can-can", "cancel failure", func(h []duroxide.Event) bool { return failedCancelled(h, "by_test_can") })
	require.True(e.t, hasKind[duroxide.OrchestrationCancelRequested](h, nil))
}

func orchestrationCompletesBeforeActivityFinishes(e *env) {
	r := durable.NewRegistry()
	var finished atomic.Bool
	act(e.t, r, "slow", func(ctx durable.ActivityContext, _ string) (string, error) {
		time.Sleep(200 * time.Millisecond)
		finished.Store(true)
		return "ok", nil
	})
	orch(e.t, r, "QuickDone", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		durable.CallActivity[string](ctx, "slow", "").Cancel()
		return "done", nil
	})
	e.start(r, nil)
	e.startOrch("inst-orch-done-first", "QuickDone", "")
	require.Equal(e.t, "done", e.completed("inst-orch-done-first"))
	time.Sleep(300 * time.Millisecond) // Rust's settle time for a possibly-running activity
	h := e.history("inst-orch-done-first")
	require.True(e.t, hasKind(h, func(k duroxide.OrchestrationCompleted) bool { return k.Output == "done" }))
}

func orchestrationFailsBeforeActivityFinishes(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "slow2", func(ctx durable.ActivityContext, _ string) (string, error) {
		time.Sleep(200 * time.Millisecond)
		return "ok", nil
	})
	orch(e.t, r, "QuickFail", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		durable.CallActivity[string](ctx, "slow2", "").Cancel()
		return "", errors.New("boom")
	})
	e.start(r, nil)
	e.startOrch("inst-orch-fail-first", "QuickFail", "")
	e.failed("inst-orch-fail-first")
	time.Sleep(300 * time.Millisecond)
	h := e.history("inst-orch-fail-first")
	require.True(e.t, hasKind(h, func(k duroxide.OrchestrationFailed) bool {
		a, ok := appDetails(k.Details)
		return ok && a.Kind.Type == duroxide.AppOrchestrationFailed && a.Message == "boom"
	}))
}

func cancelParentWithMultipleChildren(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "MultiChild", waitGo)
	orch(e.t, r, "MultiParent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		var fs []*durable.Future[string]
		for i := 0; i < 5; i++ {
			fs = append(fs, durable.CallSubOrchestration[string](ctx, "MultiChild", fmt.Sprintf("input-%d", i)))
		}
		for _, res := range durable.Join(ctx, fs...) {
			if res.Err == nil || !strings.Contains(res.Err.Error(), "canceled") {
				return "", errors.New("expected cancellation")
			}
		}
		return "parent_done", nil
	})
	e.start(r, fastOptions(nil))
	e.startOrch("inst-cancel-multi", "MultiParent", "")
	e.waitHist("inst-cancel-multi", "children scheduled", func(h []duroxide.Event) bool {
		return countKind[duroxide.SubOrchestrationScheduled](h) == 5
	})
	e.cancel("inst-cancel-multi", "multi_test")
	h := e.waitHist("inst-cancel-multi", "parent cancelled", func(h []duroxide.Event) bool { return failedCancelled(h, "multi_test") })
	require.True(e.t, hasKind[duroxide.OrchestrationCancelRequested](h, nil), "missing cancel requested event for parent")
	e.waitFor("5 children", func() bool { return len(e.instancesWithPrefix("inst-cancel-multi::")) == 5 })
	require.Len(e.t, e.waitChildrenCancelled("inst-cancel-multi::", 5), 5)
}
