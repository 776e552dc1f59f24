package durable

import (
	"testing"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/stretchr/testify/require"
)

func TestEngineRetryBacksOffOnDurableTimersThenSucceeds(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		return CallActivity[string](ctx, "Flaky", "x", ActivityOptions{Retry: NewRetryPolicy(3)}).Await()
	}
	now := uint64(testClock.UnixMilli())
	e, res := executeStep(t, []duroxide.Event{evStarted(1)}, h)
	require.Equal(t, turnContinue, res.Kind)
	requireDelta(t, e, evWithID(2, nil, duroxide.ActivityScheduled{Name: "Flaky", Input: "x"}))

	e, res = executeStep(t, e.finalHistory(), h, duroxide.ActivityFailedItem{Instance: testInstance, ExecutionID: 1, ID: 2, Details: evAppDetails(duroxide.AppActivityFailed, "e1")})
	require.Equal(t, turnContinue, res.Kind)
	requireDelta(t, e,
		evWithID(3, refU64(2), duroxide.ActivityFailed{Details: evAppDetails(duroxide.AppActivityFailed, "e1")}),
		evWithID(4, nil, duroxide.TimerCreated{FireAtMs: now + 100})) // default backoff: 100 ms

	e, res = executeStep(t, e.finalHistory(), h, duroxide.TimerFiredItem{Instance: testInstance, ExecutionID: 1, ID: 4, FireAtMs: now + 100})
	require.Equal(t, turnContinue, res.Kind)
	requireDelta(t, e,
		evWithID(5, refU64(4), duroxide.TimerFired{FireAtMs: now + 100}),
		evWithID(6, nil, duroxide.ActivityScheduled{Name: "Flaky", Input: "x"}))

	e, res = executeStep(t, e.finalHistory(), h, duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: 6, Result: "ok"})
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "ok"}, res)
	requireDelta(t, e, evWithID(7, refU64(6), duroxide.ActivityCompleted{Result: "ok"}))
}

func TestEngineRetryGivesUpWithLastError(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		return CallActivity[string](ctx, "Bad", "", ActivityOptions{Retry: NewRetryPolicy(2).WithBackoff(NoBackoff())}).Await()
	}
	e, _ := executeStep(t, []duroxide.Event{evStarted(1)}, h)
	e, res := executeStep(t, e.finalHistory(), h, duroxide.ActivityFailedItem{Instance: testInstance, ExecutionID: 1, ID: 2, Details: evAppDetails(duroxide.AppActivityFailed, "e1")})
	require.Equal(t, turnContinue, res.Kind)
	// No backoff: the second attempt follows at once, with no timer.
	requireDelta(t, e,
		evWithID(3, refU64(2), duroxide.ActivityFailed{Details: evAppDetails(duroxide.AppActivityFailed, "e1")}),
		evWithID(4, nil, duroxide.ActivityScheduled{Name: "Bad"}))
	_, res = executeStep(t, e.finalHistory(), h, duroxide.ActivityFailedItem{Instance: testInstance, ExecutionID: 1, ID: 4, Details: evAppDetails(duroxide.AppActivityFailed, "e2")})
	require.Equal(t, turnFailed, res.Kind)
	require.Equal(t, "e2", displayMessage(res.Details))
}

func TestEngineRetryTimeoutIsNotRetried(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		return CallActivity[string](ctx, "Slow", "", ActivityOptions{Retry: NewRetryPolicy(5).WithTimeout(2 * time.Second)}).Await()
	}
	fire := uint64(testClock.UnixMilli()) + 2000
	e, res := executeStep(t, []duroxide.Event{evStarted(1)}, h)
	require.Equal(t, turnContinue, res.Kind)
	// The activity is scheduled before the per-attempt timer, as in Rust.
	requireDelta(t, e,
		evWithID(2, nil, duroxide.ActivityScheduled{Name: "Slow"}),
		evWithID(3, nil, duroxide.TimerCreated{FireAtMs: fire}))

	e, res = executeStep(t, e.finalHistory(), h, duroxide.TimerFiredItem{Instance: testInstance, ExecutionID: 1, ID: 3, FireAtMs: fire})
	require.Equal(t, turnFailed, res.Kind)
	require.Equal(t, "timeout: activity timed out", displayMessage(res.Details))
	requireDelta(t, e,
		evWithID(4, refU64(3), duroxide.TimerFired{FireAtMs: fire}),
		evWithID(5, refU64(2), duroxide.ActivityCancelRequested{Reason: "dropped_future"}))
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

// A retried activity is a future: raced against a timer in Select, the
// timer (created eagerly) comes first in history and the retry loop's first
// attempt follows when the orchestration waits, as Rust's lazy retry future
// polled by select2. Losing the race cancels the pending attempt.
func TestEngineRetryFutureLosesSelectToATimer(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		r := CallActivity[string](ctx, "Slow", "x", ActivityOptions{Retry: NewRetryPolicy(3)})
		if ctx.Select(r, NewTimer(ctx, 5*time.Second)) == 1 {
			return "timeout", nil
		}
		return r.Await()
	}
	fire := uint64(testClock.UnixMilli()) + 5000
	e, res := executeStep(t, []duroxide.Event{evStarted(1)}, h)
	require.Equal(t, turnContinue, res.Kind)
	requireDelta(t, e,
		evWithID(2, nil, duroxide.TimerCreated{FireAtMs: fire}),
		evWithID(3, nil, duroxide.ActivityScheduled{Name: "Slow", Input: "x"}))

	e, res = executeStep(t, e.finalHistory(), h, duroxide.TimerFiredItem{Instance: testInstance, ExecutionID: 1, ID: 2, FireAtMs: fire})
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "timeout"}, res)
	require.Equal(t, []uint64{3}, e.cancelledActivityIDs())
}

// A retried activity that wins a Select resolves it with the retry loop's
// outcome, backoff and second attempt included.
func TestEngineRetryFutureWinsSelectAfterARetry(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		r := CallActivity[string](ctx, "Flaky", "x", ActivityOptions{Retry: NewRetryPolicy(3).WithBackoff(NoBackoff())})
		if ctx.Select(r, NewTimer(ctx, time.Hour)) == 1 {
			return "timeout", nil
		}
		return r.Await()
	}
	e, _ := executeStep(t, []duroxide.Event{evStarted(1)}, h)
	e, res := executeStep(t, e.finalHistory(), h, duroxide.ActivityFailedItem{Instance: testInstance, ExecutionID: 1, ID: 3, Details: evAppDetails(duroxide.AppActivityFailed, "e1")})
	require.Equal(t, turnContinue, res.Kind)
	requireDelta(t, e,
		evWithID(4, refU64(3), duroxide.ActivityFailed{Details: evAppDetails(duroxide.AppActivityFailed, "e1")}),
		evWithID(5, nil, duroxide.ActivityScheduled{Name: "Flaky", Input: "x"}))
	_, res = executeStep(t, e.finalHistory(), h, duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: 5, Result: "ok"})
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "ok"}, res)
}

// Two retried activities joined run side by side: both first attempts are
// scheduled in the first turn, in argument order.
func TestEngineRetryFuturesJoinRunConcurrently(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		p := NewRetryPolicy(2)
		rs := Join(ctx,
			CallActivity[string](ctx, "A", "1", ActivityOptions{Retry: p}),
			CallActivity[string](ctx, "B", "2", ActivityOptions{Retry: p}))
		return rs[0].Value + rs[1].Value, nil
	}
	e, res := executeStep(t, []duroxide.Event{evStarted(1)}, h)
	require.Equal(t, turnContinue, res.Kind)
	requireDelta(t, e,
		evWithID(2, nil, duroxide.ActivityScheduled{Name: "A", Input: "1"}),
		evWithID(3, nil, duroxide.ActivityScheduled{Name: "B", Input: "2"}))
	_, res = executeStep(t, e.finalHistory(), h,
		duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: 3, Result: "b"},
		duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: 2, Result: "a"})
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "ab"}, res)
}

// Session and tag apply to every attempt of a retried activity.
func TestEngineRetrySessionAndTagOnEveryAttempt(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		return CallActivity[string](ctx, "Gpu", "x", ActivityOptions{
			Retry: NewRetryPolicy(2).WithBackoff(NoBackoff()), Session: "s1", Tag: "gpu"}).Await()
	}
	s1, gpu := "s1", "gpu"
	want := duroxide.ActivityScheduled{Name: "Gpu", Input: "x", SessionID: &s1, Tag: &gpu}
	e, _ := executeStep(t, []duroxide.Event{evStarted(1)}, h)
	requireDelta(t, e, evWithID(2, nil, want))
	e, _ = executeStep(t, e.finalHistory(), h, duroxide.ActivityFailedItem{Instance: testInstance, ExecutionID: 1, ID: 2, Details: evAppDetails(duroxide.AppActivityFailed, "e1")})
	requireDelta(t, e,
		evWithID(3, refU64(2), duroxide.ActivityFailed{Details: evAppDetails(duroxide.AppActivityFailed, "e1")}),
		evWithID(4, nil, want))
}

// A string result is the raw payload, unchanged, so CallActivity[string]
// is Rust's untyped schedule_activity: a result that happens to be a JSON
// string or null is not decoded.
func TestCallActivityStringResultIsRaw(t *testing.T) {
	for _, raw := range []string{`"quoted"`, `null`, `{"a":1}`, `7`, `plain`} {
		h := func(ctx *OrchestrationContext, _ string) (string, error) {
			return CallActivity[string](ctx, "Echo", "").Await()
		}
		e, _ := executeStep(t, []duroxide.Event{evStarted(1)}, h)
		_, res := executeStep(t, e.finalHistory(), h, duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: 2, Result: raw})
		require.Equal(t, turnResult{Kind: turnCompleted, Output: raw}, res, "raw result %s", raw)
	}
}

// Each scheduling call takes at most one options value; more is a
// programming error that fails the orchestration with a clear message.
func TestSchedulingCallsRejectTwoOptionValues(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		return CallActivity[string](ctx, "A", "", ActivityOptions{Tag: "a"}, ActivityOptions{Tag: "b"}).Await()
	}
	_, res := executeStep(t, []duroxide.Event{evStarted(1)}, h)
	require.Equal(t, turnFailed, res.Kind)
	require.Equal(t, "orchestration panicked: durable: CallActivity takes at most one options value, got 2", displayMessage(res.Details))
}

// The retry loop starts when its future is first polled, as Rust's async
// schedule_activity_with_retry does: awaited at once, its first attempt is
// scheduled before a block created earlier runs (which the Go block model
// would run first), so the history matches the old inline call and Rust.
func TestEngineRetryFutureStartsWhenFirstPolled(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		g := Go(ctx, func(ctx *OrchestrationContext) (string, error) {
			return CallActivity[string](ctx, "A", "").Await()
		})
		r, err := CallActivity[string](ctx, "R", "", ActivityOptions{Retry: NewRetryPolicy(2)}).Await()
		if err != nil {
			return "", err
		}
		a, err := g.Await()
		return r + a, err
	}
	e, res := executeStep(t, []duroxide.Event{evStarted(1)}, h)
	require.Equal(t, turnContinue, res.Kind)
	requireDelta(t, e,
		evWithID(2, nil, duroxide.ActivityScheduled{Name: "R"}),
		evWithID(3, nil, duroxide.ActivityScheduled{Name: "A"}))
}

// A retried activity that is never polled schedules nothing, as an unpolled
// Rust future: waiting on something else does not start it.
func TestEngineRetryFutureNeverPolledSchedulesNothing(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		r := CallActivity[string](ctx, "R", "", ActivityOptions{Retry: NewRetryPolicy(2)})
		if _, err := NewTimer(ctx, time.Second).Await(); err != nil {
			return "", err
		}
		r.Cancel()
		return "ok", nil
	}
	fire := uint64(testClock.UnixMilli()) + 1000
	e, res := executeStep(t, []duroxide.Event{evStarted(1)}, h)
	require.Equal(t, turnContinue, res.Kind)
	requireDelta(t, e, evWithID(2, nil, duroxide.TimerCreated{FireAtMs: fire}))
	e, res = executeStep(t, e.finalHistory(), h, duroxide.TimerFiredItem{Instance: testInstance, ExecutionID: 1, ID: 2, FireAtMs: fire})
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "ok"}, res)
	requireDelta(t, e, evWithID(3, refU64(2), duroxide.TimerFired{FireAtMs: fire}))
}
