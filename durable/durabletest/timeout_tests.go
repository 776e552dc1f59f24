package durabletest

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// timeoutTests are Go-only: execution and instance timeouts (issue 33),
// which duroxide does not have.
func timeoutTests() []sample {
	return []sample{
		{"execution_timeout_fails_the_instance_with_a_timeout_error", executionTimeoutFailsTheInstanceWithATimeoutError},
		{"execution_timeout_starts_again_with_each_continue_as_new", executionTimeoutStartsAgainWithEachContinueAsNew},
		{"instance_timeout_spans_continue_as_new", instanceTimeoutSpansContinueAsNew},
		{"child_timeout_is_reported_to_the_parent", childTimeoutIsReportedToTheParent},
		{"execution_timeout_cancels_the_activity_in_flight", executionTimeoutCancelsTheActivityInFlight},
		{"timeout_outlasts_the_runtime", timeoutOutlastsTheRuntime},
		{"suspended_instance_times_out_when_resumed", suspendedInstanceTimesOutWhenResumed},
		{"timeouts_of_a_cancelled_instance_spare_its_restart", timeoutsOfACancelledInstanceSpareItsRestart},
		{"timeouts_refuse_negative_durations", timeoutsRefuseNegativeDurations},
		{"activity_schedule_to_close_stops_the_retries", activityScheduleToCloseStopsTheRetries},
		{"activity_schedule_to_close_cancels_the_attempt_in_flight", activityScheduleToCloseCancelsTheAttemptInFlight},
	}
}

// timeoutLimit is the samples' limit: short for the suite, long enough for
// a loaded machine's turns to fit inside it where they must.
const timeoutLimit = time.Second

// stepLength is one execution of "Steps": well inside timeoutLimit.
const stepLength = 400 * time.Millisecond

// timeoutRegistry registers "Waits", which waits for the event "go"
// (never raised by the samples that time out), and "Steps", which takes
// input steps of 400 ms, one per execution (continue-as-new), then
// completes with "done".
func timeoutRegistry(e *env) *durable.Registry {
	r := durable.NewRegistry()
	orch(e.t, r, "Waits", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.WaitEvent[string](ctx, "go").Await()
	})
	orch(e.t, r, "Steps", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		n, err := strconv.Atoi(in)
		if err != nil {
			return "", err
		}
		if n == 0 {
			return "done", nil
		}
		if _, err := durable.NewTimer(ctx, stepLength).Await(); err != nil {
			return "", err
		}
		return "", durable.ContinueAsNew(ctx, strconv.Itoa(n-1))
	})
	return r
}

// startLimited starts instance with the timeouts.
func (e *env) startLimited(instance, orchestration, input string, o durable.StartOptions) {
	e.t.Helper()
	require.NoError(e.t, e.client().StartOrchestration(e.ctx, instance, orchestration, input, o))
}

// requireTimedOut waits for instance to fail by the timeout of scope
// ("execution" or "instance") and returns its status.
func (e *env) requireTimedOut(instance, scope string) *durable.OrchestrationStatus {
	e.t.Helper()
	st := e.wait(instance)
	require.Equal(e.t, durable.StateFailed, st.State, "output %q", st.Output)
	_, err := durable.DecodeOutput[string](st)
	require.ErrorIs(e.t, err, durable.ErrTimedOut, "failure %q", st.FailureMessage())
	require.NotErrorIs(e.t, err, durable.ErrTimeout, "a timed-out instance is not a client wait that ran out")
	require.Contains(e.t, st.FailureMessage(), "timeout: "+scope+" timeout of 1s exceeded")
	return st
}

// Past its execution timeout, an instance waiting for an event fails
// with an error matching ErrTimedOut; its history is a cancelled
// execution's, not started sooner than the limit.
func executionTimeoutFailsTheInstanceWithATimeoutError(e *env) {
	e.start(timeoutRegistry(e), fastOptions(nil))
	const instance = "timeout-execution"
	e.startLimited(instance, "Waits", "", durable.StartOptions{ExecutionTimeout: timeoutLimit})
	e.requireTimedOut(instance, "execution")
	h := e.history(instance)
	require.True(e.t, anyKind[duroxide.OrchestrationCancelRequested](h), kinds(h))
	last := h[len(h)-1]
	require.IsType(e.t, duroxide.OrchestrationFailed{}, last.Kind)
	require.GreaterOrEqual(e.t, last.TimestampMs-h[0].TimestampMs, uint64(timeoutLimit.Milliseconds()), "failed before the limit")
	// An instance that finishes in time is not touched by its timers
	// (a longer limit: finishing must not race it on a loaded machine).
	const longer = 3 * timeoutLimit
	started := time.Now()
	e.startLimited("timeout-in-time", "Waits", "", durable.StartOptions{ExecutionTimeout: longer, InstanceTimeout: longer})
	e.waitSubscription("timeout-in-time", "go")
	e.raise("timeout-in-time", "go", "ok")
	require.Equal(e.t, `ok`, e.completed("timeout-in-time"))
	time.Sleep(time.Until(started.Add(longer + 300*time.Millisecond)))
	st, err := e.client().Status(e.ctx, "timeout-in-time")
	require.NoError(e.t, err)
	require.Equal(e.t, durable.StateCompleted, st.State)
}

// Each execution gets the whole execution timeout: three executions of
// 400 ms each outlast a 1 s limit together, and the instance completes.
func executionTimeoutStartsAgainWithEachContinueAsNew(e *env) {
	e.start(timeoutRegistry(e), fastOptions(nil))
	const instance = "timeout-execution-can"
	e.startLimited(instance, "Steps", "3", durable.StartOptions{ExecutionTimeout: timeoutLimit})
	require.Equal(e.t, "done", e.completed(instance))
	e.requireExecutions(instance, []uint64{1, 2, 3, 4})
}

// The instance timeout does not start again: four such executions (1.6
// s) fail in a later execution once the instance has run for 1 s.
func instanceTimeoutSpansContinueAsNew(e *env) {
	e.start(timeoutRegistry(e), fastOptions(nil))
	const instance = "timeout-instance-can"
	e.startLimited(instance, "Steps", "4", durable.StartOptions{InstanceTimeout: timeoutLimit})
	e.requireTimedOut(instance, "instance")
	h := e.history(instance)
	require.Greater(e.t, h[0].ExecutionID, uint64(1), "failed in a later execution: %s", kinds(h))
}

// A child past its execution timeout fails its parent's call with an
// error matching ErrTimedOut, which the parent can handle.
func childTimeoutIsReportedToTheParent(e *env) {
	r := timeoutRegistry(e)
	orch(e.t, r, "Parent", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		_, err := durable.CallSubOrchestration[string](ctx, "Waits", "", durable.SubOrchestrationOptions{
			InstanceID: "timeout-child", ExecutionTimeout: timeoutLimit}).Await()
		if errors.Is(err, durable.ErrTimedOut) {
			return "child timed out: " + err.Error(), nil
		}
		return "", err
	})
	e.start(r, fastOptions(nil))
	e.startOrch("timeout-parent", "Parent", "")
	out := e.completed("timeout-parent")
	require.True(e.t, strings.HasPrefix(out, "child timed out: canceled: timeout: execution timeout of 1s exceeded"), "parent's output %q", out)
	e.requireTimedOut("timeout-child", "execution")
}

// The timed-out instance's activity in flight is cancelled, as a
// cancelled instance's is.
func executionTimeoutCancelsTheActivityInFlight(e *env) {
	r := durable.NewRegistry()
	var started, saw atomic.Bool
	act(e.t, r, "Long", blockUntilCancelled(&started, &saw))
	orch(e.t, r, "CallsLong", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallActivity[string](ctx, "Long", in).Await()
	})
	e.start(r, lockOpts(time.Second, nil))
	const instance = "timeout-activity"
	e.startLimited(instance, "CallsLong", "", durable.StartOptions{ExecutionTimeout: timeoutLimit})
	e.requireTimedOut(instance, "execution")
	require.True(e.t, started.Load())
	e.waitFlag("the activity in flight to see its cancellation", &saw)
}

// The timers are stored with the first turn: a runtime started after the
// deadline, the first having shut down, fails the instance.
func timeoutOutlastsTheRuntime(e *env) {
	r := timeoutRegistry(e)
	rt := e.start(r, fastOptions(nil))
	const instance = "timeout-restart"
	e.startLimited(instance, "Waits", "", durable.StartOptions{ExecutionTimeout: timeoutLimit})
	e.waitSubscription(instance, "go")
	shutdownRuntime(e, rt)
	time.Sleep(timeoutLimit + 200*time.Millisecond)
	e.start(r, fastOptions(nil))
	e.requireTimedOut(instance, "execution")
}

// A suspended instance's timeout waits with its other timers: it is still
// suspended past the deadline, and fails once resumed.
func suspendedInstanceTimesOutWhenResumed(e *env) {
	e.start(timeoutRegistry(e), fastOptions(nil))
	const instance = "timeout-suspended"
	e.startLimited(instance, "Waits", "", durable.StartOptions{ExecutionTimeout: timeoutLimit})
	e.waitSubscription(instance, "go")
	e.suspend(instance, "hold")
	time.Sleep(timeoutLimit + 300*time.Millisecond)
	st, err := e.client().Status(e.ctx, instance)
	require.NoError(e.t, err)
	require.Equal(e.t, durable.StateSuspended, st.State, "the timeout ended a suspended instance")
	require.NoError(e.t, e.client().Resume(e.ctx, instance, ""))
	e.requireTimedOut(instance, "execution")
}

// Cancelled before its limits, the instance fails cancelled (not timed
// out), and its timers, firing later, leave its restart running.
func timeoutsOfACancelledInstanceSpareItsRestart(e *env) {
	e.start(timeoutRegistry(e), fastOptions(nil))
	const instance = "timeout-cancelled"
	e.startLimited(instance, "Waits", "", durable.StartOptions{ExecutionTimeout: timeoutLimit, InstanceTimeout: timeoutLimit})
	e.waitSubscription(instance, "go")
	e.cancel(instance, "stop")
	st := e.wait(instance)
	require.True(e.t, isCancelled(st.Details, "stop"), st.FailureMessage())
	_, err := durable.DecodeOutput[string](st)
	require.NotErrorIs(e.t, err, durable.ErrTimedOut)
	e.restart(instance, durable.RestartOptions{}, 2)
	time.Sleep(timeoutLimit + 300*time.Millisecond)
	st, err = e.client().Status(e.ctx, instance)
	require.NoError(e.t, err)
	require.Equal(e.t, durable.StateRunning, st.State, "the ended life's timeout ended the restart: %s", st.FailureMessage())
}

// A negative limit is refused before anything is written.
func timeoutsRefuseNegativeDurations(e *env) {
	e.start(timeoutRegistry(e), fastOptions(nil))
	err := e.client().StartOrchestration(e.ctx, "timeout-negative", "Waits", "", durable.StartOptions{InstanceTimeout: -time.Second})
	require.ErrorIs(e.t, err, durable.ErrInvalidInput)
	require.NoError(e.t, e.client().StartOrchestration(e.ctx, "timeout-negative", "Waits", "other"),
		"nothing was written by the refused start")
}

// scheduleToClose calls activity "A" with a policy of up to 10 attempts
// 400 ms apart within 1 s, and returns "timed out: <error>" when the call
// fails with ErrTimedOut.
func scheduleToClose(e *env, r *durable.Registry) {
	orch(e.t, r, "Bounded", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		p := durable.NewRetryPolicy(10).WithBackoff(durable.FixedBackoff(400 * time.Millisecond))
		p.ScheduleToClose = timeoutLimit
		out, err := durable.CallActivity[string](ctx, "A", in, durable.ActivityOptions{Retry: p}).Await()
		if errors.Is(err, durable.ErrTimedOut) {
			return "timed out: " + err.Error(), nil
		}
		return out, err
	})
}

// The total time bounds the retries: the call fails with a timeout
// error before its attempts run out, and no attempt follows.
func activityScheduleToCloseStopsTheRetries(e *env) {
	r := durable.NewRegistry()
	var runs atomic.Int32
	act(e.t, r, "A", func(durable.ActivityContext, string) (string, error) {
		runs.Add(1)
		return "", errors.New("broken")
	})
	scheduleToClose(e, r)
	e.start(r, fastOptions(nil))
	const instance = "schedule-to-close"
	e.startOrch(instance, "Bounded", "x")
	require.Equal(e.t, "timed out: timeout: activity schedule-to-close of 1s exceeded", e.completed(instance))
	n := runs.Load()
	require.Less(e.t, n, int32(10), "the attempts ran out before the deadline")
	require.GreaterOrEqual(e.t, n, int32(1))
	time.Sleep(600 * time.Millisecond)
	require.Equal(e.t, n, runs.Load(), "an attempt ran after the deadline")
	h := e.history(instance)
	require.Equal(e.t, int(n), countKind[duroxide.ActivityScheduled](h))
	require.Less(e.t, indexOfKind[duroxide.ActivityScheduled](h), indexOfKind[duroxide.TimerCreated](h),
		"the first attempt is scheduled before the deadline's timer: %s", kinds(h))
}

// The deadline cancels an attempt still running: the call fails at the
// deadline, not when the attempt ends.
func activityScheduleToCloseCancelsTheAttemptInFlight(e *env) {
	r := durable.NewRegistry()
	var started, saw atomic.Bool
	act(e.t, r, "A", blockUntilCancelled(&started, &saw))
	scheduleToClose(e, r)
	e.start(r, lockOpts(time.Second, nil)) // a short lock: the worker learns of the cancellation at its renewal
	const instance = "schedule-to-close-inflight"
	e.startOrch(instance, "Bounded", "x")
	require.Equal(e.t, "timed out: timeout: activity schedule-to-close of 1s exceeded", e.completed(instance))
	require.True(e.t, started.Load())
	e.waitFlag("the attempt in flight to see its cancellation", &saw)
	require.True(e.t, anyKind[duroxide.ActivityCancelRequested](e.history(instance)), kinds(e.history(instance)))
}
