package durabletest

import (
	"fmt"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// timerTests ports tests/timer_tests.rs.
func timerTests() []sample {
	return []sample{
		{"single_timer_fires", singleTimerFires},
		{"multiple_timers_fire_in_order", multipleTimersFireInOrder},
		{"timer_with_activity", timerWithActivity},
		{"timer_recovery_after_crash_before_fire", timerRecoveryAfterCrashBeforeFire},
		{"timer_recovery_after_crash_after_fire", timerRecoveryAfterCrashAfterFire},
		{"zero_duration_timer", zeroDurationTimer},
		{"timer_cancellation", timerCancellation},
		{"multiple_timers_recovery_after_crash", multipleTimersRecoveryAfterCrash},
		{"timer_fires_at_correct_time_after_previous_timer", timerFiresAtCorrectTimeAfterPreviousTimer},
	}
}

func timerThenOutput(d time.Duration, out string) durable.OrchestrationFunc {
	return func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_, _ = durable.NewTimer(ctx, d).Await()
		return out, nil
	}
}

func singleTimerFires(e *env) {
	const timer = 50 * time.Millisecond
	r := durable.NewRegistry()
	orch(e.t, r, "OneTimer", timerThenOutput(timer, "done"))
	e.start(r, nil)
	start := time.Now()
	e.startOrch("inst-one", "OneTimer", "")
	out := e.completed("inst-one")
	// A lower bound only: the timer must not fire early.
	require.GreaterOrEqual(e.t, time.Since(start), timer, "Timer fired too early")
	require.Equal(e.t, "done", out)
}

func multipleTimersFireInOrder(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "MultiTimer", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		for _, d := range []time.Duration{100, 50, 75} {
			_, _ = durable.NewTimer(ctx, d*time.Millisecond).Await()
		}
		return "timers: [(), (), ()]", nil
	})
	e.start(r, nil)
	e.startOrch("inst-multi", "MultiTimer", "")
	e.completed("inst-multi")
}

func timerWithActivity(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "TestActivity", func(_ durable.ActivityContext, in string) (string, error) { return "processed: " + in, nil })
	orch(e.t, r, "TimerActivity", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		tf := durable.NewTimer(ctx, 50*time.Millisecond)
		af := durable.CallActivity[string](ctx, "TestActivity", "input")
		_, _ = tf.Await()
		a, err := af.Await()
		if err != nil {
			panic(err)
		}
		return "timer: (), activity: " + a, nil
	})
	e.start(r, nil)
	e.startOrch("inst-timer-activity", "TimerActivity", "")
	out := e.completed("inst-timer-activity")
	require.Contains(e.t, out, "timer:")
	require.Contains(e.t, out, "activity: processed: input")
}

// timerThenPostTimer is the recovery tests' orchestration.
func timerThenPostTimer(d time.Duration) durable.OrchestrationFunc {
	return func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_, _ = durable.NewTimer(ctx, d).Await()
		return durable.CallActivity[string](ctx, "PostTimer", "done").Await()
	}
}

// crashAndRecover runs name until the history holds cond, stops the
// runtime (Rust drops it), then starts a fresh one on the same store.
func (e *env) crashAndRecover(instance, name string, fn durable.OrchestrationFunc, cond func([]duroxide.Event) bool, after time.Duration) {
	e.t.Helper()
	reg := func() *durable.Registry {
		r := durable.NewRegistry()
		act(e.t, r, "PostTimer", func(_ durable.ActivityContext, in string) (string, error) { return "Timer fired, then: " + in, nil })
		orch(e.t, r, name, fn)
		return r
	}
	stop := e.startManual(reg(), nil)
	e.startOrch(instance, name, "")
	e.waitHist(instance, "timer created", cond)
	time.Sleep(after)
	stop()
	e.start(reg(), nil)
}

func timerRecoveryAfterCrashBeforeFire(e *env) {
	const d = 500 * time.Millisecond
	e.crashAndRecover("timer-recovery-instance", "TimerRecoveryTest", timerThenPostTimer(d),
		func(h []duroxide.Event) bool { return hasKind[duroxide.TimerCreated](h, nil) }, 0)
	require.Equal(e.t, "Timer fired, then: done", e.completed("timer-recovery-instance"))
}

func timerRecoveryAfterCrashAfterFire(e *env) {
	const d = 100 * time.Millisecond
	// Stop once the timer is due (Rust sleeps TIMER_MS+50 from the start).
	e.crashAndRecover("timer-recovery-after-instance", "TimerRecoveryAfterTest", timerThenPostTimer(d),
		func(h []duroxide.Event) bool { return hasKind[duroxide.TimerCreated](h, nil) }, d+50*time.Millisecond)
	require.Equal(e.t, "Timer fired, then: done", e.completed("timer-recovery-after-instance"))
}

func zeroDurationTimer(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "ZeroTimer", timerThenOutput(0, "zero-timer-fired"))
	e.start(r, nil)
	e.startOrch("inst-zero", "ZeroTimer", "")
	require.Equal(e.t, "zero-timer-fired", e.completed("inst-zero"))
}

func timerCancellation(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TimerCancel", timerThenOutput(100*time.Millisecond, "timer-completed"))
	e.start(r, nil)
	e.startOrch("inst-cancel", "TimerCancel", "")
	require.Equal(e.t, "timer-completed", e.completed("inst-cancel"))
}

func multipleTimersRecoveryAfterCrash(e *env) {
	const d = 100 * time.Millisecond
	fn := func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		t1 := durable.NewTimer(ctx, d)
		t2 := durable.NewTimer(ctx, d+50*time.Millisecond)
		t3 := durable.NewTimer(ctx, d+100*time.Millisecond)
		for _, t := range []*durable.Future[struct{}]{t1, t2, t3} {
			_, _ = t.Await()
		}
		return "all-timers-fired", nil
	}
	e.crashAndRecover("multiple-timers-recovery-instance", "MultipleTimersRecoveryTest", fn,
		func(h []duroxide.Event) bool { return countKind[duroxide.TimerCreated](h) == 3 }, 0)
	require.Equal(e.t, "all-timers-fired", e.completed("multiple-timers-recovery-instance"))
}

func timerFiresAtCorrectTimeAfterPreviousTimer(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "SlowActivity", func(ctx durable.ActivityContext, in string) (string, error) {
		var ms int
		if _, err := fmt.Sscan(in, &ms); err != nil {
			ms = 2000
		}
		time.Sleep(time.Duration(ms) * time.Millisecond)
		return "activity_done", nil
	})
	orch(e.t, r, "TimerFireTimeTest", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_, _ = durable.NewTimer(ctx, 100*time.Millisecond).Await()
		_, _ = durable.CallActivity[string](ctx, "SlowActivity", "2000").Await()
		timer := durable.NewTimer(ctx, time.Second)
		a := durable.CallActivity[string](ctx, "SlowActivity", "100")
		if ctx.Select(timer, a) == 0 {
			return "timer_won", nil
		}
		v, err := a.Await()
		if err != nil {
			return "activity_failed: " + err.Error(), nil
		}
		return v, nil
	})
	e.start(r, nil)
	e.startOrch("timer-fire-time-test", "TimerFireTimeTest", "")
	out := e.completed("timer-fire-time-test")
	require.NotEqual(e.t, "timer_won", out, "Timer fired early! The 1-second timer should not beat a 100ms activity.")
	require.Equal(e.t, "activity_done", out)
}
