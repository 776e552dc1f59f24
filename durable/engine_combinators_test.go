package durable

import (
	"fmt"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/stretchr/testify/require"
)

func TestEngineSelectTimerWinsCancelsActivity(t *testing.T) {
	fire := uint64(testClock.UnixMilli()) + 1000
	hist := []duroxide.Event{evStarted(1),
		evWithID(2, nil, duroxide.ActivityScheduled{Name: "Slow", Input: "x"}),
		evWithID(3, nil, duroxide.TimerCreated{FireAtMs: fire})}
	e := newTestEngineOf(hist...)
	e.prepCompletions([]duroxide.WorkItem{duroxide.TimerFiredItem{Instance: testInstance, ExecutionID: 1, ID: 3, FireAtMs: fire}})
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "timeout"}, executeTurn(e, hRace))
	requireDelta(t, e,
		evWithID(4, refU64(3), duroxide.TimerFired{FireAtMs: fire}),
		evWithID(5, refU64(2), duroxide.ActivityCancelRequested{Reason: "dropped_future"}))
	require.Equal(t, []uint64{2}, e.cancelledActivityIDs())

	// Replaying the persisted breadcrumb is deterministic and emits nothing new.
	e = newTestEngineOf(e.finalHistory()...)
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "timeout"}, executeTurn(e, hRace))
	require.Empty(t, e.historyDelta())
	require.Empty(t, e.cancelledActivityIDs())
}

func TestEngineSelectActivityWinsTimerNeedsNoBreadcrumb(t *testing.T) {
	fire := uint64(testClock.UnixMilli()) + 1000
	hist := []duroxide.Event{evStarted(1),
		evWithID(2, nil, duroxide.ActivityScheduled{Name: "Slow", Input: "x"}),
		evWithID(3, nil, duroxide.TimerCreated{FireAtMs: fire})}
	e := newTestEngineOf(hist...)
	e.prepCompletions([]duroxide.WorkItem{duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: 2, Result: "r"}})
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "r"}, executeTurn(e, hRace))
	requireDelta(t, e, evWithID(4, refU64(2), duroxide.ActivityCompleted{Result: "r"}))
}

func TestEngineSelectWinnerIsEarliestInHistory(t *testing.T) {
	// Both complete in the same batch; the one recorded first wins even
	// though it is the second argument.
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		a, b := CallActivity[string](ctx, "A", ""), CallActivity[string](ctx, "B", "")
		return fmt.Sprint(ctx.Select(a, b)), nil
	}
	hist := []duroxide.Event{evStarted(1),
		evWithID(2, nil, duroxide.ActivityScheduled{Name: "A"}), evWithID(3, nil, duroxide.ActivityScheduled{Name: "B"})}
	e := newTestEngineOf(hist...)
	e.prepCompletions([]duroxide.WorkItem{
		duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: 3, Result: "b"},
		duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: 2, Result: "a"},
	})
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "1"}, executeTurn(e, h))
	// The loser had completed in history but was never observed: Rust drops
	// it and records the breadcrumb all the same.
	requireDelta(t, e,
		evWithID(4, refU64(3), duroxide.ActivityCompleted{Result: "b"}),
		evWithID(5, refU64(2), duroxide.ActivityCompleted{Result: "a"}),
		evWithID(6, refU64(2), duroxide.ActivityCancelRequested{Reason: "dropped_future"}))
}

func TestEngineJoinKeepsArgumentOrder(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		rs := Join(ctx, CallActivity[string](ctx, "A", "1"), CallActivity[string](ctx, "B", "2"), CallActivity[string](ctx, "C", "3"))
		return fmt.Sprintf("%s,%s,%v", rs[0].Value, rs[1].Value, rs[2].Err), nil
	}
	e := newTestEngineOf(evStarted(1))
	require.Equal(t, turnContinue, executeTurn(e, h).Kind)
	require.Equal(t, []uint64{2, 3, 4}, []uint64{e.historyDelta()[0].EventID, e.historyDelta()[1].EventID, e.historyDelta()[2].EventID})

	e = newTestEngineOf(e.finalHistory()...)
	e.prepCompletions([]duroxide.WorkItem{
		duroxide.ActivityFailedItem{Instance: testInstance, ExecutionID: 1, ID: 4, Details: evAppDetails(duroxide.AppActivityFailed, "c failed")},
		duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: 3, Result: "b"},
		duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: 2, Result: "a"},
	})
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "a,b,c failed"}, executeTurn(e, h))
	require.Len(t, e.historyDelta(), 3)
}

func TestEngineUnawaitedFutureDroppedAtReturn(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		CallActivity[string](ctx, "Forgotten", "")
		CallSubOrchestration[string](ctx, "Child", "ci")
		WaitEvent[string](ctx, "Evt")
		return "done", nil
	}
	e := newTestEngineOf(evStarted(1))
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "done"}, executeTurn(e, h))
	requireDelta(t, e,
		evWithID(2, nil, duroxide.ActivityScheduled{Name: "Forgotten"}),
		evWithID(3, nil, duroxide.SubOrchestrationScheduled{Name: "Child", Instance: "sub::3", Input: "ci"}),
		evWithID(4, nil, duroxide.ExternalSubscribed{Name: "Evt"}),
		evWithID(5, refU64(2), duroxide.ActivityCancelRequested{Reason: "dropped_future"}),
		evWithID(6, refU64(3), duroxide.SubOrchestrationCancelRequested{Reason: "dropped_future"}),
		evWithID(7, refU64(4), duroxide.ExternalSubscribedCancelled{Reason: "dropped_future"}))
	require.Equal(t, []uint64{2}, e.cancelledActivityIDs())
	require.Equal(t, []string{"sub::3"}, e.cancelledSubOrchestrationIDs())
}

func TestEngineExplicitCancelThenReplayWithoutCancelIsMismatch(t *testing.T) {
	cancel := true
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		f := CallActivity[string](ctx, "A", "")
		if cancel {
			f.Cancel()
		}
		NewTimer(ctx, time.Second).Await()
		return "x", nil
	}
	e := newTestEngineOf(evStarted(1))
	require.Equal(t, turnContinue, executeTurn(e, h).Kind)
	requireDelta(t, e,
		evWithID(2, nil, duroxide.ActivityScheduled{Name: "A"}),
		evWithID(3, nil, duroxide.TimerCreated{FireAtMs: uint64(testClock.UnixMilli()) + 1000}),
		evWithID(4, refU64(2), duroxide.ActivityCancelRequested{Reason: "dropped_future"}))

	cancel = false
	e = newTestEngineOf(e.finalHistory()...)
	res := executeTurn(e, h)
	require.Equal(t, nondeterminismError("cancellation mismatch (activities): baseline_dropped_future_cancel_requests={2} ctx_cancelled_in_replayed_segment={}"), res.Details)
}

func TestEngineGoBlocksRunInCreationOrderAndLoserBlockIsStopped(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		a := Go(ctx, func(ctx *OrchestrationContext) (string, error) {
			x, err := CallActivity[string](ctx, "A1", "").Await()
			if err != nil {
				return "", err
			}
			return CallActivity[string](ctx, "A2", x).Await()
		})
		b := Go(ctx, func(ctx *OrchestrationContext) (string, error) {
			return CallActivity[string](ctx, "B1", "").Await()
		})
		if ctx.Select(a, b) == 0 {
			return a.Await()
		}
		return b.Await()
	}
	e := newTestEngineOf(evStarted(1))
	require.Equal(t, turnContinue, executeTurn(e, h).Kind)
	requireDelta(t, e,
		evWithID(2, nil, duroxide.ActivityScheduled{Name: "A1"}),
		evWithID(3, nil, duroxide.ActivityScheduled{Name: "B1"}))

	e = newTestEngineOf(e.finalHistory()...)
	e.prepCompletions([]duroxide.WorkItem{duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: 2, Result: "x"}})
	require.Equal(t, turnContinue, executeTurn(e, h).Kind)
	requireDelta(t, e,
		evWithID(4, refU64(2), duroxide.ActivityCompleted{Result: "x"}),
		evWithID(5, nil, duroxide.ActivityScheduled{Name: "A2", Input: "x"}))

	// B1 finishes first: block a is stopped and its pending A2 dropped.
	e = newTestEngineOf(e.finalHistory()...)
	e.prepCompletions([]duroxide.WorkItem{duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: 3, Result: "b"}})
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "b"}, executeTurn(e, h))
	requireDelta(t, e,
		evWithID(6, refU64(3), duroxide.ActivityCompleted{Result: "b"}),
		evWithID(7, refU64(5), duroxide.ActivityCancelRequested{Reason: "dropped_future"}))
	require.Equal(t, []uint64{5}, e.cancelledActivityIDs())
}

func TestEngineSelectLoserIsCancelledWhileTheCodeGoesOn(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		act := CallActivity[string](ctx, "Slow", "x")
		if ctx.Select(act, NewTimer(ctx, time.Second)) == 1 {
			return CallActivity[string](ctx, "Next", "").Await()
		}
		return act.Await()
	}
	fire := uint64(testClock.UnixMilli()) + 1000
	hist := []duroxide.Event{evStarted(1),
		evWithID(2, nil, duroxide.ActivityScheduled{Name: "Slow", Input: "x"}),
		evWithID(3, nil, duroxide.TimerCreated{FireAtMs: fire})}
	e, res := executeStep(t, hist, h, duroxide.TimerFiredItem{Instance: testInstance, ExecutionID: 1, ID: 3, FireAtMs: fire})
	require.Equal(t, turnContinue, res.Kind)
	// New schedules get their ids first; breadcrumbs are collected at the
	// end of the turn.
	requireDelta(t, e,
		evWithID(4, refU64(3), duroxide.TimerFired{FireAtMs: fire}),
		evWithID(5, nil, duroxide.ActivityScheduled{Name: "Next"}),
		evWithID(6, refU64(2), duroxide.ActivityCancelRequested{Reason: "dropped_future"}))
	require.Equal(t, []uint64{2}, e.cancelledActivityIDs())
}

func TestEngineAwaitOnDroppedFutureFailsFast(t *testing.T) {
	var errs []error
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		f := CallActivity[string](ctx, "A", "")
		f.Cancel()
		_, err := f.Await()
		errs = append(errs, err)
		// A block waiting on a future that someone else drops wakes up too.
		g := WaitEvent[string](ctx, "E")
		b := Go(ctx, func(ctx *OrchestrationContext) (string, error) { return g.Await() })
		NewTimer(ctx, 0).Cancel() // give the block a chance to start
		bres := Go(ctx, func(ctx *OrchestrationContext) (string, error) {
			g.Cancel()
			return "", nil
		})
		ctx.WaitAll(b, bres)
		_, err = b.Await()
		errs = append(errs, err)
		return "", nil
	}
	res := executeTurn(newTestEngineOf(evStarted(1)), h)
	require.Equal(t, turnCompleted, res.Kind)
	require.Equal(t, []error{ErrFutureDropped, ErrFutureDropped}, errs)
}

func TestEngineGoBlockCancellingItselfEnds(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		var self *Future[string]
		self = Go(ctx, func(ctx *OrchestrationContext) (string, error) {
			CallActivity[string](ctx, "Held", "")
			self.Cancel()
			return "unreachable", nil
		})
		_, err := self.Await()
		return fmt.Sprint(err == ErrFutureDropped), nil
	}
	e := newTestEngineOf(evStarted(1))
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "true"}, executeTurn(e, h))
	requireDelta(t, e,
		evWithID(2, nil, duroxide.ActivityScheduled{Name: "Held"}),
		evWithID(3, refU64(2), duroxide.ActivityCancelRequested{Reason: "dropped_future"}))
}
