package durabletest

import (
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
)

// lockTimeoutTests ports tests/lock_timeout_tests.rs.
func lockTimeoutTests() []sample {
	return []sample{
		{name: "default_lock_timeouts", run: defaultLockTimeouts},
		{name: "custom_lock_timeout_configuration", run: customLockTimeoutConfiguration},
		{name: "orchestration_with_custom_timeout_completes", run: func(e *env) {
			oneActivityWithLocks(e, "inst-custom-timeout", "TestActivity", 0, "processed: ",
				&durable.Options{OrchestratorLockTimeout: time.Minute, WorkerLockTimeout: time.Minute})
		}},
		{name: "very_short_lock_timeout_works", run: func(e *env) {
			oneActivityWithLocks(e, "inst-short-timeout", "FastActivity", 0, "processed: ",
				&durable.Options{OrchestratorLockTimeout: time.Second, WorkerLockTimeout: time.Second})
		}},
		{name: "long_running_activity_with_lock_renewal", run: func(e *env) {
			oneActivityWithLocks(e, "inst-long-activity-renewal", "LongActivity", 6*time.Second, "completed: ",
				&durable.Options{WorkerLockTimeout: 3 * time.Second, WorkerLockRenewalBuffer: time.Second})
		}},
		{name: "short_activity_no_renewal_needed", run: func(e *env) {
			oneActivityWithLocks(e, "inst-quick-activity", "QuickActivity", 500*time.Millisecond, "quick: ",
				&durable.Options{WorkerLockTimeout: 3 * time.Second, WorkerLockRenewalBuffer: time.Second})
		}},
		{name: "lock_renewal_short_timeout", run: func(e *env) {
			oneActivityWithLocks(e, "inst-short-timeout-renewal", "MediumActivity", 3*time.Second, "medium: ",
				&durable.Options{WorkerLockTimeout: 2 * time.Second, WorkerLockRenewalBuffer: time.Second})
		}},
		{name: "custom_renewal_buffer", run: func(e *env) {
			oneActivityWithLocks(e, "inst-custom-buffer", "LongActivity", 6*time.Second, "done: ",
				&durable.Options{WorkerLockTimeout: 5 * time.Second, WorkerLockRenewalBuffer: 2 * time.Second})
		}},
		{name: "concurrent_activities_with_renewal", run: concurrentActivitiesWithRenewal},
		{name: "orchestrator_lock_renewal_buffer_defaults", run: orchestratorLockRenewalBufferDefaults},
		{name: "orchestration_lock_renewal_prevents_expiration", run: orchestrationLockRenewalPreventsExpiration},
	}
}

func defaultLockTimeouts(e *env) {
	o := (&durable.Options{}).WithDefaults()
	require.Equal(e.t, 5*time.Second, o.OrchestratorLockTimeout, "Default orchestrator lock timeout should be 5 seconds")
	require.Equal(e.t, 30*time.Second, o.WorkerLockTimeout, "Default worker lock timeout should be 30 seconds")
	require.Equal(e.t, 5*time.Second, o.WorkerLockRenewalBuffer, "Default worker lock renewal buffer should be 5 seconds")
}

func customLockTimeoutConfiguration(e *env) {
	o := (&durable.Options{OrchestratorLockTimeout: 10 * time.Second, WorkerLockTimeout: 120 * time.Second}).WithDefaults()
	require.Equal(e.t, 10*time.Second, o.OrchestratorLockTimeout)
	require.Equal(e.t, 120*time.Second, o.WorkerLockTimeout)
	s := (&durable.Options{OrchestratorLockTimeout: time.Second, WorkerLockTimeout: 5 * time.Second}).WithDefaults()
	require.Equal(e.t, time.Second, s.OrchestratorLockTimeout)
	require.Equal(e.t, 5*time.Second, s.WorkerLockTimeout)
}

func orchestratorLockRenewalBufferDefaults(e *env) {
	require.Equal(e.t, 2*time.Second, (&durable.Options{}).WithDefaults().OrchestratorLockRenewalBuffer,
		"Default orchestrator lock renewal buffer should be 2 seconds")
	require.Equal(e.t, 5*time.Second, (&durable.Options{OrchestratorLockRenewalBuffer: 5 * time.Second}).WithDefaults().OrchestratorLockRenewalBuffer)
}

// oneActivityWithLocks runs TestOrch: one activity that sleeps d and
// returns prefix+input, under the given lock options. The activity keeps
// sleeping when its context is cancelled (as Rust's tokio sleep does), so
// a lock lost for lack of renewal fails the test.
func oneActivityWithLocks(e *env, instance, activity string, d time.Duration, prefix string, o *durable.Options) {
	r := durable.NewRegistry()
	act(e.t, r, activity, func(_ durable.ActivityContext, in string) (string, error) {
		time.Sleep(d)
		return prefix + in, nil
	})
	orch(e.t, r, "TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.CallActivity[string](ctx, activity, "data").Await()
	})
	e.start(r, o)
	e.startOrch(instance, "TestOrch", "")
	require.Equal(e.t, prefix+"data", e.completed(instance))
}

func concurrentActivitiesWithRenewal(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "LongActivity", func(_ durable.ActivityContext, in string) (string, error) {
		time.Sleep(6 * time.Second)
		return "completed-" + in, nil
	})
	orch(e.t, r, "TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		a1 := durable.CallActivity[string](ctx, "LongActivity", "task1")
		a2 := durable.CallActivity[string](ctx, "LongActivity", "task2")
		a3 := durable.CallActivity[string](ctx, "LongActivity", "task3")
		var out []string
		for _, f := range []*durable.Future[string]{a1, a2, a3} {
			v, err := f.Await()
			if err != nil {
				return "", err
			}
			out = append(out, v)
		}
		return strings.Join(out, ", "), nil
	})
	e.start(r, &durable.Options{WorkerLockTimeout: 3 * time.Second, WorkerLockRenewalBuffer: time.Second, WorkerConcurrency: 3})
	e.startOrch("inst-concurrent-renewal", "TestOrch", "")
	out := e.completed("inst-concurrent-renewal")
	for _, w := range []string{"completed-task1", "completed-task2", "completed-task3"} {
		require.Contains(e.t, out, w)
	}
}

// Rust delays the dispatcher's processing of the turn by 4 s with a test
// hook; here the orchestration's first run blocks 4 s, which holds the
// turn (and its 2 s lock) just the same. Only lock renewal lets the turn
// commit.
func orchestrationLockRenewalPreventsExpiration(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "QuickActivity", func(durable.ActivityContext, string) (string, error) { return "done", nil })
	orch(e.t, r, "RenewalTestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if !ctx.IsReplaying() {
			//durablecheck:ignore blocks the first run on purpose to hold the turn past its lock timeout
			time.Sleep(4 * time.Second)
		}
		res, err := durable.CallActivity[string](ctx, "QuickActivity", "{}").Await()
		if err != nil {
			return "", err
		}
		return "completed: " + res, nil
	})
	e.start(r, &durable.Options{OrchestratorLockTimeout: 2 * time.Second, OrchestratorLockRenewalBuffer: time.Second,
		OrchestrationConcurrency: 1})
	e.startOrch("lock-renewal-e2e", "RenewalTestOrch", "")
	out := e.completed("lock-renewal-e2e")
	require.Contains(e.t, out, "completed")
	require.Contains(e.t, out, "done")
}
