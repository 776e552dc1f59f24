package durable

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// The rewind's cut and plan (dispatch_rewind_plan.go) on hand-written histories.

func rwFailed(id uint64) duroxide.Event {
	return xEv(id, nil, duroxide.OrchestrationFailed{Details: evAppDetails(duroxide.AppOrchestrationFailed, "boom")})
}

func TestRewindCut(t *testing.T) {
	parallel := []duroxide.Event{ // A and B in parallel: B fails, A completes after it
		evStarted(1), evActivityScheduled(2, "A", "a"), evActivityScheduled(3, "B", "b"),
		evActivityFailed(4, 3, "b broke"), evActivityCompleted(5, 2, "ra"), rwFailed(6),
	}
	handled := []duroxide.Event{ // A fails, handled by retrying it; the retry's C fails
		evStarted(1), evActivityScheduled(2, "A", ""), evActivityFailed(3, 2, "x"), evActivityScheduled(4, "A", ""),
		evActivityCompleted(5, 4, "ok"), evActivityScheduled(6, "C", ""), evActivityFailed(7, 6, "c"), rwFailed(8),
	}
	codeFailed := []duroxide.Event{ // the code returned an error while waiting for an event
		evStarted(1), evActivityScheduled(2, "A", ""), evActivityCompleted(3, 2, "ok"), evExternalSubscribed(4, "go"),
		xEv(5, ptr(uint64(4)), duroxide.ExternalSubscribedCancelled{Reason: "orchestration_terminal"}), rwFailed(6),
	}
	cancelled := []duroxide.Event{
		evStarted(1), evExternalSubscribed(2, "go"), xEv(3, nil, duroxide.OrchestrationCancelRequested{Reason: "stop"}),
		xEv(4, ptr(uint64(2)), duroxide.ExternalSubscribedCancelled{Reason: "orchestration_terminal"}), rwFailed(5),
	}
	for _, tc := range []struct {
		name       string
		history    []duroxide.Event
		atTerminal bool
		want       int
	}{
		{"a failure with only results after it", parallel, false, 3},
		{"a handled failure is kept", handled, false, 6},
		{"no failed work: the terminal, less its breadcrumbs", codeFailed, false, 4},
		{"a cancellation is undone", cancelled, false, 2},
		{"at the terminal (re-drive)", handled, true, 7},
		{"not failed", parallel[:5], false, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, rewindCut(tc.history, tc.atTerminal))
		})
	}
}

func TestPlanRewindKeepsResultsAndReissuesOpenWork(t *testing.T) {
	history := []duroxide.Event{
		evStarted(1), evActivityScheduled(2, "A", "a"), evActivityScheduled(3, "B", "b"), evTimerCreated(4, 99),
		evActivityScheduled(5, "Lost", ""), xEv(6, ptr(uint64(5)), duroxide.ActivityCancelRequested{Reason: "dropped"}),
		evActivityFailed(7, 3, "b broke"), evActivityCompleted(8, 2, "ra"), rwFailed(9),
	}
	cut := rewindCut(history, false)
	require.Equal(t, 6, cut)
	plan := planRewind(history, "inst", 2, cut, nil)
	require.Len(t, plan.prefix, 6)
	for _, e := range plan.prefix {
		require.Equal(t, uint64(2), e.ExecutionID)
	}
	require.Equal(t, uint64(1), history[0].ExecutionID, "the failed execution is not changed")
	require.Equal(t, []duroxide.WorkItem{duroxide.ActivityCompletedItem{Instance: "inst", ExecutionID: 2, ID: 2, Result: "ra"}}, plan.kept)
	require.Equal(t, []duroxide.WorkItem{duroxide.ActivityExecuteItem{Instance: "inst", ExecutionID: 2, ID: 3, Name: "B", Input: "b"}}, plan.reruns,
		"the failed activity runs again; the cancelled one does not")
	require.Equal(t, []duroxide.WorkItem{duroxide.TimerFiredItem{Instance: "inst", ExecutionID: 2, ID: 4, FireAtMs: 99}}, plan.orch)
}

func TestPoisonedMessagesAreReaddressed(t *testing.T) {
	msgs := "[" + string(mustMarshal(t, duroxide.ActivityCompletedItem{Instance: "i", ExecutionID: 3, ID: 2, Result: "r"})) + "," +
		string(mustMarshal(t, duroxide.StartOrchestrationItem{Instance: "i", Orchestration: "O", ExecutionID: 1})) + "," +
		string(mustMarshal(t, duroxide.ExternalRaisedItem{Instance: "i", Name: "e", Data: "d"})) + "]"
	got, err := poisonedMessages(duroxide.PoisonError{Message: msgs}, 3, 4)
	require.NoError(t, err)
	require.Equal(t, []duroxide.WorkItem{
		duroxide.ActivityCompletedItem{Instance: "i", ExecutionID: 4, ID: 2, Result: "r"},
		duroxide.StartOrchestrationItem{Instance: "i", Orchestration: "O", ExecutionID: 1},
		duroxide.ExternalRaisedItem{Instance: "i", Name: "e", Data: "d"},
	}, got)
	require.Equal(t, duroxide.ContinueAsNewItem{Instance: "i", Orchestration: "O", CarryForwardEvents: []duroxide.CarryForwardEvent{}}, startAgain(got),
		"a start poisoned before the first turn starts the next execution")
	require.Len(t, withoutStarts(got), 2)
}

func mustMarshal(t *testing.T, w duroxide.WorkItem) []byte {
	t.Helper()
	raw, err := duroxide.MarshalWorkItem(w)
	require.NoError(t, err)
	return raw
}
