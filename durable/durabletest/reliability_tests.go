package durabletest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// reliabilityTests ports tests/reliability_tests.rs: duplicate work items
// enqueued straight into the provider are deduplicated (or, for external
// events, both recorded for audit).
func reliabilityTests() []sample {
	return []sample{
		{name: "external_duplicate_workitems_dedup", run: func(e *env) { duplicateExternal(e, "inst-ext-dup") }},
		{name: "timer_duplicate_workitems_dedup", run: func(e *env) { duplicateTimerFired(e, "inst-timer-dup", 100*time.Millisecond) }},
		{name: "activity_duplicate_completion_workitems_dedup", run: activityDuplicateCompletionDedup},
		{name: "crash_after_dequeue_before_append_completion", run: func(e *env) { duplicateExternal(e, "inst-crash-before-append") }},
		{name: "crash_after_append_before_ack_timer", run: func(e *env) { duplicateTimerFired(e, "inst-crash-after-append", 50*time.Millisecond) }},
	}
}

// completedWithOutput waits for OrchestrationCompleted{output} in history.
func (e *env) completedWithOutput(instance, output string) bool {
	return e.waitHistory(instance, func(h []duroxide.Event) bool {
		return countEvents(h, func(ev duroxide.Event) bool {
			k, ok := ev.Kind.(duroxide.OrchestrationCompleted)
			return ok && k.Output == output
		}) > 0
	})
}

// Rust's two enqueues land before the next fetch, so one turn sees both
// duplicates and records both. A Go runtime may fetch between the two
// enqueues (the first completes the instance; the second is then dropped
// for a finished instance), so the runtime is stopped while they are
// enqueued and restarted after, like a crash between dequeue and append.
func duplicateExternal(e *env, inst string) {
	r := durable.NewRegistry()
	orch(e.t, r, "WaitEvt", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.WaitEvent[string](ctx, "Evt").Await()
	})
	rt := e.start(r, nil)
	e.startOrch(inst, "WaitEvt", "")
	require.True(e.t, e.waitSubscription(inst, "Evt"))
	shutdownRuntime(e, rt)
	wi := duroxide.ExternalRaisedItem{Instance: inst, Name: "Evt", Data: "ok"}
	_ = e.p.EnqueueForOrchestrator(e.ctx, wi, 0)
	_ = e.p.EnqueueForOrchestrator(e.ctx, wi, 0)
	e.start(r, nil)
	require.True(e.t, e.completedWithOutput(inst, "ok"), "timeout waiting for completion")
	n := countEvents(e.history(inst), func(ev duroxide.Event) bool {
		k, ok := ev.Kind.(duroxide.ExternalEvent)
		return ok && k.Name == "Evt"
	})
	require.Equal(e.t, 2, n, "expected 2 ExternalEvents (both materialized for audit)")
}

// The runtime's own TimerFired may land before, between or after the two
// duplicates; in every order exactly one TimerFired is recorded.
func duplicateTimerFired(e *env, inst string, d time.Duration) {
	r := durable.NewRegistry()
	orch(e.t, r, "OneTimer", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if _, err := durable.NewTimer(ctx, d).Await(); err != nil {
			return "", err
		}
		return "t", nil
	})
	e.start(r, nil)
	e.startOrch(inst, "OneTimer", "")
	require.True(e.t, e.waitHistory(inst, anyKind[duroxide.TimerCreated]))
	var id, fireAt uint64
	for _, ev := range e.history(inst) {
		if k, ok := ev.Kind.(duroxide.TimerCreated); ok {
			id, fireAt = ev.EventID, k.FireAtMs
			break
		}
	}
	wi := duroxide.TimerFiredItem{Instance: inst, ExecutionID: 1, ID: id, FireAtMs: fireAt}
	_ = e.p.EnqueueForOrchestrator(e.ctx, wi, 0)
	_ = e.p.EnqueueForOrchestrator(e.ctx, wi, 0)
	require.True(e.t, e.completedWithOutput(inst, "t"), "timeout waiting for completion")
	require.Equal(e.t, 1, countKind[duroxide.TimerFired](e.history(inst)), "expected 1 TimerFired")
}

func activityDuplicateCompletionDedup(e *env) {
	const inst = "inst-act-dup"
	r := durable.NewRegistry()
	act(e.t, r, "SlowEcho", func(ctx durable.ActivityContext, in string) (string, error) {
		sleepCtx(ctx, 200*time.Millisecond)
		return in, nil
	})
	orch(e.t, r, "OneSlowAct", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.CallActivity[string](ctx, "SlowEcho", "x").Await()
	})
	e.start(r, nil)
	e.startOrch(inst, "OneSlowAct", "")
	var id uint64
	require.True(e.t, e.waitHistory(inst, func(h []duroxide.Event) bool {
		for _, ev := range h {
			if k, ok := ev.Kind.(duroxide.ActivityScheduled); ok && k.Name == "SlowEcho" {
				id = ev.EventID
				return true
			}
		}
		return false
	}))
	wi := duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: id, Result: "x"}
	_ = e.p.EnqueueForOrchestrator(e.ctx, wi, 0)
	_ = e.p.EnqueueForOrchestrator(e.ctx, wi, 0)
	require.True(e.t, e.completedWithOutput(inst, "x"), "timeout waiting for completion")
	n := countEvents(e.history(inst), func(ev duroxide.Event) bool {
		return isKind[duroxide.ActivityCompleted](ev) && ev.SourceEventID != nil && *ev.SourceEventID == id
	})
	require.Equal(e.t, 1, n, "expected 1 ActivityCompleted for id=%d", id)
}
