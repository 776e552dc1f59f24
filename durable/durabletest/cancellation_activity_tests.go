package durabletest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// lockOpts are Rust's short worker lock and grace settings.
func lockOpts(grace time.Duration, mod func(o *durable.Options)) *durable.Options {
	return fastOptions(func(o *durable.Options) {
		o.WorkerLockTimeout = 2 * time.Second
		o.WorkerLockRenewalBuffer = 500 * time.Millisecond
		o.ActivityCancellationGracePeriod = grace
		if mod != nil {
			mod(o)
		}
	})
}

func activityReceivesCancellationSignal(e *env) {
	var started, saw atomic.Bool
	r := durable.NewRegistry()
	act(e.t, r, "LongActivity", blockUntilCancelled(&started, &saw))
	orch(e.t, r, "LongActivityOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_, _ = durable.CallActivity[string](ctx, "LongActivity", "input").Await()
		return "done", nil
	})
	e.start(r, lockOpts(5*time.Second, nil))
	e.startOrch("inst-activity-cancel", "LongActivityOrch", "")
	e.waitFlag("activity started", &started)
	_ = e.client().CancelInstance(e.ctx, "inst-activity-cancel", "test_cancellation")
	e.waitFlag("activity saw cancellation", &saw)
	e.waitHist("inst-activity-cancel", "cancelled", func(h []duroxide.Event) bool { return failedCancelled(h, "") })
}

func singleSlots(o *durable.Options) {
	o.OrchestrationConcurrency = 1
	o.WorkerConcurrency = 1
}

func select2LoserActivityReceivesCancellationSignal(e *env) {
	var started, saw atomic.Bool
	r := durable.NewRegistry()
	act(e.t, r, "LongActivity", blockUntilCancelled(&started, &saw))
	orch(e.t, r, "SelectLoserCancelOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		a := durable.CallActivity[string](ctx, "LongActivity", "input")
		timeout := durable.NewTimer(ctx, time.Second)
		if ctx.Select(a, timeout) == 0 {
			panic("activity should not win")
		}
		_, _ = durable.NewTimer(ctx, 50*time.Millisecond).Await()
		return "done", nil
	})
	e.start(r, lockOpts(2*time.Second, singleSlots))
	e.startOrch("inst-select2-loser-cancel", "SelectLoserCancelOrch", "")
	e.waitFlag("activity started", &started)
	e.waitFlag("select2 loser cancelled", &saw)
	h := e.waitHist("inst-select2-loser-cancel", "completed", func(h []duroxide.Event) bool {
		return hasKind[duroxide.OrchestrationCompleted](h, nil)
	})
	ev, _, ok := findKind[duroxide.ActivityScheduled](h)
	require.True(e.t, ok, "Expected LongActivity to be scheduled")
	require.True(e.t, hasCancelRequested[duroxide.ActivityCancelRequested](h, ev.EventID, func(k duroxide.ActivityCancelRequested) string { return k.Reason }),
		"Expected ActivityCancelRequested(source_event_id=%d, reason=dropped_future): %s", ev.EventID, kinds(h))
}

// hasCancelRequested reports whether h holds a K correlated to source
// with reason dropped_future.
func hasCancelRequested[K duroxide.EventKind](h []duroxide.Event, source uint64, reason func(K) string) bool {
	for _, ev := range h {
		if k, ok := ev.Kind.(K); ok && reason(k) == "dropped_future" && ev.SourceEventID != nil && *ev.SourceEventID == source {
			return true
		}
	}
	return false
}

func activityResultDroppedWhenOrchestrationCancelled(e *env) {
	var completed atomic.Uint32
	var started atomic.Bool
	r := durable.NewRegistry()
	act(e.t, r, "SlowActivity", func(ctx durable.ActivityContext, _ string) (string, error) {
		started.Store(true)
		time.Sleep(500 * time.Millisecond)
		completed.Add(1)
		return "completed", nil
	})
	orch(e.t, r, "SlowActivityOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_, _ = durable.CallActivity[string](ctx, "SlowActivity", "input").Await()
		return "done", nil
	})
	e.start(r, lockOpts(0, nil))
	e.startOrch("inst-drop-result", "SlowActivityOrch", "")
	e.waitFlag("activity started", &started)
	_ = e.client().CancelInstance(e.ctx, "inst-drop-result", "cancel_during_activity")
	// Rust asserts only that the activity ran to completion (the drop
	// itself is timing-dependent there and not asserted).
	e.waitFor("activity completed", func() bool { return completed.Load() > 0 })
	e.waitHist("inst-drop-result", "cancelled", func(h []duroxide.Event) bool { return failedCancelled(h, "cancel_during_activity") })
}

func activitySkippedWhenOrchestrationTerminalAtFetch(e *env) {
	var ran, ran2 atomic.Bool
	orchFn := func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_ = durable.CallActivity[string](ctx, "A", "input")
		_, _ = durable.WaitEvent[string](ctx, "Go").Await()
		return "ok", nil
	}
	r1 := durable.NewRegistry()
	act(e.t, r1, "A", func(durable.ActivityContext, string) (string, error) { ran.Store(true); return "done", nil })
	orch(e.t, r1, "O", orchFn)
	rt1, err := durable.Start(e.ctx, e.p, r1, testOptions(fastOptions(func(o *durable.Options) { o.WorkerConcurrency = durable.NoSlots })))
	require.NoError(e.t, err)
	e.startOrch("inst-skip", "O", "")
	e.waitSubscription("inst-skip", "Go")
	e.cancel("inst-skip", "cancel")
	e.waitHist("inst-skip", "cancelled", func(h []duroxide.Event) bool { return hasKind[duroxide.OrchestrationFailed](h, nil) })
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	require.NoError(e.t, rt1.Shutdown(sctx))
	require.False(e.t, ran.Load(), "Activity should not have run yet - no workers in phase 1")

	r2 := durable.NewRegistry()
	act(e.t, r2, "A", func(durable.ActivityContext, string) (string, error) { ran2.Store(true); return "done", nil })
	orch(e.t, r2, "O", orchFn)
	e.start(r2, lockOpts(time.Second, func(o *durable.Options) { o.WorkerConcurrency = 2 }))
	// The skipped activity leaves the worker queue; wait for that instead
	// of Rust's fixed 2 s.
	if a := e.p.Admin(); a != nil {
		e.waitFor("worker queue drained", func() bool {
			d, err := a.QueueDepths(e.ctx)
			return err == nil && d.WorkerQueue == 0
		})
	} else {
		time.Sleep(2 * time.Second)
	}
	require.False(e.t, ran2.Load(), "Activity should have been skipped when orchestration was terminal at fetch")
	require.False(e.t, hasKind[duroxide.ActivityCompleted](e.history("inst-skip"), nil))
}

func activityAbortedAfterCancellationGrace(e *env) {
	var attempts atomic.Uint32
	var returned atomic.Bool
	r := durable.NewRegistry()
	act(e.t, r, "Stubborn", func(ctx durable.ActivityContext, _ string) (string, error) {
		attempts.Add(1)
		time.Sleep(5 * time.Second) // ignores cancellation
		returned.Store(true)
		return "done", nil
	})
	orch(e.t, r, "StubbornOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_, _ = durable.CallActivity[string](ctx, "Stubborn", "input").Await()
		return "ok", nil
	})
	e.start(r, lockOpts(500*time.Millisecond, nil))
	e.startOrch("inst-grace", "StubbornOrch", "")
	e.waitFor("activity started", func() bool { return attempts.Load() == 1 })
	e.cancel("inst-grace", "cancel_now")
	e.waitHist("inst-grace", "cancelled", func(h []duroxide.Event) bool { return failedCancelled(h, "cancel_now") })
	// Rust waits 2 s; the grace period (500ms) must have passed for the abort.
	time.Sleep(2 * time.Second)
	require.EqualValues(e.t, 1, attempts.Load(), "Activity should run once")
	require.False(e.t, hasKind[duroxide.ActivityCompleted](e.history("inst-grace"), nil), "Activity completion should be dropped after cancellation")
	// Go cannot abort a goroutine: the abandoned activity keeps running, but
	// its result is discarded (asserted above) and never recorded.
}

func cancelNonexistentInstanceIsNoop(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Dummy", func(*durable.OrchestrationContext, string) (string, error) { return "ok", nil })
	e.start(r, nil)
	// Go diverges from Rust (issue 20): the client reports the missing
	// instance at once and enqueues nothing, rather than returning Ok and
	// leaving a message that waits for a start.
	require.ErrorIs(e.t, e.client().CancelInstance(e.ctx, "does-not-exist", "test"), durable.ErrInstanceNotFound)
	e.waitOrchestratorQueueEmpty()
}

func multipleCancelCallsAreIdempotent(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Waiter", waitGo)
	e.start(r, fastOptions(nil))
	e.startOrch("inst-multi-cancel", "Waiter", "")
	e.waitSubscription("inst-multi-cancel", "Go")
	for i := 0; i < 5; i++ {
		require.NoError(e.t, e.client().CancelInstance(e.ctx, "inst-multi-cancel", fmt.Sprintf("cancel-%d", i)), "Cancel call %d should succeed", i)
	}
	h := e.waitHist("inst-multi-cancel", "failed", func(h []duroxide.Event) bool { return hasKind[duroxide.OrchestrationFailed](h, nil) })
	require.Equal(e.t, 1, countKind[duroxide.OrchestrationCancelRequested](h))
	_, k, _ := findKind[duroxide.OrchestrationCancelRequested](h)
	require.Equal(e.t, "cancel-0", k.Reason, "First cancel reason should win")
}

func cancelBeforeOrchestrationStarts(e *env) {
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.StartOrchestrationItem{
		Instance: "inst-early-cancel", Orchestration: "Early", Version: strp("1.0.0"), Input: "input", ExecutionID: 1,
	}, 0))
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.CancelInstanceItem{Instance: "inst-early-cancel", Reason: "early_cancel"}, 0))
	r := durable.NewRegistry()
	orch(e.t, r, "Early", func(*durable.OrchestrationContext, string) (string, error) { return "done", nil })
	e.start(r, fastOptions(nil))
	h := e.waitHist("inst-early-cancel", "cancelled", func(h []duroxide.Event) bool { return failedCancelled(h, "") })
	require.True(e.t, failedCancelled(h, "early_cancel"), "Orchestration should be cancelled with reason 'early_cancel'")
	require.False(e.t, hasKind[duroxide.OrchestrationCompleted](h, nil))
}

func explicitDropActivityTriggersCancellation(e *env) {
	var started, saw atomic.Bool
	r := durable.NewRegistry()
	act(e.t, r, "CancellableActivity", blockUntilCancelled(&started, &saw))
	orch(e.t, r, "ExplicitDropActivity", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		f := durable.CallActivity[string](ctx, "CancellableActivity", "input")
		_, _ = durable.NewTimer(ctx, 500*time.Millisecond).Await()
		f.Cancel()
		_, _ = durable.NewTimer(ctx, 50*time.Millisecond).Await()
		return "completed_after_drop", nil
	})
	e.start(r, lockOpts(2*time.Second, singleSlots))
	e.startOrch("inst-explicit-drop-activity", "ExplicitDropActivity", "")
	e.waitFlag("activity started", &started)
	e.waitFlag("dropped activity cancelled", &saw)
	require.Equal(e.t, "completed_after_drop", e.completed("inst-explicit-drop-activity"))
}

func activityOutOfScopeTriggersCancellation(e *env) {
	var started, saw atomic.Bool
	r := durable.NewRegistry()
	act(e.t, r, "CancellableActivity", blockUntilCancelled(&started, &saw))
	orch(e.t, r, "OutOfScopeActivity", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		// Rust's block scope is a Go block here: its unawaited future is
		// dropped when the block returns.
		_, _ = durable.Go(ctx, func(ctx *durable.OrchestrationContext) (struct{}, error) {
			_ = durable.CallActivity[string](ctx, "CancellableActivity", "input")
			_, err := durable.NewTimer(ctx, 500*time.Millisecond).Await()
			return struct{}{}, err
		}).Await()
		_, _ = durable.NewTimer(ctx, 50*time.Millisecond).Await()
		return "completed_without_await", nil
	})
	e.start(r, lockOpts(2*time.Second, singleSlots))
	e.startOrch("inst-out-of-scope-activity", "OutOfScopeActivity", "")
	e.waitFlag("activity started", &started)
	e.waitFlag("out-of-scope activity cancelled", &saw)
	require.Equal(e.t, "completed_without_await", e.completed("inst-out-of-scope-activity"))
}
