package durable

import (
	"testing"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/stretchr/testify/require"
)

func TestEngineExternalEventsArePositionalAndSkipCancelledWaits(t *testing.T) {
	// The first wait for "E" is dropped; the second gets the first arrival.
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		first := WaitEvent[string](ctx, "E")
		first.Cancel()
		return WaitEvent[string](ctx, "E").Await()
	}
	e := newTestEngineOf(evStarted(1))
	require.Equal(t, turnContinue, executeTurn(e, h).Kind)
	requireDelta(t, e,
		evWithID(2, nil, duroxide.ExternalSubscribed{Name: "E"}),
		evWithID(3, nil, duroxide.ExternalSubscribed{Name: "E"}),
		evWithID(4, refU64(2), duroxide.ExternalSubscribedCancelled{Reason: "dropped_future"}))

	e = newTestEngineOf(e.finalHistory()...)
	e.prepCompletions([]duroxide.WorkItem{duroxide.ExternalRaisedItem{Instance: testInstance, Name: "E", Data: "payload"}})
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "payload"}, executeTurn(e, h))
	requireDelta(t, e, evWithID(5, nil, duroxide.ExternalEvent{Name: "E", Data: "payload"}))
}

func TestEngineExternalEventWithoutSubscriptionIsKeptButNotDelivered(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) { return WaitEvent[string](ctx, "E").Await() }
	// The event arrives before the code subscribes: it is recorded, and
	// the subscription made afterwards does not see it.
	e := newTestEngineOf(evStarted(1))
	e.prepCompletions([]duroxide.WorkItem{duroxide.ExternalRaisedItem{Instance: testInstance, Name: "E", Data: "early"}})
	require.Equal(t, turnContinue, executeTurn(e, h).Kind)
	requireDelta(t, e,
		evWithID(2, nil, duroxide.ExternalEvent{Name: "E", Data: "early"}),
		evWithID(3, nil, duroxide.ExternalSubscribed{Name: "E"}))
}

func TestEngineQueueEventsAreFIFOAndResolveInTheSameTurn(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		a, _ := DequeueEvent[string](ctx, "q").Await()
		b, _ := DequeueEvent[string](ctx, "q").Await()
		return a + b, nil
	}
	// Messages that arrived before any subscription are buffered; each new
	// subscription resolves at once through the quiescence re-polls.
	e := newTestEngineOf(evStarted(1))
	e.prepCompletions([]duroxide.WorkItem{
		duroxide.QueueMessageItem{Instance: testInstance, Name: "q", Data: "1"},
		duroxide.QueueMessageItem{Instance: testInstance, Name: "q", Data: "2"},
	})
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "12"}, executeTurn(e, h))
	requireDelta(t, e,
		evWithID(2, nil, duroxide.ExternalEventPersistent{Name: "q", Data: "1"}),
		evWithID(3, nil, duroxide.ExternalEventPersistent{Name: "q", Data: "2"}),
		evWithID(4, nil, duroxide.ExternalSubscribedPersistent{Name: "q"}),
		evWithID(5, nil, duroxide.ExternalSubscribedPersistent{Name: "q"}))

	// Replay of the whole history gives the same answer.
	e = newTestEngineOf(e.finalHistory()...)
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "12"}, executeTurn(e, h))
	require.Empty(t, e.historyDelta())
}

func TestEngineUnboundedDequeueLoopHitsQuiescenceLimit(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		for {
			DequeueEvent[string](ctx, "q").Await()
		}
	}
	msgs := make([]duroxide.WorkItem, 150)
	for i := range msgs {
		msgs[i] = duroxide.QueueMessageItem{Instance: testInstance, Name: "q", Data: "m"}
	}
	e := newTestEngineOf(evStarted(1))
	e.prepCompletions(msgs)
	res := executeTurn(e, h)
	require.Equal(t, turnFailed, res.Kind)
	require.Equal(t, duroxide.InfrastructureError{Operation: "quiescence_loop", Message: quiescenceMessage}, res.Details)
}

func TestEngineSubOrchestrationIDsAndDetachedStarts(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		StartOrchestration(ctx, "Side", "side-1", "s")
		auto := CallSubOrchestration[string](ctx, "Child", "a")
		named := CallSubOrchestration[string](ctx, "Child", "b", SubOrchestrationOptions{InstanceID: "kid", Version: "2.0.0"})
		ctx.WaitAll(auto, named)
		x, err := auto.Await()
		if err != nil {
			return "", err
		}
		_, err = named.Await()
		return x, err
	}
	e := newTestEngineOf(evStarted(1))
	require.Equal(t, turnContinue, executeTurn(e, h).Kind)
	requireDelta(t, e,
		evWithID(2, nil, duroxide.OrchestrationChained{Name: "Side", Instance: "side-1", Input: "s"}),
		evWithID(3, nil, duroxide.SubOrchestrationScheduled{Name: "Child", Instance: "sub::3", Input: "a"}),
		evWithID(4, nil, duroxide.SubOrchestrationScheduled{Name: "Child", Instance: "kid", Input: "b"}))
	require.Equal(t, []action{
		actionStartOrchestrationDetached{SchedulingEventID: 2, Name: "Side", Instance: "side-1", Input: "s"},
		actionStartSubOrchestration{SchedulingEventID: 3, Name: "Child", Instance: "sub::3", Input: "a"},
		actionStartSubOrchestration{SchedulingEventID: 4, Name: "Child", Version: refStr("2.0.0"), Instance: "kid", Input: "b"},
	}, e.pendingActions())

	e = newTestEngineOf(e.finalHistory()...)
	e.prepCompletions([]duroxide.WorkItem{
		duroxide.SubOrchCompletedItem{ParentInstance: testInstance, ParentExecutionID: 1, ParentID: 3, Result: "A"},
		duroxide.SubOrchFailedItem{ParentInstance: testInstance, ParentExecutionID: 1, ParentID: 4,
			Details: duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppOrchestrationFailed}, Message: "kid broke"}},
	})
	res := executeTurn(e, h)
	require.Equal(t, turnFailed, res.Kind)
	require.Equal(t, "kid broke", displayMessage(res.Details))
}

func TestEngineContinueAsNewUsesAnEventIDButWritesNoEvent(t *testing.T) {
	h := func(ctx *OrchestrationContext, in string) (string, error) {
		ctx.SetCustomStatus("s1")
		return "", ContinueAsNew(ctx, in+"+", ContinueAsNewOptions{Version: "2.0.0"})
	}
	e := newTestEngineOf(evStarted(1))
	res := executeTurn(e, h)
	require.Equal(t, turnResult{Kind: turnContinueAsNew, Input: testOrchInput + "+", Version: refStr("2.0.0")}, res)
	requireDelta(t, e, evWithID(2, nil, duroxide.CustomStatusUpdated{Status: refStr("s1")}))
	require.Equal(t, uint64(4), e.nextEventID)
}

func TestEngineCancelOutranksCompletion(t *testing.T) {
	e := newTestEngineOf(evStarted(1))
	e.prepCompletions([]duroxide.WorkItem{
		duroxide.CancelInstanceItem{Instance: testInstance, Reason: "user"},
		duroxide.CancelInstanceItem{Instance: testInstance, Reason: "again"},
	})
	res := executeTurn(e, func(*OrchestrationContext, string) (string, error) { return "ok", nil })
	require.Equal(t, turnResult{Kind: turnCancelled, Reason: "user"}, res)
	requireDelta(t, e, evWithID(2, nil, duroxide.OrchestrationCancelRequested{Reason: "user"}))
}

func TestEnginePrepDropsOtherExecutionsAndDuplicates(t *testing.T) {
	hist := []duroxide.Event{evStarted(1),
		evWithID(2, nil, duroxide.ActivityScheduled{Name: "A"}),
		evWithID(3, refU64(2), duroxide.ActivityCompleted{Result: "r"}),
		evWithID(4, nil, duroxide.ActivityScheduled{Name: "B"})}
	e := newTestEngineOf(hist...)
	e.prepCompletions([]duroxide.WorkItem{
		duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 7, ID: 4, Result: "old"}, // other execution
		duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: 2, Result: "dup"}, // already in history
		duroxide.ActivityFailedItem{Instance: testInstance, ExecutionID: 1, ID: 4, Details: evAppDetails(duroxide.AppActivityFailed, "f")},
		duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: 4, Result: "dup2"}, // already in delta
	})
	requireDelta(t, e, evWithID(5, refU64(4), duroxide.ActivityFailed{Details: evAppDetails(duroxide.AppActivityFailed, "f")}))
	require.Nil(t, e.abortError)
}

func TestEnginePrepNondeterminismAndSystemErrors(t *testing.T) {
	hist := []duroxide.Event{evStarted(1), evWithID(2, nil, duroxide.ActivityScheduled{Name: "A"})}

	e := newTestEngineOf(hist...)
	e.prepCompletions([]duroxide.WorkItem{duroxide.TimerFiredItem{Instance: testInstance, ExecutionID: 1, ID: 2}})
	require.Equal(t, nondeterminismError("completion kind mismatch for id=2, expected 'activity', got 'timer'"), e.abortError)
	require.Empty(t, e.historyDelta())

	e = newTestEngineOf(hist...)
	e.prepCompletions([]duroxide.WorkItem{duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: 9}})
	require.Equal(t, nondeterminismError("no matching schedule for completion id=9"), e.abortError)

	infra := duroxide.InfrastructureError{Operation: "op", Message: "down"}
	e = newTestEngineOf(hist...)
	e.prepCompletions([]duroxide.WorkItem{duroxide.ActivityFailedItem{Instance: testInstance, ExecutionID: 1, ID: 2, Details: infra}})
	requireDelta(t, e, evWithID(3, refU64(2), duroxide.ActivityFailed{Details: infra}))
	require.Equal(t, turnResult{Kind: turnFailed, Details: infra}, executeTurn(e, hHello))
	require.Equal(t, "infrastructure:op: down", displayMessage(infra))
}

func TestEngineCorruptedHistory(t *testing.T) {
	require.Equal(t, nondeterminismError("corrupted history: empty"), executeTurn(newTestEngineOf(), hHello).Details)
	e := newTestEngineOf(evWithID(1, nil, duroxide.ActivityScheduled{Name: "A"}))
	require.Equal(t, nondeterminismError("corrupted history: first event must be OrchestrationStarted"), executeTurn(e, hHello).Details)
}

func TestEngineTerminalHistoryIsContinue(t *testing.T) {
	e := newTestEngineOf(evStarted(1), evWithID(2, nil, duroxide.OrchestrationCompleted{Output: "x"}))
	e.prepCompletions([]duroxide.WorkItem{duroxide.CancelInstanceItem{Instance: testInstance, Reason: "late"}})
	require.Equal(t, turnResult{Kind: turnContinue}, executeTurn(e, hHello))
	require.Empty(t, e.historyDelta())
}

func TestEngineQueueMessageSurvivesCancelledSubscription(t *testing.T) {
	// Rust's persistent_event_survives_select_cancellation_same_batch, at
	// the engine: a dropped dequeue takes no message; the next one gets the
	// first message, and the extra one stays unmatched.
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		wait := DequeueEvent[string](ctx, "Signal")
		if ctx.Select(wait, NewTimer(ctx, 50*time.Millisecond)) == 0 {
			return "unexpected_phase1", nil
		}
		data, _ := DequeueEvent[string](ctx, "Signal").Await()
		return "got:" + data, nil
	}
	fire := uint64(testClock.UnixMilli()) + 50
	e, res := executeStep(t, []duroxide.Event{evStarted(1)}, h)
	require.Equal(t, turnContinue, res.Kind)
	requireDelta(t, e,
		evWithID(2, nil, duroxide.ExternalSubscribedPersistent{Name: "Signal"}),
		evWithID(3, nil, duroxide.TimerCreated{FireAtMs: fire}))

	e, res = executeStep(t, e.finalHistory(), h, duroxide.TimerFiredItem{Instance: testInstance, ExecutionID: 1, ID: 3, FireAtMs: fire})
	require.Equal(t, turnContinue, res.Kind)
	requireDelta(t, e,
		evWithID(4, refU64(3), duroxide.TimerFired{FireAtMs: fire}),
		evWithID(5, nil, duroxide.ExternalSubscribedPersistent{Name: "Signal"}),
		evWithID(6, refU64(2), duroxide.ExternalSubscribedPersistentCancelled{Reason: "dropped_future"}))

	e, res = executeStep(t, e.finalHistory(), h,
		duroxide.QueueMessageItem{Instance: testInstance, Name: "Signal", Data: "survived"},
		duroxide.QueueMessageItem{Instance: testInstance, Name: "Signal", Data: "extra"})
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "got:survived"}, res)
	requireDelta(t, e,
		evWithID(7, nil, duroxide.ExternalEventPersistent{Name: "Signal", Data: "survived"}),
		evWithID(8, nil, duroxide.ExternalEventPersistent{Name: "Signal", Data: "extra"}))
}
