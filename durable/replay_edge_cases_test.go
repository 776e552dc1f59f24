package durable

// Port of duroxide 0.1.29 tests/replay_engine/edge_cases.rs: boundary
// conditions.

import (
	"strings"
	"testing"

	"github.com/duroxide-go/cdb/duroxide"
)

func init() {
	registerReplaySuite("edge_cases",
		replayCase{"zero_delay_timer", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			r := executeTurn(e, hSingleTimer(0))
			assertTurnContinue(t, r)
			if !hasTimerAction(e) {
				t.Fatal("Timer should be pending")
			}
		}},
		replayCase{"empty_activity_input", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "Task", ""),
				evActivityCompleted(3, 2, "result"),
			))
			r := executeTurn(e, hSingleActivity("Task", ""))
			assertTurnCompleted(t, r, "result")
		}},
		replayCase{"large_result_string", func(t *testing.T) {
			large := strings.Repeat("x", 1_000_000)
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evActivityCompleted(3, 2, large),
			))
			r := executeTurn(e, hSingleActivity("Task", "input"))
			if r.Kind != turnCompleted || r.Output != large {
				t.Fatalf("Expected Completed with the 1 MB result, got %v (len %d)", r.Kind, len(r.Output))
			}
		}},
		// The orchestration function runs exactly once per turn.
		replayCase{"handler_invoked_once", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			h := newCountingHandler("done", nil)
			r := executeTurn(e, h.fn)
			assertTurnCompleted(t, r, "done")
			if n := h.count.Load(); n != 1 {
				t.Fatalf("Handler should be invoked exactly once, got %d", n)
			}
		}},
		// Replay goes through history in one invocation, not one per event.
		replayCase{"handler_invoked_once_during_replay", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evActivityCompleted(3, 2, "result"),
			))
			calls := 0
			inner := hSingleActivity("Task", "input")
			r := executeTurn(e, func(ctx *OrchestrationContext, in string) (string, error) {
				calls++
				return inner(ctx, in)
			})
			assertTurnCompleted(t, r, "result")
			if calls != 1 {
				t.Fatalf("Handler should be invoked exactly once during replay, got %d", calls)
			}
		}},
		replayCase{"empty_external_event_data", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evExternalSubscribed(2, "Event"),
				evExternalEvent(3, "Event", ""),
			))
			r := executeTurn(e, hWaitExternal("Event"))
			assertTurnCompleted(t, r, "")
		}},
		// Two events for one subscription: the first is delivered.
		replayCase{"multiple_external_events_same_name", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evExternalSubscribed(2, "Event"),
				evExternalEvent(3, "Event", "first-data"),
				evExternalEvent(4, "Event", "second-data"),
			))
			r := executeTurn(e, hWaitExternal("Event"))
			assertTurnCompleted(t, r, "first-data")
		}},
		replayCase{"made_progress_after_completion", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evActivityScheduled(2, "Task", "input")))
			if e.madeProgress() {
				t.Fatal("No progress initially")
			}
			e.prepCompletions(msgsOf(msgActivityCompleted(2, "result")))
			if !e.madeProgress() {
				t.Fatal("Should have progress after completion")
			}
		}},
		// finalHistory is baseline followed by this turn's delta.
		replayCase{"final_history_combines_baseline_and_delta", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			r := executeTurn(e, hSingleActivity("Task", "input"))
			assertTurnContinue(t, r)
			final := e.finalHistory()
			if len(final) != 2 {
				t.Fatalf("Should have Started + ActivityScheduled, got %d events: %+v", len(final), final)
			}
			if _, ok := final[0].Kind.(duroxide.OrchestrationStarted); !ok {
				t.Fatalf("final[0] = %+v, want OrchestrationStarted", final[0].Kind)
			}
			if _, ok := final[1].Kind.(duroxide.ActivityScheduled); !ok {
				t.Fatalf("final[1] = %+v, want ActivityScheduled", final[1].Kind)
			}
		}},
	)
}
