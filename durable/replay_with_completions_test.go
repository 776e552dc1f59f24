package durable

// Port of duroxide 0.1.29 tests/replay_engine/replay_with_completions.rs:
// histories holding both schedules and their completions.

import (
	"testing"
	"time"
)

func init() {
	registerReplaySuite("replay_with_completions",
		replayCase{"activity_completed_in_history", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "Greet", "Alice"),
				evActivityCompleted(3, 2, "Hello, Alice!"),
			))
			r := executeTurn(e, hSingleActivity("Greet", "Alice"))
			assertTurnCompleted(t, r, "Hello, Alice!")
			assertPendingLen(t, e, 0, "No new actions expected")
		}},
		// The failure reaches the code, which returns it.
		replayCase{"activity_failed_in_history", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "Greet", "Alice"),
				evActivityFailed(3, 2, "service unavailable"),
			))
			r := executeTurn(e, hSingleActivity("Greet", "Alice"))
			assertTurnFailed(t, r)
			assertFailedVariant(t, r, "Application", "service unavailable")
		}},
		replayCase{"timer_fired_in_history", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evTimerCreated(2, 1000), evTimerFired(3, 2, 1000)))
			r := executeTurn(e, hSingleTimer(60*time.Second))
			assertTurnCompleted(t, r, "timer_done")
		}},
		replayCase{"external_received_in_history", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evExternalSubscribed(2, "Approval"),
				evExternalEvent(3, "Approval", "approved-data"),
			))
			r := executeTurn(e, hWaitExternal("Approval"))
			assertTurnCompleted(t, r, "approved-data")
		}},
		replayCase{"sub_orch_completed_in_history", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evSubOrchScheduled(2, "ChildOrch", "sub::2", "child-input"),
				evSubOrchCompleted(3, 2, "child-result"),
			))
			r := executeTurn(e, hSubOrch("ChildOrch", "child-input"))
			assertTurnCompleted(t, r, "child-result")
		}},
	)
}
