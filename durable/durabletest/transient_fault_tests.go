package durabletest

import (
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// transientFaultTests are Go-only: the faults a real store produces every
// day (a 503, 408, reset or a burst of 429s) on a lock renewal or an ack.
// A transient error is never a lost lock, never loses or duplicates a
// result, and never fails an instance; a lock reported lost drops the
// result without acking the item empty. The faults come from a
// FaultyProvider, so every provider runs them.
func transientFaultTests() []sample {
	return []sample{
		{name: "activity_renewal_transient_errors_keep_the_result", run: activityRenewalTransientErrorsKeepTheResult},
		{name: "activity_lost_lock_drops_the_result_without_an_empty_ack", run: activityLostLockDropsTheResult},
		{name: "orchestration_renewal_transient_errors_keep_the_turn", run: orchestrationRenewalTransientErrorsKeepTheTurn},
		{name: "orchestration_ack_transient_burst_does_not_fail_the_instance", run: orchestrationAckTransientBurst},
		{name: "orchestration_ack_transient_errors_outlasting_the_lock_abandon_and_retry", run: orchestrationAckTransientOutlastingTheLock},
		{name: "session_renewal_transient_errors_keep_the_session", run: sessionRenewalTransientErrorsKeepTheSession},
	}
}

// shortWorkerLock renews a worker lock every second (2 s timeout).
var shortWorkerLock = &durable.Options{WorkerLockTimeout: 2 * time.Second, WorkerLockRenewalBuffer: time.Second}

// slowActivityOrchestration registers "Slow" (counting its runs in runs,
// sleeping d unless cancelled) and "CallSlow", which returns its result.
func slowActivityOrchestration(e *env, runs *atomic.Int32, d time.Duration) *durable.Registry {
	r := durable.NewRegistry()
	act(e.t, r, "Slow", func(ctx durable.ActivityContext, in string) (string, error) {
		runs.Add(1)
		sleepCtx(ctx, d)
		if err := ctx.Err(); err != nil {
			return "", err
		}
		return "slow:" + in, nil
	})
	orch(e.t, r, "CallSlow", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallActivity[string](ctx, "Slow", in).Await()
	})
	return r
}

// activityCompletions counts the ActivityCompleted events in history.
func activityCompletions(h []duroxide.Event) int {
	n := 0
	for _, ev := range h {
		if isKind[duroxide.ActivityCompleted](ev) {
			n++
		}
	}
	return n
}

// Three renewals in a row fail with a 503 while the activity runs past two
// renewal intervals: the lock is still ours, so the activity goes on and
// its result is delivered once.
func activityRenewalTransientErrorsKeepTheResult(e *env) {
	fp := e.faulty()
	var runs atomic.Int32
	r := slowActivityOrchestration(e, &runs, 2500*time.Millisecond)
	fp.FailTransiently(RenewWorkItemLock, 3)
	e.start(r, shortWorkerLock)
	e.startOrch("renew-transient", "CallSlow", "x")
	require.Equal(e.t, "slow:x", e.completed("renew-transient"))
	require.Zero(e.t, fp.TransientLeft(RenewWorkItemLock), "the renewals must have met the faults")
	require.Equal(e.t, int32(1), runs.Load(), "the activity must run once")
	require.Equal(e.t, 1, activityCompletions(e.history("renew-transient")))
	require.Zero(e.t, fp.EmptyAcks(), "no work item may be acked without its completion")
}

// A renewal reports the lock lost while the store in fact still holds it
// (the FaultyProvider lies): the runtime must cancel the activity and drop
// its result without acking the item empty. Acking it empty would delete
// the work and leave the orchestration waiting for ever; dropping it lets
// the lock expire, and the activity runs again and completes.
func activityLostLockDropsTheResult(e *env) {
	fp := e.faulty()
	var runs atomic.Int32
	r := slowActivityOrchestration(e, &runs, 2500*time.Millisecond)
	fp.FailNext(RenewWorkItemLock)
	e.start(r, shortWorkerLock)
	e.startOrch("renew-lost", "CallSlow", "y")
	require.Equal(e.t, "slow:y", e.completed("renew-lost"))
	require.Zero(e.t, fp.EmptyAcks(), "a lost lock must not ack the work item empty")
	require.Equal(e.t, int32(2), runs.Load(), "the cancelled run, then the run after the lock expired")
	require.Equal(e.t, 1, activityCompletions(e.history("renew-lost")))
}

// An orchestration turn runs past two renewal intervals while the first
// renewals fail with a 503: the lock is still ours, so the turn commits
// once. (Giving up on the first failure let the lock expire, and the turn
// ran again elsewhere.)
func orchestrationRenewalTransientErrorsKeepTheTurn(e *env) {
	fp := e.faulty()
	var turns atomic.Int32
	r := durable.NewRegistry()
	orch(e.t, r, "SlowTurn", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		//durablecheck:ignore counts turns for the test's assertion
		turns.Add(1)
		//durablecheck:ignore a turn slower than its lock is the test's subject
		time.Sleep(2500 * time.Millisecond)
		return "turned", nil
	})
	fp.FailTransiently(RenewOrchestrationItemLock, 2)
	e.start(r, &durable.Options{OrchestratorLockTimeout: 2 * time.Second, OrchestratorLockRenewalBuffer: time.Second})
	e.startOrch("orch-renew-transient", "SlowTurn", "")
	require.Equal(e.t, "turned", e.completed("orch-renew-transient"))
	require.Zero(e.t, fp.TransientLeft(RenewOrchestrationItemLock), "the renewals must have met the faults")
	require.Equal(e.t, int32(1), turns.Load(), "the turn must run once")
}

// Eight acks in a row fail with a throttle (well under a second of
// retries): the instance must complete, not fail.
func orchestrationAckTransientBurst(e *env) {
	fp := e.faulty()
	r := durable.NewRegistry()
	orch(e.t, r, "Plain", func(*durable.OrchestrationContext, string) (string, error) { return "ok", nil })
	fp.FailTransiently(AckOrchestrationItem, 8)
	e.start(r, nil)
	e.startOrch("ack-burst", "Plain", "")
	require.Equal(e.t, "ok", e.completed("ack-burst"))
	require.Zero(e.t, fp.TransientLeft(AckOrchestrationItem))
}

// Acks keep failing transiently for longer than the lock holds: the item
// is abandoned and the turn runs again later, until an ack gets through;
// the instance completes.
func orchestrationAckTransientOutlastingTheLock(e *env) {
	fp := e.faulty()
	var turns atomic.Int32
	r := durable.NewRegistry()
	orch(e.t, r, "Plain", func(*durable.OrchestrationContext, string) (string, error) {
		//durablecheck:ignore counts turns for the test's assertion
		turns.Add(1)
		return "ok", nil
	})
	fp.FailTransiently(AckOrchestrationItem, 20)
	e.start(r, &durable.Options{OrchestratorLockTimeout: 2 * time.Second, OrchestratorLockRenewalBuffer: time.Second})
	e.startOrch("ack-outlast", "Plain", "")
	require.Equal(e.t, "ok", e.completed("ack-outlast"))
	require.Zero(e.t, fp.TransientLeft(AckOrchestrationItem))
	require.Greater(e.t, turns.Load(), int32(1), "the faults outlasted one lock: the turn must have run again")
}

// sessionPinnedRegistry registers "Pinned" (returning who:input, the
// first run of it sleeping first when slow is set, and counting the runs
// in flight in running, the highest count in peak) and "SessionPair",
// which runs two Pinned activities on session "s" at once.
func sessionPinnedRegistry(e *env, who string, slow time.Duration, runs, running, peak *atomic.Int32) *durable.Registry {
	r := durable.NewRegistry()
	act(e.t, r, "Pinned", func(ctx durable.ActivityContext, in string) (string, error) {
		raiseTo(peak, running.Add(1))
		defer running.Add(-1)
		if runs.Add(1) == 1 {
			sleepCtx(ctx, slow)
		}
		if err := ctx.Err(); err != nil {
			return "", err
		}
		return who + ":" + in, nil
	})
	orch(e.t, r, "SessionPair", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		first := durable.CallActivity[string](ctx, "Pinned", "1", durable.ActivityOptions{Session: "s"})
		second := durable.CallActivity[string](ctx, "Pinned", "2", durable.ActivityOptions{Session: "s"})
		a, err := first.Await()
		if err != nil {
			return "", err
		}
		b, err := second.Await()
		if err != nil {
			return "", err
		}
		return a + "," + b, nil
	})
	return r
}

// Runtime A claims session "s" for the first of two activities, which
// runs past its session lock (4 s, renewed every 2 s) while A's first
// three session renewals fail with a 503, and A has one worker slot.
// Runtime B polls all along. The session is still A's: B never claims
// it, the second activity waits for A's slot and the session's
// activities never run at once. (Giving up on a failed renewal until the
// next tick let the lock lapse, and B ran the second activity while A
// still ran the first.)
func sessionRenewalTransientErrorsKeepTheSession(e *env) {
	fp := e.faulty()
	var runsA, runsB, running, peak atomic.Int32
	const slow = 5500 * time.Millisecond
	regA := sessionPinnedRegistry(e, "A", slow, &runsA, &running, &peak)
	regB := sessionPinnedRegistry(e, "B", 0, &runsB, &running, &peak)
	fp.FailTransiently(RenewSessionLock, 3)
	e.start(regA, &durable.Options{WorkerConcurrency: 1, SessionLockTimeout: 4 * time.Second,
		SessionLockRenewalBuffer: 2 * time.Second, SessionIdleTimeout: time.Minute})
	e.startOrch("session-renew-transient", "SessionPair", "")
	e.waitFor("A runs the session's first activity", func() bool { return runsA.Load() == 1 })
	e.startOn(fp.Inner(), regB, nil)
	out := e.completed("session-renew-transient")
	require.Equal(e.t, "A:1,A:2", out, "the session must stay with runtime A")
	require.Zero(e.t, runsB.Load(), "runtime B must not run an activity of A's session")
	require.Equal(e.t, int32(1), peak.Load(), "the session's activities must not run at once")
	require.Equal(e.t, 2, activityCompletions(e.history("session-renew-transient")))
	require.Zero(e.t, fp.TransientLeft(RenewSessionLock), "the renewals must have met the faults")
}

// raiseTo raises m to n if n is higher.
func raiseTo(m *atomic.Int32, n int32) {
	for p := m.Load(); n > p; p = m.Load() {
		if m.CompareAndSwap(p, n) {
			return
		}
	}
}
