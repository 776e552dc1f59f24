package durabletest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// heartbeatTests: Go-only, activity heartbeats (issue 34). An activity's
// Heartbeat details ride on its lock renewals; a later attempt of the
// same work item (a lost lock, a runtime that stopped under it) resumes
// from them; ActivityPolicy.HeartbeatTimeout fails an attempt that stops
// heartbeating and the retry policy retries it; a cancelled
// orchestration's heartbeating activity is cancelled, a deleted
// instance's ends with its lock lost (heartbeat_compose_tests.go has the
// compositions).
func heartbeatTests() []sample {
	return []sample{
		{name: "heartbeat_details_resume_after_a_lost_lock", run: heartbeatResumeAfterLostLock},
		{name: "heartbeat_details_survive_a_runtime_restart", run: heartbeatSurvivesRestart},
		{name: "heartbeat_timeout_fails_a_stuck_attempt_and_the_retry_succeeds", run: heartbeatTimeoutRetried},
		{name: "heartbeat_timeout_without_retry_fails_the_call", run: heartbeatTimeoutFailsCall},
		{name: "heartbeating_activity_of_a_cancelled_orchestration_is_cancelled", run: heartbeatCancelled},
		{name: "heartbeating_activity_across_suspend_resume_and_continue_as_new", run: heartbeatSuspendContinueAsNew},
		{name: "heartbeat_details_resume_in_a_child_orchestration", run: heartbeatInChildOrchestration},
		{name: "heartbeating_activity_of_a_deleted_instance_ends_with_lock_lost", run: heartbeatDeletedInstance},
		{name: "heartbeat_resumed_activity_then_continue_as_new_starts_fresh", run: heartbeatResumedThenContinueAsNew},
		{name: "heartbeat_details_survive_a_killed_runtime", run: heartbeatKilledRuntime},
	}
}

// heartbeatLocks renews every second (a 2 s lock), so a heartbeat is
// stored within about a second.
func heartbeatLocks(o *durable.Options) *durable.Options {
	if o == nil {
		o = &durable.Options{}
	}
	o.WorkerLockTimeout, o.WorkerLockRenewalBuffer = 2*time.Second, time.Second
	return o
}

// storedAfter is long enough for two renewals to carry a heartbeat.
const storedAfter = 2500 * time.Millisecond

// resumable is an activity whose first attempt heartbeats pages 1..3 and
// then calls stall; a later attempt returns where it resumed from.
func resumable(attempts *atomic.Int32, stall func(ctx durable.ActivityContext)) func(durable.ActivityContext, string) (string, error) {
	return func(ctx durable.ActivityContext, _ string) (string, error) {
		if attempts.Add(1) == 1 {
			if _, ok, err := durable.HeartbeatDetails[int](ctx); ok || err != nil {
				return "", fmt.Errorf("a first attempt saw details (ok %v, err %v)", ok, err)
			}
			for page := 1; page <= 3; page++ {
				if err := ctx.Heartbeat(page); err != nil {
					return "", err
				}
			}
			stall(ctx)
			return "", errors.New("first attempt ended")
		}
		page, ok, err := durable.HeartbeatDetails[int](ctx)
		if err != nil || !ok {
			return "", fmt.Errorf("no details to resume from (ok %v, err %v)", ok, err)
		}
		if _, at := ctx.LastHeartbeat(); !at {
			return "", errors.New("details without a heartbeat time")
		}
		return fmt.Sprintf("resumed after page %d", page), nil
	}
}

func callOnce(ctx *durable.OrchestrationContext, _ string) (string, error) {
	return durable.CallActivity[string](ctx, "Pages", "").Await()
}

// The first attempt's renewals stored page 3; then the store reports the
// lock lost (FaultyProvider), the attempt is cancelled and its result
// dropped, and once the lock expires the item's next attempt reads page 3.
func heartbeatResumeAfterLostLock(e *env) {
	fp := NewFaultyProvider(e.p)
	var attempts atomic.Int32
	r := durable.NewRegistry()
	act(e.t, r, "Pages", resumable(&attempts, func(ctx durable.ActivityContext) {
		time.Sleep(storedAfter)
		fp.FailNext(RenewWorkItemLock)
		sleepCtx(ctx, 30*time.Second)
	}))
	orch(e.t, r, "Resume", callOnce)
	e.startOn(fp, r, heartbeatLocks(nil))
	e.startOrch("hb-lost-lock", "Resume", "")
	require.Equal(e.t, "resumed after page 3", e.completed("hb-lost-lock"))
	require.Equal(e.t, int32(2), attempts.Load())
}

// The first runtime stops (its shutdown deadline passes while the
// activity runs, so nothing is acked); a second runtime over the same
// store runs the item's next attempt, which resumes from the details.
func heartbeatSurvivesRestart(e *env) {
	var attempts atomic.Int32
	var stalled atomic.Bool
	r := durable.NewRegistry()
	act(e.t, r, "Pages", resumable(&attempts, func(ctx durable.ActivityContext) {
		time.Sleep(storedAfter)
		stalled.Store(true)
		sleepCtx(ctx, 30*time.Second)
	}))
	orch(e.t, r, "Resume", callOnce)
	rt1, err := durable.Start(e.ctx, e.p, r, testOptions(heartbeatLocks(nil)))
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = rt1.Shutdown(context.Background()) })
	e.startOrch("hb-restart", "Resume", "")
	e.waitFlag("the first attempt stalled", &stalled)
	stop, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
	defer cancel()
	require.ErrorIs(e.t, rt1.Shutdown(stop), context.DeadlineExceeded, "the activity held the first runtime until its deadline")

	e.start(r, heartbeatLocks(nil))
	require.Equal(e.t, "resumed after page 3", e.completed("hb-restart"))
	require.Equal(e.t, int32(2), attempts.Load())
}

// stuckThenSteady is "Stuck": its first attempt heartbeats once and then
// hangs past its heartbeat timeout and its grace period (it ignores its
// context for a while, as stuck code does); later attempts heartbeat
// every 100 ms for three timeouts and succeed.
func stuckThenSteady(attempts *atomic.Int32, cause *atomic.Value, timeout time.Duration) func(durable.ActivityContext, string) (string, error) {
	return func(ctx durable.ActivityContext, _ string) (string, error) {
		if attempts.Add(1) == 1 {
			if err := ctx.Heartbeat("started"); err != nil {
				return "", err
			}
			sleepCtx(ctx, 30*time.Second)
			cause.Store(fmt.Sprint(context.Cause(ctx)))
			time.Sleep(time.Second) // stuck past the grace period
			return "stale result", nil
		}
		for end := time.Now().Add(3 * timeout); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if err := ctx.Heartbeat("working"); err != nil {
				return "", err
			}
		}
		return "ok", nil
	}
}

const heartbeatTimeout = 700 * time.Millisecond

func stuckRegistry(e *env, attempts *atomic.Int32, cause *atomic.Value) *durable.Registry {
	r := durable.NewRegistry()
	act(e.t, r, "Stuck", stuckThenSteady(attempts, cause, heartbeatTimeout))
	must(e.t, r.SetActivityPolicy("Stuck", durable.ActivityPolicy{HeartbeatTimeout: heartbeatTimeout}))
	// Never heartbeats, has no heartbeat timeout, runs longer than
	// Stuck's: unaffected.
	act(e.t, r, "Quiet", func(ctx durable.ActivityContext, in string) (string, error) {
		time.Sleep(2 * heartbeatTimeout)
		return "quiet " + in, nil
	})
	return r
}

func heartbeatTimeoutRetried(e *env) {
	var attempts atomic.Int32
	var cause atomic.Value
	r := stuckRegistry(e, &attempts, &cause)
	orch(e.t, r, "Retried", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		quiet := durable.CallActivity[string](ctx, "Quiet", "done")
		policy := durable.NewRetryPolicy(2).WithBackoff(durable.FixedBackoff(10 * time.Millisecond))
		v, err := durable.CallActivity[string](ctx, "Stuck", "", durable.ActivityOptions{Retry: policy}).Await()
		if err != nil {
			return "", err
		}
		q, err := quiet.Await()
		return v + ", " + q, err
	})
	e.start(r, &durable.Options{ActivityCancellationGracePeriod: 100 * time.Millisecond})
	e.startOrch("hb-timeout-retry", "Retried", "")
	require.Equal(e.t, "ok, quiet done", e.completed("hb-timeout-retry"))
	require.Equal(e.t, int32(2), attempts.Load())
	e.waitFor("the stuck attempt to see its cause", func() bool { return cause.Load() != nil })
	require.Equal(e.t, durable.ErrHeartbeatTimeout.Error(), cause.Load())
	var failures []string
	for _, ev := range e.history("hb-timeout-retry") {
		if k, ok := ev.Kind.(duroxide.ActivityFailed); ok {
			a, _ := appDetails(k.Details)
			failures = append(failures, a.Message)
		}
	}
	require.Len(e.t, failures, 1, "the stuck attempt failed once; its stale result was dropped")
	require.True(e.t, strings.HasPrefix(failures[0], "timeout: activity heartbeat timeout of 700ms exceeded"), failures[0])
}

func heartbeatTimeoutFailsCall(e *env) {
	var attempts atomic.Int32
	var cause atomic.Value
	r := stuckRegistry(e, &attempts, &cause)
	orch(e.t, r, "Once", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_, err := durable.CallActivity[string](ctx, "Stuck", "").Await()
		return fmt.Sprintf("heartbeat timeout %v, timed out %v: %v",
			errors.Is(err, durable.ErrHeartbeatTimeout), errors.Is(err, durable.ErrTimedOut), err), nil
	})
	e.start(r, &durable.Options{ActivityCancellationGracePeriod: 100 * time.Millisecond})
	e.startOrch("hb-timeout-once", "Once", "")
	require.Contains(e.t, e.completed("hb-timeout-once"), "heartbeat timeout true, timed out true: timeout: activity heartbeat")
	require.Equal(e.t, int32(1), attempts.Load())
}

// A cancelled orchestration's activity item is deleted: the next renewal
// carrying its heartbeat finds the lock gone and cancels the activity.
func heartbeatCancelled(e *env) {
	var started, saw atomic.Bool
	r := durable.NewRegistry()
	act(e.t, r, "Beating", func(ctx durable.ActivityContext, _ string) (string, error) {
		started.Store(true)
		for i := 0; ; i++ {
			if err := ctx.Heartbeat(i); err != nil {
				// The lock went with the item between two polls.
				saw.Store(errors.Is(err, duroxide.ErrLockLost))
				return "", err
			}
			select {
			case <-ctx.Done():
				saw.Store(errors.Is(context.Cause(ctx), duroxide.ErrLockLost))
				return "cancelled", nil
			case <-time.After(50 * time.Millisecond):
			}
			if i > 600 {
				return "never cancelled", nil
			}
		}
	})
	orch(e.t, r, "Waits", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.CallActivity[string](ctx, "Beating", "").Await()
	})
	e.start(r, heartbeatLocks(nil))
	e.startOrch("hb-cancel", "Waits", "")
	e.waitFlag("the activity started", &started)
	// A renewal stored a heartbeat: the client lists it.
	var hs []durable.ActivityHeartbeat
	e.waitFor("the stored heartbeat", func() bool {
		var err error
		hs, err = e.client().ActivityHeartbeats(e.ctx, "hb-cancel")
		require.NoError(e.t, err)
		return len(hs) == 1
	})
	require.Equal(e.t, "Beating", hs[0].Name)
	require.Equal(e.t, uint64(1), hs[0].ExecutionID)
	require.Equal(e.t, uint64(2), hs[0].ActivityID)
	require.Regexp(e.t, `^[0-9]+$`, hs[0].Details)
	require.WithinDuration(e.t, time.Now(), hs[0].At, time.Minute)
	e.cancel("hb-cancel", "stop")
	st := e.wait("hb-cancel")
	require.Equal(e.t, durable.StateFailed, st.State)
	e.waitFlag("the activity saw its cancellation", &saw)
	hs, err := e.client().ActivityHeartbeats(e.ctx, "hb-cancel")
	require.NoError(e.t, err)
	require.Empty(e.t, hs, "the cancelled activity's item, and its heartbeat, are gone")
}

// The first execution's activity heartbeats while the instance is
// suspended and is resumed from details after a lost lock; it completes
// once resumed; the next execution (continue-as-new) schedules a new
// activity, whose first attempt sees no details.
func heartbeatSuspendContinueAsNew(e *env) {
	fp := NewFaultyProvider(e.p)
	var attempts atomic.Int32
	var suspended atomic.Bool
	var fresh atomic.Bool
	r := durable.NewRegistry()
	act(e.t, r, "Pages", resumable(&attempts, func(ctx durable.ActivityContext) {
		for !suspended.Load() {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(storedAfter)
		fp.FailNext(RenewWorkItemLock)
		sleepCtx(ctx, 30*time.Second)
	}))
	act(e.t, r, "Fresh", func(ctx durable.ActivityContext, _ string) (string, error) {
		_, ok, err := durable.HeartbeatDetails[int](ctx)
		fresh.Store(!ok && err == nil)
		return "fresh", ctx.Heartbeat(map[string]int{"page": 1})
	})
	orch(e.t, r, "Twice", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if in == "" {
			v, err := durable.CallActivity[string](ctx, "Pages", "").Await()
			if err != nil {
				return "", err
			}
			return "", durable.ContinueAsNew(ctx, v)
		}
		f, err := durable.CallActivity[string](ctx, "Fresh", "").Await()
		return in + "; " + f, err
	})
	e.startOn(fp, r, heartbeatLocks(nil))
	e.startOrch("hb-suspend", "Twice", "")
	e.waitFor("the first attempt", func() bool { return attempts.Load() == 1 })
	require.NoError(e.t, e.client().Suspend(e.ctx, "hb-suspend", "hold"))
	suspended.Store(true)
	e.waitFor("the resumed attempt", func() bool { return attempts.Load() == 2 })
	require.NoError(e.t, e.client().Resume(e.ctx, "hb-suspend", "go on"))
	require.Equal(e.t, "resumed after page 3; fresh", e.completed("hb-suspend"))
	require.True(e.t, fresh.Load(), "a new execution's activity starts without details")
}
