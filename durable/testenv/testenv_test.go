package testenv_test

import (
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/durable/testenv"
	"github.com/duroxide-go/cdb/duroxide"
)

const approvalTimeout = 30 * 24 * time.Hour

// approval asks for an approval and waits 30 days for it; without one it
// escalates.
func approval(ctx *durable.OrchestrationContext, request string) (string, error) {
	if _, err := durable.CallActivity[string](ctx, "NotifyApprover", request).Await(); err != nil {
		return "", err
	}
	decision := durable.WaitEvent[string](ctx, "Approval")
	timeout := durable.NewTimer(ctx, approvalTimeout)
	if ctx.Select(decision, timeout) == 1 {
		return durable.CallActivity[string](ctx, "Escalate", request).Await()
	}
	d, err := decision.Await()
	return "approved by " + d, err
}

// newApprovalEnv registers approval with real activities that a test
// must never reach: the doubles replace them.
func newApprovalEnv(t *testing.T) *testenv.Env {
	t.Helper()
	reg := durable.NewRegistry()
	if err := durable.RegisterOrchestration(reg, "Approval", approval); err != nil {
		t.Fatal(err)
	}
	real := func(durable.ActivityContext, string) (string, error) {
		return "", errors.New("the real activity ran in a test")
	}
	for _, name := range []string{"NotifyApprover", "Escalate"} {
		if err := reg.AddActivity(name, real); err != nil {
			t.Fatal(err)
		}
	}
	return testenv.New(t, reg, nil)
}

// timerEvents returns the fire times of history's TimerCreated and
// TimerFired events.
func timerEvents(h []duroxide.Event) (created, fired []time.Time) {
	for _, e := range h {
		switch k := e.Kind.(type) {
		case duroxide.TimerCreated:
			created = append(created, time.UnixMilli(int64(k.FireAtMs)).UTC())
		case duroxide.TimerFired:
			fired = append(fired, time.UnixMilli(int64(k.FireAtMs)).UTC())
		}
	}
	return created, fired
}

// The approval never comes: the 30-day timer fires in virtual time and
// the orchestration escalates, with the activity doubles in place of the
// real activities.
func TestApprovalTimesOutAfter30VirtualDays(t *testing.T) {
	env := newApprovalEnv(t)
	var notified atomic.Int32
	env.ReplaceActivity("NotifyApprover", func(_ durable.ActivityContext, in string) (string, error) {
		notified.Add(1)
		return "", nil
	})
	testenv.ReplaceActivityTyped(env, "Escalate", func(_ durable.ActivityContext, in string) (string, error) {
		return "escalated " + in, nil
	})
	start := env.Now()
	wall := time.Now()
	if err := env.StartOrchestration("req-1", "Approval", "PO-42"); err != nil {
		t.Fatal(err)
	}
	st, err := env.WaitForOrchestration("req-1")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("30-day approval timeout completed in %v of wall time (virtual %v)", time.Since(wall), env.Now().Sub(start))

	if st.State != durable.StateCompleted || st.Output != "escalated PO-42" {
		t.Fatalf("status = %v %q, want Completed %q", st.State, st.Output, "escalated PO-42")
	}
	if n := notified.Load(); n != 1 {
		t.Errorf("NotifyApprover double ran %d times, want 1", n)
	}
	want := start.Add(approvalTimeout)
	if env.Now() != want { // UTC, as DefaultStart: comparable with ==
		t.Errorf("virtual clock at %v, want %v (start + 30 days)", env.Now(), want)
	}
	h, err := env.History("req-1")
	if err != nil {
		t.Fatal(err)
	}
	created, fired := timerEvents(h)
	if len(created) != 1 || !created[0].Equal(want) || len(fired) != 1 || !fired[0].Equal(want) {
		t.Errorf("timer events created %v fired %v, want one each at %v", created, fired, want)
	}
	if last := h[len(h)-1]; time.UnixMilli(int64(last.TimestampMs)).Before(want) {
		t.Errorf("completion stamped %v, before the timer fired at %v", time.UnixMilli(int64(last.TimestampMs)).UTC(), want)
	}
}

// The approval arrives on virtual day 3: the wait wins the race, the
// timer never fires and Escalate never runs.
func TestApprovalRaisedOnVirtualDay3(t *testing.T) {
	env := newApprovalEnv(t)
	env.ReplaceActivity("NotifyApprover", func(durable.ActivityContext, string) (string, error) { return "", nil })
	start := env.Now()
	if err := env.StartOrchestration("req-2", "Approval", "PO-43"); err != nil {
		t.Fatal(err)
	}
	env.RaiseEventAt(3*24*time.Hour, "req-2", "Approval", "alice")
	st, err := env.WaitForOrchestration("req-2")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != durable.StateCompleted || st.Output != "approved by alice" {
		t.Fatalf("status = %v %q, want Completed %q", st.State, st.Output, "approved by alice")
	}
	if want := start.Add(3 * 24 * time.Hour); !env.Now().Equal(want) {
		t.Errorf("virtual clock at %v, want %v (day 3)", env.Now(), want)
	}
	h, err := env.History("req-2")
	if err != nil {
		t.Fatal(err)
	}
	created, fired := timerEvents(h)
	if len(created) != 1 || !created[0].Equal(start.Add(approvalTimeout)) || len(fired) != 0 {
		t.Errorf("timer events created %v fired %v, want one created for day 30 and none fired", created, fired)
	}
	var raised bool
	for _, e := range h {
		if k, ok := e.Kind.(duroxide.ExternalEvent); ok && k.Name == "Approval" {
			raised = true
			if at := time.UnixMilli(int64(e.TimestampMs)).UTC(); !at.Equal(start.Add(3 * 24 * time.Hour)) {
				t.Errorf("ExternalEvent stamped %v, want day 3", at)
			}
		}
	}
	if !raised {
		t.Errorf("history has no Approval ExternalEvent: %v", h)
	}
}

// An orchestration waiting for an event nobody raises cannot finish: the
// environment says so at once instead of hanging.
func TestWaitReportsStalledOrchestration(t *testing.T) {
	reg := durable.NewRegistry()
	err := durable.RegisterOrchestration(reg, "WaitForever", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.WaitEvent[string](ctx, "Never").Await()
	})
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.New(t, reg, nil)
	if err := env.StartOrchestration("stuck", "WaitForever", ""); err != nil {
		t.Fatal(err)
	}
	st, err := env.WaitForOrchestration("stuck")
	if !errors.Is(err, testenv.ErrStalled) {
		t.Fatalf("err = %v, want ErrStalled", err)
	}
	if st == nil || st.State != durable.StateRunning {
		t.Fatalf("status = %+v, want Running", st)
	}
}

// UTCNow and a loop of daily timers read the virtual clock: two months
// of daily reminders run through 61 timers.
func TestDailyTimersAndUTCNowFollowTheVirtualClock(t *testing.T) {
	reg := durable.NewRegistry()
	err := durable.RegisterOrchestration(reg, "Daily", func(ctx *durable.OrchestrationContext, days int) (string, error) {
		first, err := ctx.UTCNow().Await()
		if err != nil {
			return "", err
		}
		for range days {
			if _, err := durable.NewTimer(ctx, 24*time.Hour).Await(); err != nil {
				return "", err
			}
			if _, err := durable.CallActivity[string](ctx, "Remind", "").Await(); err != nil {
				return "", err
			}
		}
		last, err := ctx.UTCNow().Await()
		if err != nil {
			return "", err
		}
		return first.UTC().Format(time.RFC3339) + " " + last.UTC().Format(time.RFC3339), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	const days = 61
	env := testenv.New(t, reg, nil)
	var reminders atomic.Int32
	env.ReplaceActivity("Remind", func(durable.ActivityContext, string) (string, error) { reminders.Add(1); return "", nil })
	wall := time.Now()
	if err := env.StartOrchestration("daily", "Daily", days); err != nil {
		t.Fatal(err)
	}
	st, err := env.WaitForOrchestration("daily")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d daily timers completed in %v of wall time", days, time.Since(wall))
	want := testenv.DefaultStart.Format(time.RFC3339) + " " + testenv.DefaultStart.AddDate(0, 0, days).Format(time.RFC3339)
	if st.State != durable.StateCompleted || st.Output != want {
		t.Fatalf("status = %v %q, want Completed %q", st.State, st.Output, want)
	}
	if n := reminders.Load(); n != days {
		t.Errorf("Remind ran %d times, want %d", n, days)
	}
	h, err := env.History("daily")
	if err != nil {
		t.Fatal(err)
	}
	if _, fired := timerEvents(h); len(fired) != days {
		t.Errorf("%d TimerFired events, want %d", len(fired), days)
	}
	if !strings.HasPrefix(st.Output, "2025-01-01T00:00:00Z") {
		t.Errorf("output %q does not start at the virtual start", st.Output)
	}
}

// Retry backoffs are durable timers, so they pass in virtual time too: a
// double failing twice with a 6-hour backoff succeeds 12 virtual hours in.
func TestRetryBackoffRunsInVirtualTime(t *testing.T) {
	reg := durable.NewRegistry()
	policy := &durable.RetryPolicy{MaxAttempts: 3, Backoff: durable.FixedBackoff(6 * time.Hour)}
	err := durable.RegisterOrchestration(reg, "Sync", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.CallActivity[string](ctx, "CallPartner", "", durable.ActivityOptions{Retry: policy}).Await()
	})
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.New(t, reg, nil)
	var calls atomic.Int32
	env.ReplaceActivity("CallPartner", func(durable.ActivityContext, string) (string, error) {
		if calls.Add(1) < 3 {
			return "", errors.New("partner unavailable")
		}
		return "synced", nil
	})
	if err := env.StartOrchestration("sync", "Sync", ""); err != nil {
		t.Fatal(err)
	}
	st, err := env.WaitForOrchestration("sync")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != durable.StateCompleted || st.Output != "synced" || calls.Load() != 3 {
		t.Fatalf("status = %v %q after %d calls, want Completed %q after 3", st.State, st.Output, calls.Load(), "synced")
	}
	if want := testenv.DefaultStart.Add(12 * time.Hour); !env.Now().Equal(want) {
		t.Errorf("virtual clock at %v, want %v", env.Now(), want)
	}
}

// A monthly loop that continues as new each month runs its executions to
// the end; WaitForOrchestration waits through every continue-as-new.
func TestContinueAsNewMonthlyLoop(t *testing.T) {
	reg := durable.NewRegistry()
	err := durable.RegisterOrchestration(reg, "Monthly", func(ctx *durable.OrchestrationContext, month int) (string, error) {
		if month == 3 {
			return "billed 3 months", nil
		}
		if _, err := durable.NewTimer(ctx, 30*24*time.Hour).Await(); err != nil {
			return "", err
		}
		if _, err := durable.CallActivity[string](ctx, "Bill", "").Await(); err != nil {
			return "", err
		}
		next, err := durable.Encode(month + 1)
		if err != nil {
			return "", err
		}
		return "", durable.ContinueAsNew(ctx, next)
	})
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.New(t, reg, nil)
	var bills atomic.Int32
	env.ReplaceActivity("Bill", func(durable.ActivityContext, string) (string, error) { bills.Add(1); return "", nil })
	if err := env.StartOrchestration("billing", "Monthly", 0); err != nil {
		t.Fatal(err)
	}
	st, err := env.WaitForOrchestration("billing")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != durable.StateCompleted || st.Output != "billed 3 months" || bills.Load() != 3 {
		t.Fatalf("status = %v %q after %d bills, want Completed after 3", st.State, st.Output, bills.Load())
	}
	if want := testenv.DefaultStart.Add(90 * 24 * time.Hour); !env.Now().Equal(want) {
		t.Errorf("virtual clock at %v, want %v", env.Now(), want)
	}
}

// EnqueueEventAt delivers a queue message at its virtual time, and an
// event due at the same instant as a timer arrives after it: the timer
// wins the race.
func TestEnqueueEventAtAndTimerTie(t *testing.T) {
	reg := durable.NewRegistry()
	err := durable.RegisterOrchestration(reg, "Tie", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		early, err := durable.DequeueEvent[string](ctx, "inbox").Await()
		if err != nil {
			return "", err
		}
		if _, err := durable.NewTimer(ctx, time.Hour).Await(); err != nil {
			return "", err
		}
		late := durable.WaitEvent[string](ctx, "Late")
		if ctx.Select(late, durable.NewTimer(ctx, time.Hour)) == 0 {
			return early + ", event first", nil
		}
		return early + ", timer first", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.New(t, reg, nil)
	if err := env.StartOrchestration("tie", "Tie", ""); err != nil {
		t.Fatal(err)
	}
	env.EnqueueEventAt(time.Hour, "tie", "inbox", "hello")
	env.RaiseEventAt(3*time.Hour, "tie", "Late", "")
	st, err := env.WaitForOrchestration("tie")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != durable.StateCompleted || st.Output != "hello, timer first" {
		t.Fatalf("status = %v %q, want Completed %q", st.State, st.Output, "hello, timer first")
	}
	if want := testenv.DefaultStart.Add(3 * time.Hour); env.Now() != want {
		t.Errorf("virtual clock at %v, want %v", env.Now(), want)
	}
}

// Code that does not replay its own history (here it branches on a
// counter outside the context) is held by the runtime; the environment
// reports it at once rather than moving the clock through its backoffs.
func TestWaitReportsBlockedOrchestration(t *testing.T) {
	reg := durable.NewRegistry()
	var runs atomic.Int32
	err := durable.RegisterOrchestration(reg, "Flaky", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if runs.Add(1) == 1 { //durablecheck:ignore nondeterministic on purpose: the test needs a replay mismatch
			_, err := durable.NewTimer(ctx, time.Hour).Await()
			return "", err
		}
		return durable.CallActivity[string](ctx, "Other", "").Await()
	})
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.New(t, reg, &testenv.Options{Runtime: &durable.Options{Logger: slog.New(slog.DiscardHandler)}})
	if err := env.StartOrchestration("flaky", "Flaky", ""); err != nil {
		t.Fatal(err)
	}
	st, err := env.WaitForOrchestration("flaky")
	if !errors.Is(err, testenv.ErrBlocked) {
		t.Fatalf("err = %v, want ErrBlocked", err)
	}
	if st.State != durable.StateBlocked || st.BlockedReason == "" {
		t.Fatalf("status = %v (reason %q), want Blocked with a reason", st.State, st.BlockedReason)
	}
	t.Logf("blocked: %s", st.BlockedReason)
}
