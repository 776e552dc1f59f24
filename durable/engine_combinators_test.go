package durable

import (
	"fmt"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/stretchr/testify/require"
)

func etRace(ctx *OrchestrationContext, _ string) (string, error) {
	act := CallActivity[string](ctx, "Slow", "x")
	timer := NewTimer(ctx, time.Second)
	if ctx.Select(act, timer) == 1 {
		return "timeout", nil
	}
	return act.Await()
}

func TestEngineSelectTimerWinsCancelsActivity(t *testing.T) {
	fire := uint64(etClock.UnixMilli()) + 1000
	hist := []duroxide.Event{etStarted("in"),
		etEv(2, nil, duroxide.ActivityScheduled{Name: "Slow", Input: "x"}),
		etEv(3, nil, duroxide.TimerCreated{FireAtMs: fire})}
	e := etEngine(hist...)
	e.prepCompletions([]duroxide.WorkItem{duroxide.TimerFiredItem{Instance: etInstance, ExecutionID: 1, ID: 3, FireAtMs: fire}})
	require.Equal(t, TurnResult{Kind: TurnCompleted, Output: "timeout"}, etRun(e, etRace))
	etRequireDelta(t, e,
		etEv(4, etSrc(3), duroxide.TimerFired{FireAtMs: fire}),
		etEv(5, etSrc(2), duroxide.ActivityCancelRequested{Reason: "dropped_future"}))
	require.Equal(t, []uint64{2}, e.cancelledActivityIDs())

	// Replaying the persisted breadcrumb is deterministic and emits nothing new.
	e = etEngine(e.finalHistory()...)
	require.Equal(t, TurnResult{Kind: TurnCompleted, Output: "timeout"}, etRun(e, etRace))
	require.Empty(t, e.historyDelta())
	require.Empty(t, e.cancelledActivityIDs())
}

func TestEngineSelectActivityWinsTimerNeedsNoBreadcrumb(t *testing.T) {
	fire := uint64(etClock.UnixMilli()) + 1000
	hist := []duroxide.Event{etStarted("in"),
		etEv(2, nil, duroxide.ActivityScheduled{Name: "Slow", Input: "x"}),
		etEv(3, nil, duroxide.TimerCreated{FireAtMs: fire})}
	e := etEngine(hist...)
	e.prepCompletions([]duroxide.WorkItem{duroxide.ActivityCompletedItem{Instance: etInstance, ExecutionID: 1, ID: 2, Result: "r"}})
	require.Equal(t, TurnResult{Kind: TurnCompleted, Output: "r"}, etRun(e, etRace))
	etRequireDelta(t, e, etEv(4, etSrc(2), duroxide.ActivityCompleted{Result: "r"}))
}

func TestEngineSelectWinnerIsEarliestInHistory(t *testing.T) {
	// Both complete in the same batch; the one recorded first wins even
	// though it is the second argument.
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		a, b := CallActivity[string](ctx, "A", ""), CallActivity[string](ctx, "B", "")
		return fmt.Sprint(ctx.Select(a, b)), nil
	}
	hist := []duroxide.Event{etStarted("in"),
		etEv(2, nil, duroxide.ActivityScheduled{Name: "A"}), etEv(3, nil, duroxide.ActivityScheduled{Name: "B"})}
	e := etEngine(hist...)
	e.prepCompletions([]duroxide.WorkItem{
		duroxide.ActivityCompletedItem{Instance: etInstance, ExecutionID: 1, ID: 3, Result: "b"},
		duroxide.ActivityCompletedItem{Instance: etInstance, ExecutionID: 1, ID: 2, Result: "a"},
	})
	require.Equal(t, TurnResult{Kind: TurnCompleted, Output: "1"}, etRun(e, h))
	// The loser had completed in history but was never observed: Rust drops
	// it and records the breadcrumb all the same.
	etRequireDelta(t, e,
		etEv(4, etSrc(3), duroxide.ActivityCompleted{Result: "b"}),
		etEv(5, etSrc(2), duroxide.ActivityCompleted{Result: "a"}),
		etEv(6, etSrc(2), duroxide.ActivityCancelRequested{Reason: "dropped_future"}))
}

func TestEngineJoinKeepsArgumentOrder(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		rs := Join(ctx, CallActivity[string](ctx, "A", "1"), CallActivity[string](ctx, "B", "2"), CallActivity[string](ctx, "C", "3"))
		return fmt.Sprintf("%s,%s,%v", rs[0].Value, rs[1].Value, rs[2].Err), nil
	}
	e := etEngine(etStarted("in"))
	require.Equal(t, TurnContinue, etRun(e, h).Kind)
	require.Equal(t, []uint64{2, 3, 4}, []uint64{e.historyDelta()[0].EventID, e.historyDelta()[1].EventID, e.historyDelta()[2].EventID})

	e = etEngine(e.finalHistory()...)
	e.prepCompletions([]duroxide.WorkItem{
		duroxide.ActivityFailedItem{Instance: etInstance, ExecutionID: 1, ID: 4, Details: etAppErr("c failed")},
		duroxide.ActivityCompletedItem{Instance: etInstance, ExecutionID: 1, ID: 3, Result: "b"},
		duroxide.ActivityCompletedItem{Instance: etInstance, ExecutionID: 1, ID: 2, Result: "a"},
	})
	require.Equal(t, TurnResult{Kind: TurnCompleted, Output: "a,b,c failed"}, etRun(e, h))
	require.Len(t, e.historyDelta(), 3)
}

func TestEngineUnawaitedFutureDroppedAtReturn(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		CallActivity[string](ctx, "Forgotten", "")
		CallSubOrchestration[string](ctx, "Child", "ci")
		WaitEvent[string](ctx, "Evt")
		return "done", nil
	}
	e := etEngine(etStarted("in"))
	require.Equal(t, TurnResult{Kind: TurnCompleted, Output: "done"}, etRun(e, h))
	etRequireDelta(t, e,
		etEv(2, nil, duroxide.ActivityScheduled{Name: "Forgotten"}),
		etEv(3, nil, duroxide.SubOrchestrationScheduled{Name: "Child", Instance: "sub::3", Input: "ci"}),
		etEv(4, nil, duroxide.ExternalSubscribed{Name: "Evt"}),
		etEv(5, etSrc(2), duroxide.ActivityCancelRequested{Reason: "dropped_future"}),
		etEv(6, etSrc(3), duroxide.SubOrchestrationCancelRequested{Reason: "dropped_future"}),
		etEv(7, etSrc(4), duroxide.ExternalSubscribedCancelled{Reason: "dropped_future"}))
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
	e := etEngine(etStarted("in"))
	require.Equal(t, TurnContinue, etRun(e, h).Kind)
	etRequireDelta(t, e,
		etEv(2, nil, duroxide.ActivityScheduled{Name: "A"}),
		etEv(3, nil, duroxide.TimerCreated{FireAtMs: uint64(etClock.UnixMilli()) + 1000}),
		etEv(4, etSrc(2), duroxide.ActivityCancelRequested{Reason: "dropped_future"}))

	cancel = false
	e = etEngine(e.finalHistory()...)
	res := etRun(e, h)
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
	e := etEngine(etStarted("in"))
	require.Equal(t, TurnContinue, etRun(e, h).Kind)
	etRequireDelta(t, e,
		etEv(2, nil, duroxide.ActivityScheduled{Name: "A1"}),
		etEv(3, nil, duroxide.ActivityScheduled{Name: "B1"}))

	e = etEngine(e.finalHistory()...)
	e.prepCompletions([]duroxide.WorkItem{duroxide.ActivityCompletedItem{Instance: etInstance, ExecutionID: 1, ID: 2, Result: "x"}})
	require.Equal(t, TurnContinue, etRun(e, h).Kind)
	etRequireDelta(t, e,
		etEv(4, etSrc(2), duroxide.ActivityCompleted{Result: "x"}),
		etEv(5, nil, duroxide.ActivityScheduled{Name: "A2", Input: "x"}))

	// B1 finishes first: block a is stopped and its pending A2 dropped.
	e = etEngine(e.finalHistory()...)
	e.prepCompletions([]duroxide.WorkItem{duroxide.ActivityCompletedItem{Instance: etInstance, ExecutionID: 1, ID: 3, Result: "b"}})
	require.Equal(t, TurnResult{Kind: TurnCompleted, Output: "b"}, etRun(e, h))
	etRequireDelta(t, e,
		etEv(6, etSrc(3), duroxide.ActivityCompleted{Result: "b"}),
		etEv(7, etSrc(5), duroxide.ActivityCancelRequested{Reason: "dropped_future"}))
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
	fire := uint64(etClock.UnixMilli()) + 1000
	hist := []duroxide.Event{etStarted("in"),
		etEv(2, nil, duroxide.ActivityScheduled{Name: "Slow", Input: "x"}),
		etEv(3, nil, duroxide.TimerCreated{FireAtMs: fire})}
	e, res := etStep(t, hist, h, duroxide.TimerFiredItem{Instance: etInstance, ExecutionID: 1, ID: 3, FireAtMs: fire})
	require.Equal(t, TurnContinue, res.Kind)
	// New schedules get their ids first; breadcrumbs are collected at the
	// end of the turn.
	etRequireDelta(t, e,
		etEv(4, etSrc(3), duroxide.TimerFired{FireAtMs: fire}),
		etEv(5, nil, duroxide.ActivityScheduled{Name: "Next"}),
		etEv(6, etSrc(2), duroxide.ActivityCancelRequested{Reason: "dropped_future"}))
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
	res := etRun(etEngine(etStarted("in")), h)
	require.Equal(t, TurnCompleted, res.Kind)
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
	e := etEngine(etStarted("in"))
	require.Equal(t, TurnResult{Kind: TurnCompleted, Output: "true"}, etRun(e, h))
	etRequireDelta(t, e,
		etEv(2, nil, duroxide.ActivityScheduled{Name: "Held"}),
		etEv(3, etSrc(2), duroxide.ActivityCancelRequested{Reason: "dropped_future"}))
}
