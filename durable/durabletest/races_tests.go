package durabletest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// racesTests ports tests/races_tests.rs.
func racesTests() []sample {
	return []sample{
		{name: "wait_external_completes_fs", run: waitExternalCompletes},
		{name: "race_external_vs_timer_ordering_fs", run: raceExternalVsTimerOrdering},
		{name: "race_event_vs_timer_event_wins_fs", run: raceEventVsTimerEventWins},
	}
}

func waitExternalCompletes(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "WaitExternal", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		data, err := durable.WaitEvent[string](ctx, "Only").Await()
		return "only=" + data, err
	})
	e.start(r, &durable.Options{MinPollInterval: 10 * time.Millisecond})
	d := e.raiseWhenSubscribed("inst-wait-1", "Only", "payload")
	e.startOrch("inst-wait-1", "WaitExternal", "")
	require.Equal(e.t, "only=payload", e.completed("inst-wait-1"))
	<-d
	h := e.executionHistory("inst-wait-1", 1)
	require.Len(e.t, h, 4)
	require.True(e.t, isKind[duroxide.OrchestrationStarted](h[0]))
	require.True(e.t, isKind[duroxide.ExternalSubscribed](h[1]))
	require.True(e.t, isKind[duroxide.ExternalEvent](h[2]))
	require.True(e.t, isKind[duroxide.OrchestrationCompleted](h[3]))
}

// The event is raised 20 ms after the subscription is visible, as in Rust;
// the 10 ms timer was created in the same turn, so it is due first.
func raceExternalVsTimerOrdering(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "RaceOrchestration", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		t := durable.NewTimer(ctx, 10*time.Millisecond)
		ev := durable.WaitEvent[string](ctx, "Race")
		if ctx.Select(t, ev) == 0 {
			return "timer", nil
		}
		return "external", nil
	})
	e.start(r, &durable.Options{MinPollInterval: 10 * time.Millisecond})
	done := make(chan struct{})
	go func() {
		defer close(done)
		if e.waitSubscription("inst-race-order-1", "Race") {
			time.Sleep(20 * time.Millisecond)
			_ = e.client().RaiseEvent(e.ctx, "inst-race-order-1", "Race", "ok")
		}
	}()
	e.startOrch("inst-race-order-1", "RaceOrchestration", "")
	require.Equal(e.t, "timer", e.completed("inst-race-order-1"))
	<-done
	h := e.executionHistory("inst-race-order-1", 1)
	it := indexOfKind[duroxide.TimerFired](h)
	require.GreaterOrEqual(e.t, it, 0)
	if ie := indexOfKind[duroxide.ExternalEvent](h); ie >= 0 {
		require.Less(e.t, it, ie, "expected timer to fire before external: %v", h)
	}
}

// Rust's timer is 100 ms; the event is raised as soon as the subscription
// is visible. On a loaded machine 100 ms can pass before the raise lands,
// so the timer here is 30 s (the race's winner and the assertions are
// Rust's).
func raceEventVsTimerEventWins(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "RaceEventVsTimer", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ev := durable.WaitEvent[string](ctx, "Race")
		t := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
			if _, err := durable.NewTimer(ctx, 30*time.Second).Await(); err != nil {
				return "", err
			}
			return "timer", nil
		})
		if ctx.Select(ev, t) == 0 {
			return ev.Await()
		}
		return t.Await()
	})
	e.start(r, &durable.Options{MinPollInterval: 10 * time.Millisecond})
	d := e.raiseWhenSubscribed("inst-race-order-2", "Race", "ok")
	e.startOrch("inst-race-order-2", "RaceEventVsTimer", "")
	require.Equal(e.t, "ok", e.completed("inst-race-order-2"))
	<-d
	h := e.executionHistory("inst-race-order-2", 1)
	ie := indexOfKind[duroxide.ExternalEvent](h)
	require.GreaterOrEqual(e.t, ie, 0)
	if it := indexOfKind[duroxide.TimerFired](h); it >= 0 {
		require.Less(e.t, ie, it, "expected external before timer: %v", h)
	}
}
