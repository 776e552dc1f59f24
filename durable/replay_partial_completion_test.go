package durable

// Port of duroxide 0.1.29 tests/replay_engine/partial_completion.rs:
// schedules in history whose completions have not arrived.

import (
	"testing"
	"time"
)

func init() {
	registerReplaySuite("partial_completion",
		replayCase{"activity_scheduled_no_completion", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evActivityScheduled(2, "Greet", "Alice")))
			r := executeTurn(e, hSingleActivity("Greet", "Alice"))
			assertTurnContinue(t, r)
			assertPendingLen(t, e, 0, "No new actions expected (already scheduled)")
		}},
		replayCase{"timer_created_no_fire", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evTimerCreated(2, 1000)))
			r := executeTurn(e, hSingleTimer(60*time.Second))
			assertTurnContinue(t, r)
			assertPendingLen(t, e, 0, "No new actions expected (already scheduled)")
		}},
		replayCase{"external_subscribed_no_event", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evExternalSubscribed(2, "Approval")))
			r := executeTurn(e, hWaitExternal("Approval"))
			assertTurnContinue(t, r)
			assertPendingLen(t, e, 0, "No new actions expected (already subscribed)")
		}},
		replayCase{"sub_orch_scheduled_no_completion", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evSubOrchScheduled(2, "ChildOrch", "sub::2", "child-input")))
			r := executeTurn(e, hSubOrch("ChildOrch", "child-input"))
			assertTurnContinue(t, r)
			assertPendingLen(t, e, 0, "No new actions expected (already scheduled)")
		}},
	)
}
