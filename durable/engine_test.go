package durable

import (
	"errors"
	"testing"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/stretchr/testify/require"
)

func etHello(ctx *OrchestrationContext, in string) (string, error) {
	a, err := CallActivity[string](ctx, "Greet", in).Await()
	if err != nil {
		return "", err
	}
	b, err := CallActivity[string](ctx, "Greet", a).Await()
	if err != nil {
		return "", err
	}
	return a + "|" + b, nil
}

func TestEngineFreshTurnSchedulesFirstActivity(t *testing.T) {
	e := etEngine(etStarted("in")).withPersistedHistoryLen(0)
	res := etRun(e, etHello)
	require.Equal(t, TurnResult{Kind: TurnContinue}, res)
	etRequireDelta(t, e, etEv(2, nil, duroxide.ActivityScheduled{Name: "Greet", Input: "in"}))
	require.Equal(t, []action{actionCallActivity{SchedulingEventID: 2, Name: "Greet", Input: "in"}}, e.pendingActions())
}

func TestEngineCompletionAdvancesAndCompletes(t *testing.T) {
	hist := []duroxide.Event{etStarted("in"), etEv(2, nil, duroxide.ActivityScheduled{Name: "Greet", Input: "in"})}
	e := etEngine(hist...)
	e.prepCompletions([]duroxide.WorkItem{duroxide.ActivityCompletedItem{Instance: etInstance, ExecutionID: 1, ID: 2, Result: "A"}})
	require.Equal(t, TurnResult{Kind: TurnContinue}, etRun(e, etHello))
	etRequireDelta(t, e,
		etEv(3, etSrc(2), duroxide.ActivityCompleted{Result: "A"}),
		etEv(4, nil, duroxide.ActivityScheduled{Name: "Greet", Input: "A"}))

	hist = e.finalHistory()
	e = etEngine(hist...)
	e.prepCompletions([]duroxide.WorkItem{duroxide.ActivityCompletedItem{Instance: etInstance, ExecutionID: 1, ID: 4, Result: "B"}})
	require.Equal(t, TurnResult{Kind: TurnCompleted, Output: "A|B"}, etRun(e, etHello))
	etRequireDelta(t, e, etEv(5, etSrc(4), duroxide.ActivityCompleted{Result: "B"}))
	require.Empty(t, e.pendingActions())
}

func TestEngineActivityFailureFlowsToCode(t *testing.T) {
	hist := []duroxide.Event{etStarted("in"), etEv(2, nil, duroxide.ActivityScheduled{Name: "Greet", Input: "in"})}
	e := etEngine(hist...)
	e.prepCompletions([]duroxide.WorkItem{duroxide.ActivityFailedItem{Instance: etInstance, ExecutionID: 1, ID: 2, Details: etAppErr("boom")}})
	var seen error
	res := etRun(e, func(ctx *OrchestrationContext, in string) (string, error) {
		_, seen = CallActivity[string](ctx, "Greet", in).Await()
		return "", errors.New("wrapped: " + seen.Error())
	})
	var tf *TaskFailedError
	require.ErrorAs(t, seen, &tf)
	require.Equal(t, "boom", tf.Message)
	require.Equal(t, TurnFailed, res.Kind)
	require.Equal(t, duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppOrchestrationFailed}, Message: "wrapped: boom"}, res.Details)
}

func TestEngineScheduleMismatchIsNondeterminism(t *testing.T) {
	hist := []duroxide.Event{etStarted("in"), etEv(2, nil, duroxide.ActivityScheduled{Name: "Other", Input: "in"})}
	e := etEngine(hist...)
	res := etRun(e, etHello)
	require.Equal(t, TurnFailed, res.Kind)
	require.Equal(t, nondeterminismError(`schedule mismatch: action=CallActivity { scheduling_event_id: 0, name: "Greet", input: "in", session_id: None, tag: None } vs event=ActivityScheduled { name: "Other", input: "in", session_id: None, tag: None }`), res.Details)
}

func TestEnginePanicBecomesPanicked(t *testing.T) {
	e := etEngine(etStarted("in"))
	res := etRun(e, func(ctx *OrchestrationContext, in string) (string, error) { panic("kaboom") })
	require.Equal(t, TurnResult{Kind: TurnFailed, Details: duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppPanicked}, Message: "kaboom"}}, res)
	require.Equal(t, "orchestration panicked: kaboom", displayMessage(res.Details))
}
