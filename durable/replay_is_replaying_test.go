package durable

// Port of duroxide 0.1.29 tests/replay_engine/is_replaying.rs: the
// context's replay flag.

import "testing"

// assertAtStart checks what IsReplaying returned when the function began.
func assertAtStart(t *testing.T, h *isReplayingHandler, want bool, why string) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.atStart == nil {
		t.Fatalf("%s: the orchestration never ran", why)
	}
	if *h.atStart != want {
		t.Fatalf("%s: IsReplaying at start = %v, want %v", why, *h.atStart, want)
	}
}

func init() {
	registerReplaySuite("is_replaying",
		// With OrchestrationStarted persisted, the code first runs while that
		// event is replayed, so it sees IsReplaying true.
		replayCase{"fresh_execution_not_replaying", func(t *testing.T) {
			e := newTestEngineWithPersistedLen(histOf(evStarted(1)), 1)
			h := &isReplayingHandler{}
			_ = executeTurn(e, h.fn)
			assertAtStart(t, h, true, "With persisted_len=1, is_replaying starts as true")
		}},
		replayCase{"replay_is_replaying", func(t *testing.T) {
			e := newTestEngineWithPersistedLen(histOf(
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evActivityCompleted(3, 2, "result"),
			), 3)
			r := executeTurn(e, hSingleActivity("Task", "input"))
			assertTurnCompleted(t, r, "result")
		}},
		// Once all persisted history is consumed, IsReplaying is false.
		replayCase{"transitions_after_history", func(t *testing.T) {
			var beforeNew, afterFirst *bool
			h := func(ctx *OrchestrationContext, _ string) (string, error) {
				if _, err := CallActivity[string](ctx, "First", "input").Await(); err != nil {
					return "", err
				}
				v := ctx.IsReplaying()
				beforeNew = &v
				w := ctx.IsReplaying()
				afterFirst = &w
				return "done", nil
			}
			e := newTestEngineWithPersistedLen(histOf(
				evStarted(1),
				evActivityScheduled(2, "First", "input"),
				evActivityCompleted(3, 2, "result"),
			), 3)
			r := executeTurn(e, h)
			assertTurnCompleted(t, r, "done")
			if beforeNew == nil || afterFirst == nil {
				t.Fatal("the orchestration did not get past its first activity")
			}
			if *afterFirst {
				t.Fatal("Should not be replaying after all history consumed")
			}
		}},
		// Nothing persisted: the first turn is not a replay.
		replayCase{"fresh_start_with_zero_persisted", func(t *testing.T) {
			e := newTestEngineWithPersistedLen(histOf(evStarted(1)), 0)
			h := &isReplayingHandler{}
			r := executeTurn(e, h.fn)
			assertTurnCompleted(t, r, "done")
			assertAtStart(t, h, false, "Zero persisted history means not replaying")
		}},
	)
}
