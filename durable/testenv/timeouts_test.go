package testenv_test

import (
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/durable/testenv"
)

// limitsEnv registers "Waits" (waits for an event that never comes),
// "Steps" (input hour-long steps, one per execution, then "done") and
// "Bounded" (an always failing activity retried hourly within a day).
func limitsEnv(t *testing.T, runs *atomic.Int32) *testenv.Env {
	t.Helper()
	reg := durable.NewRegistry()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(reg.AddOrchestration("Waits", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.WaitEvent[string](ctx, "never").Await()
	}))
	must(reg.AddOrchestration("Steps", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		n, err := strconv.Atoi(in)
		if err != nil || n == 0 {
			return "done", err
		}
		if _, err := durable.NewTimer(ctx, time.Hour).Await(); err != nil {
			return "", err
		}
		return "", durable.ContinueAsNew(ctx, strconv.Itoa(n-1))
	}))
	must(reg.AddOrchestration("Bounded", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		p := durable.NewRetryPolicy(100).WithBackoff(durable.FixedBackoff(time.Hour))
		p.ScheduleToClose = 24 * time.Hour
		return durable.CallActivity[string](ctx, "Fails", in, durable.ActivityOptions{Retry: p}).Await()
	}))
	must(reg.AddActivity("Fails", func(durable.ActivityContext, string) (string, error) {
		runs.Add(1)
		return "", errors.New("broken")
	}))
	return testenv.New(t, reg, nil)
}

func startWith(t *testing.T, env *testenv.Env, instance, orchestration, input string, o durable.StartOptions) {
	t.Helper()
	if err := env.Client().StartOrchestration(t.Context(), instance, orchestration, input, o); err != nil {
		t.Fatal(err)
	}
}

// waitTimedOut waits for instance and requires it failed with ErrTimedOut.
func waitTimedOut(t *testing.T, env *testenv.Env, instance string) *durable.OrchestrationStatus {
	t.Helper()
	st, err := env.WaitForOrchestration(instance)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := durable.DecodeOutput[string](st); st.State != durable.StateFailed || !errors.Is(err, durable.ErrTimedOut) {
		t.Fatalf("status %v %q (%v), want Failed matching ErrTimedOut", st.State, st.FailureMessage(), err)
	}
	return st
}

// A day-long execution timeout fires in virtual time: the instance fails
// a virtual day after it started.
func TestExecutionTimeoutInVirtualTime(t *testing.T) {
	var runs atomic.Int32
	env := limitsEnv(t, &runs)
	start := env.Now()
	startWith(t, env, "waits", "Waits", "", durable.StartOptions{ExecutionTimeout: 24 * time.Hour})
	st := waitTimedOut(t, env, "waits")
	if want := "canceled: timeout: execution timeout of 24h0m0s exceeded"; st.FailureMessage() != want {
		t.Errorf("failure %q, want %q", st.FailureMessage(), want)
	}
	if got := env.Now().Sub(start); got != 24*time.Hour {
		t.Errorf("virtual clock moved %v, want 24h", got)
	}
}

// Five hour-long executions: a 90-minute execution timeout lets each
// finish; a 150-minute instance timeout ends the third.
func TestTimeoutsAcrossContinueAsNewInVirtualTime(t *testing.T) {
	var runs atomic.Int32
	env := limitsEnv(t, &runs)
	startWith(t, env, "per-execution", "Steps", "5", durable.StartOptions{ExecutionTimeout: 90 * time.Minute})
	st, err := env.WaitForOrchestration("per-execution")
	if err != nil || st.State != durable.StateCompleted {
		t.Fatalf("per-execution: %v %v %q", err, st.State, st.FailureMessage())
	}
	startWith(t, env, "whole", "Steps", "5", durable.StartOptions{InstanceTimeout: 150 * time.Minute})
	waitTimedOut(t, env, "whole")
	h, err := env.History("whole")
	if err != nil {
		t.Fatal(err)
	}
	if got := h[0].ExecutionID; got != 3 {
		t.Errorf("the instance timeout ended execution %d, want 3", got)
	}
}

// A day's schedule-to-close bounds hourly retries: the call fails with
// ErrTimedOut after a virtual day, and 24 or 25 attempts ran, not 100.
func TestScheduleToCloseInVirtualTime(t *testing.T) {
	var runs atomic.Int32
	env := limitsEnv(t, &runs)
	start := env.Now()
	if err := env.StartOrchestration("bounded", "Bounded", "x"); err != nil {
		t.Fatal(err)
	}
	waitTimedOut(t, env, "bounded")
	if n := runs.Load(); n < 24 || n > 25 {
		t.Errorf("%d attempts, want 24 or 25", n)
	}
	if got := env.Now().Sub(start); got != 24*time.Hour {
		t.Errorf("virtual clock moved %v, want 24h", got)
	}
}

// A start two virtual days ahead runs then, not before.
func TestDelayedStartInVirtualTime(t *testing.T) {
	var runs atomic.Int32
	env := limitsEnv(t, &runs)
	at := env.Now().Add(48 * time.Hour)
	startWith(t, env, "later", "Steps", "0", durable.StartOptions{StartAt: at})
	st, err := env.WaitForOrchestration("later")
	if err != nil || st.State != durable.StateCompleted {
		t.Fatalf("later: %v %v %q", err, st.State, st.FailureMessage())
	}
	h, err := env.History("later")
	if err != nil {
		t.Fatal(err)
	}
	if started := time.UnixMilli(int64(h[0].TimestampMs)); started.Before(at) {
		t.Errorf("started at %v, before its start time %v", started.UTC(), at)
	}
}
