package durable

// Port of duroxide 0.1.29 tests/replay_engine/panic_handling.rs: a panic in
// orchestration code fails the turn as Application{Panicked}.

import "testing"

func init() {
	registerReplaySuite("panic_handling",
		replayCase{"panic_string", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			r := executeTurn(e, hPanic("oops something went wrong"))
			assertTurnPanicked(t, r)
			assertTurnFailedWithMessage(t, r, "oops something went wrong")
			if got := displayMessage(r.Details); got != "orchestration panicked: oops something went wrong" {
				t.Fatalf("panic message: got %q", got)
			}
		}},
		// Rust's panic!("{}", 42). Go can panic with the int itself, the
		// non-string payload the Rust test is named for; its value must
		// still reach the message.
		replayCase{"panic_other", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			r := executeTurn(e, func(*OrchestrationContext, string) (string, error) { panic(42) })
			assertTurnPanicked(t, r)
			assertTurnFailedWithMessage(t, r, "42")
		}},
		// A panic after a replayed activity completes.
		replayCase{"panic_during_await", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evActivityCompleted(3, 2, "result"),
			))
			r := executeTurn(e, func(ctx *OrchestrationContext, _ string) (string, error) {
				_, _ = CallActivity[string](ctx, "Task", "input").Await()
				panic("panic after activity")
			})
			assertTurnPanicked(t, r)
			assertTurnFailedWithMessage(t, r, "panic after activity")
		}},
	)
}
