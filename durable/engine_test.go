package durable

import (
	"errors"
	"testing"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/stretchr/testify/require"
)

func TestEngineFreshTurnSchedulesFirstActivity(t *testing.T) {
	e := newTestEngineOf(evStarted(1)).withPersistedHistoryLen(0)
	res := executeTurn(e, hHello)
	require.Equal(t, turnResult{Kind: turnContinue}, res)
	requireDelta(t, e, evWithID(2, nil, duroxide.ActivityScheduled{Name: "Greet", Input: testOrchInput}))
	require.Equal(t, []action{actionCallActivity{SchedulingEventID: 2, Name: "Greet", Input: testOrchInput}}, e.pendingActions())
}

func TestEngineCompletionAdvancesAndCompletes(t *testing.T) {
	hist := []duroxide.Event{evStarted(1), evWithID(2, nil, duroxide.ActivityScheduled{Name: "Greet", Input: testOrchInput})}
	e := newTestEngineOf(hist...)
	e.prepCompletions([]duroxide.WorkItem{duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: 2, Result: "A"}})
	require.Equal(t, turnResult{Kind: turnContinue}, executeTurn(e, hHello))
	requireDelta(t, e,
		evWithID(3, refU64(2), duroxide.ActivityCompleted{Result: "A"}),
		evWithID(4, nil, duroxide.ActivityScheduled{Name: "Greet", Input: "A"}))

	hist = e.finalHistory()
	e = newTestEngineOf(hist...)
	e.prepCompletions([]duroxide.WorkItem{duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: 4, Result: "B"}})
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "A|B"}, executeTurn(e, hHello))
	requireDelta(t, e, evWithID(5, refU64(4), duroxide.ActivityCompleted{Result: "B"}))
	require.Empty(t, e.pendingActions())
}

func TestEngineActivityFailureFlowsToCode(t *testing.T) {
	hist := []duroxide.Event{evStarted(1), evWithID(2, nil, duroxide.ActivityScheduled{Name: "Greet", Input: testOrchInput})}
	e := newTestEngineOf(hist...)
	e.prepCompletions([]duroxide.WorkItem{duroxide.ActivityFailedItem{Instance: testInstance, ExecutionID: 1, ID: 2, Details: evAppDetails(duroxide.AppActivityFailed, "boom")}})
	var seen error
	res := executeTurn(e, func(ctx *OrchestrationContext, in string) (string, error) {
		_, seen = CallActivity[string](ctx, "Greet", in).Await()
		return "", errors.New("wrapped: " + seen.Error())
	})
	var tf *TaskFailedError
	require.ErrorAs(t, seen, &tf)
	require.Equal(t, "boom", tf.Message)
	require.Equal(t, turnFailed, res.Kind)
	require.Equal(t, duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppOrchestrationFailed}, Message: "wrapped: boom"}, res.Details)
}

func TestEngineScheduleMismatchIsNondeterminism(t *testing.T) {
	hist := []duroxide.Event{evStarted(1), evWithID(2, nil, duroxide.ActivityScheduled{Name: "Other", Input: testOrchInput})}
	e := newTestEngineOf(hist...)
	res := executeTurn(e, hHello)
	require.Equal(t, turnFailed, res.Kind)
	require.Equal(t, nondeterminismError(`schedule mismatch: action=CallActivity { scheduling_event_id: 0, name: "Greet", input: "test-input", session_id: None, tag: None } vs event=ActivityScheduled { name: "Other", input: "test-input", session_id: None, tag: None }`), res.Details)
}

func TestEnginePanicBecomesPanicked(t *testing.T) {
	e := newTestEngineOf(evStarted(1))
	res := executeTurn(e, func(ctx *OrchestrationContext, in string) (string, error) { panic("kaboom") })
	require.Equal(t, turnResult{Kind: turnFailed, Details: duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppPanicked}, Message: "kaboom"}}, res)
	require.Equal(t, "orchestration panicked: kaboom", displayMessage(res.Details))
}
