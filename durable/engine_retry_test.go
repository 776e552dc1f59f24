package durable

import (
	"testing"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/stretchr/testify/require"
)

// etStep feeds one batch of messages into a fresh engine over hist.
func etStep(t *testing.T, hist []duroxide.Event, h OrchestrationFunc, msgs ...duroxide.WorkItem) (*replayEngine, TurnResult) {
	t.Helper()
	e := etEngine(hist...)
	e.prepCompletions(msgs)
	return e, etRun(e, h)
}

func TestEngineRetryBacksOffOnDurableTimersThenSucceeds(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		return ctx.ScheduleActivityWithRetry("Flaky", "x", NewRetryPolicy(3))
	}
	now := uint64(etClock.UnixMilli())
	e, res := etStep(t, []duroxide.Event{etStarted("in")}, h)
	require.Equal(t, TurnContinue, res.Kind)
	etRequireDelta(t, e, etEv(2, nil, duroxide.ActivityScheduled{Name: "Flaky", Input: "x"}))

	e, res = etStep(t, e.finalHistory(), h, duroxide.ActivityFailedItem{Instance: etInstance, ExecutionID: 1, ID: 2, Details: etAppErr("e1")})
	require.Equal(t, TurnContinue, res.Kind)
	etRequireDelta(t, e,
		etEv(3, etSrc(2), duroxide.ActivityFailed{Details: etAppErr("e1")}),
		etEv(4, nil, duroxide.TimerCreated{FireAtMs: now + 100})) // default backoff: 100 ms

	e, res = etStep(t, e.finalHistory(), h, duroxide.TimerFiredItem{Instance: etInstance, ExecutionID: 1, ID: 4, FireAtMs: now + 100})
	require.Equal(t, TurnContinue, res.Kind)
	etRequireDelta(t, e,
		etEv(5, etSrc(4), duroxide.TimerFired{FireAtMs: now + 100}),
		etEv(6, nil, duroxide.ActivityScheduled{Name: "Flaky", Input: "x"}))

	e, res = etStep(t, e.finalHistory(), h, duroxide.ActivityCompletedItem{Instance: etInstance, ExecutionID: 1, ID: 6, Result: "ok"})
	require.Equal(t, TurnResult{Kind: TurnCompleted, Output: "ok"}, res)
	etRequireDelta(t, e, etEv(7, etSrc(6), duroxide.ActivityCompleted{Result: "ok"}))
}

func TestEngineRetryGivesUpWithLastError(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		return ctx.ScheduleActivityWithRetry("Bad", "", NewRetryPolicy(2).WithBackoff(NoBackoff()))
	}
	e, _ := etStep(t, []duroxide.Event{etStarted("in")}, h)
	e, res := etStep(t, e.finalHistory(), h, duroxide.ActivityFailedItem{Instance: etInstance, ExecutionID: 1, ID: 2, Details: etAppErr("e1")})
	require.Equal(t, TurnContinue, res.Kind)
	// No backoff: the second attempt follows at once, with no timer.
	etRequireDelta(t, e,
		etEv(3, etSrc(2), duroxide.ActivityFailed{Details: etAppErr("e1")}),
		etEv(4, nil, duroxide.ActivityScheduled{Name: "Bad"}))
	_, res = etStep(t, e.finalHistory(), h, duroxide.ActivityFailedItem{Instance: etInstance, ExecutionID: 1, ID: 4, Details: etAppErr("e2")})
	require.Equal(t, TurnFailed, res.Kind)
	require.Equal(t, "e2", displayMessage(res.Details))
}

func TestEngineRetryTimeoutIsNotRetried(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		return ctx.ScheduleActivityWithRetry("Slow", "", NewRetryPolicy(5).WithTimeout(2*time.Second))
	}
	fire := uint64(etClock.UnixMilli()) + 2000
	e, res := etStep(t, []duroxide.Event{etStarted("in")}, h)
	require.Equal(t, TurnContinue, res.Kind)
	// The activity is scheduled before the per-attempt timer, as in Rust.
	etRequireDelta(t, e,
		etEv(2, nil, duroxide.ActivityScheduled{Name: "Slow"}),
		etEv(3, nil, duroxide.TimerCreated{FireAtMs: fire}))

	e, res = etStep(t, e.finalHistory(), h, duroxide.TimerFiredItem{Instance: etInstance, ExecutionID: 1, ID: 3, FireAtMs: fire})
	require.Equal(t, TurnFailed, res.Kind)
	require.Equal(t, "timeout: activity timed out", displayMessage(res.Details))
	etRequireDelta(t, e,
		etEv(4, etSrc(3), duroxide.TimerFired{FireAtMs: fire}),
		etEv(5, etSrc(2), duroxide.ActivityCancelRequested{Reason: "dropped_future"}))
	require.Equal(t, []uint64{2}, e.cancelledActivityIDs())
}

func TestBackoffStrategies(t *testing.T) {
	require.Equal(t, 100*time.Millisecond, BackoffStrategy{}.DelayForAttempt(1))
	require.Equal(t, 400*time.Millisecond, BackoffStrategy{}.DelayForAttempt(3))
	require.Equal(t, 30*time.Second, BackoffStrategy{}.DelayForAttempt(40))
	require.Equal(t, time.Duration(0), NoBackoff().DelayForAttempt(4))
	require.Equal(t, time.Second, FixedBackoff(time.Second).DelayForAttempt(9))
	require.Equal(t, 3*time.Second, LinearBackoff(time.Second, 5*time.Second).DelayForAttempt(3))
	require.Equal(t, 5*time.Second, LinearBackoff(time.Second, 5*time.Second).DelayForAttempt(30))
	require.Equal(t, 90*time.Millisecond, ExponentialBackoff(10*time.Millisecond, 3, time.Minute).DelayForAttempt(3))
}
