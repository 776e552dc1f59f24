package durable

// Port of duroxide 0.1.29 tests/replay_engine/history_corruption.rs:
// invalid histories are detected and handled gracefully.

import (
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

func init() {
	registerReplaySuite("history_corruption",
		// 8.1 Structural corruption.
		replayCase{"empty_history", func(t *testing.T) {
			e := newTestEngine(nil) // no events at all
			r := executeTurn(e, hImmediateOK("done"))
			assertTurnFailedWithMessage(t, r, "empty")
		}},
		replayCase{"missing_started_event", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evActivityScheduled(1, "Task", "input"), // no OrchestrationStarted
			})
			r := executeTurn(e, hImmediateOK("done"))
			assertTurnFailedWithMessage(t, r, "OrchestrationStarted")
		}},
		replayCase{"started_not_first", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evActivityScheduled(1, "Task", "input"), // wrong order
				evStarted(2),
			})
			r := executeTurn(e, hImmediateOK("done"))
			assertTurnFailedWithMessage(t, r, "OrchestrationStarted")
		}},
		replayCase{"event_id_zero", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(0)}) // id 0 is allowed
			r := executeTurn(e, hImmediateOK("done"))
			assertTurnCompleted(t, r, "done")
		}},
		replayCase{"event_id_gap", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityScheduled(100, "Task", "input"), // big gap
				evActivityCompleted(200, 100, "result"),
			})
			r := executeTurn(e, hSingleActivity("Task", "input"))
			assertTurnCompleted(t, r, "result")
		}},
		replayCase{"non_monotonic_event_ids", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityScheduled(5, "Task", "input"),
				evActivityCompleted(3, 5, "result"), // 3 < 5, still valid
			})
			r := executeTurn(e, hSingleActivity("Task", "input"))
			assertTurnCompleted(t, r, "result")
		}},

		// 8.2 Completion linkage corruption.
		replayCase{"completion_source_not_found", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1), evActivityScheduled(2, "Task", "input")})
			e.prepCompletions([]duroxide.WorkItem{msgActivityCompleted(99, "result")}) // no schedule 99
			r := executeTurn(e, hSingleActivity("Task", "input"))
			assertTurnNondeterminism(t, r)
		}},
		replayCase{"completion_source_wrong_type", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1), evTimerCreated(2, 1000)})
			e.prepCompletions([]duroxide.WorkItem{msgActivityCompleted(2, "result")}) // activity completion for a timer
			r := executeTurn(e, hSingleTimer(60*time.Second))
			assertTurnNondeterminism(t, r)
		}},
		replayCase{"multiple_completions_same_source_in_history", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evActivityCompleted(3, 2, "first-result"),
			})
			e.prepCompletions([]duroxide.WorkItem{msgActivityCompleted(2, "second-result")})
			if d := e.historyDelta(); len(d) != 0 {
				t.Fatalf("duplicate completion should be filtered, delta = %v", d)
			}
		}},
		replayCase{"completion_for_different_execution", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1), evActivityScheduled(2, "Task", "input")})
			e.prepCompletions([]duroxide.WorkItem{duroxide.ActivityCompletedItem{
				Instance: testInstance, ExecutionID: 999, ID: 2, Result: "result", // stale execution
			}})
			if d := e.historyDelta(); len(d) != 0 {
				t.Fatalf("completion from another execution should be filtered, delta = %v", d)
			}
		}},

		// 8.3 Terminal event corruption: any terminal event makes the turn a no-op.
		replayCase{"terminal_completed", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1), evOrchestrationCompleted(2, "done")})
			assertTurnContinue(t, executeTurn(e, hImmediateOK("new result")))
		}},
		replayCase{"terminal_failed", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1), evOrchestrationFailed(2, "error")})
			assertTurnContinue(t, executeTurn(e, hImmediateOK("new result")))
		}},
		replayCase{"terminal_continued_as_new", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1), evContinuedAsNew(2, "new input")})
			assertTurnContinue(t, executeTurn(e, hImmediateOK("new result")))
		}},
		replayCase{"multiple_terminal_events", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evOrchestrationCompleted(2, "first"),
				evOrchestrationFailed(3, "second"),
			})
			assertTurnContinue(t, executeTurn(e, hImmediateOK("new result")))
		}},
		replayCase{"events_after_terminal", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evOrchestrationCompleted(2, "done"),
				evActivityScheduled(3, "Task", "input"), // after terminal (corruption)
			})
			assertTurnContinue(t, executeTurn(e, hImmediateOK("new result")))
		}},
		replayCase{"cancel_after_completed", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evOrchestrationCompleted(2, "done"),
				evCancelRequested(3, "too late"),
			})
			assertTurnContinue(t, executeTurn(e, hImmediateOK("new result")))
		}},

		// 8.4 Execution id validation.
		replayCase{"completion_wrong_execution", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1), evActivityScheduled(2, "Task", "input")})
			e.prepCompletions([]duroxide.WorkItem{duroxide.ActivityCompletedItem{
				Instance: testInstance, ExecutionID: 999, ID: 2, Result: "result",
			}})
			if d := e.historyDelta(); len(d) != 0 {
				t.Fatalf("completion from another execution should be filtered, delta = %v", d)
			}
		}},

		// 8.5 Field value edge cases.
		replayCase{"empty_activity_name", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "", "input"),
				evActivityCompleted(3, 2, "result"),
			})
			assertTurnCompleted(t, executeTurn(e, hSingleActivity("", "input")), "result")
		}},
		replayCase{"unicode_in_names", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "Grüß Gott 🎉", "日本語入力"),
				evActivityCompleted(3, 2, "emoji result 👍"),
			})
			r := executeTurn(e, hSingleActivity("Grüß Gott 🎉", "日本語入力"))
			assertTurnCompleted(t, r, "emoji result 👍")
		}},
		replayCase{"very_long_strings", func(t *testing.T) {
			longName := strings.Repeat("x", 10000)
			longInput := strings.Repeat("y", 10000)
			longResult := strings.Repeat("z", 10000)
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, longName, longInput),
				evActivityCompleted(3, 2, longResult),
			})
			assertTurnCompleted(t, executeTurn(e, hSingleActivity(longName, longInput)), longResult)
		}},
		replayCase{"special_characters", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "Name\nWith\tSpecial", "Input\r\nCRLF"),
				evActivityCompleted(3, 2, "Result\x00WithNull"),
			})
			r := executeTurn(e, hSingleActivity("Name\nWith\tSpecial", "Input\r\nCRLF"))
			assertTurnCompleted(t, r, "Result\x00WithNull")
		}},

		// 8.6 Event order corruption.
		replayCase{"timer_fired_before_created", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evTimerFired(2, 3, 1000), // references timer 3, not yet created
				evTimerCreated(3, 1000),
			})
			assertTurnNondeterminism(t, executeTurn(e, hSingleTimer(60*time.Second)))
		}},
		replayCase{"activity_completed_before_scheduled", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityCompleted(2, 3, "result"), // references activity 3, not yet scheduled
				evActivityScheduled(3, "Task", "input"),
			})
			assertTurnNondeterminism(t, executeTurn(e, hSingleActivity("Task", "input")))
		}},

		// 8.7 Orphaned events.
		replayCase{"orphan_completion_no_schedule", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			e.prepCompletions([]duroxide.WorkItem{msgActivityCompleted(99, "orphan")})
			assertTurnNondeterminism(t, executeTurn(e, hImmediateOK("done")))
		}},
		replayCase{"orphan_timer_fired", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			e.prepCompletions([]duroxide.WorkItem{msgTimerFired(99, 1000)})
			assertTurnNondeterminism(t, executeTurn(e, hImmediateOK("done")))
		}},
		replayCase{"orphan_external_event", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			e.prepCompletions([]duroxide.WorkItem{msgExternalRaised("UnknownEvent", "data")})
			// Materialised unconditionally; the replay loop skips delivery.
			if n := len(e.historyDelta()); n != 1 {
				t.Fatalf("history delta length = %d, want 1", n)
			}
			assertTurnCompleted(t, executeTurn(e, hImmediateOK("done")), "done")
		}},
		replayCase{"orphan_sub_orch_completed", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			e.prepCompletions([]duroxide.WorkItem{msgSubOrchCompleted(99, "result")})
			assertTurnNondeterminism(t, executeTurn(e, hImmediateOK("done")))
		}},

		// 8.8 Duplicate schedule events.
		replayCase{"duplicate_activity_schedule_in_history", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "A", "input"),
				evActivityScheduled(3, "A", "input"), // duplicate
			})
			assertTurnNondeterminism(t, executeTurn(e, hSingleActivity("A", "input")))
		}},
		replayCase{"duplicate_timer_schedule_in_history", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evTimerCreated(2, 1000),
				evTimerCreated(3, 1000), // duplicate
			})
			assertTurnNondeterminism(t, executeTurn(e, hSingleTimer(60*time.Second)))
		}},
		replayCase{"duplicate_external_subscription_in_history", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evExternalSubscribed(2, "E"),
				evExternalSubscribed(3, "E"), // duplicate
			})
			assertTurnNondeterminism(t, executeTurn(e, hWaitExternal("E")))
		}},
	)
}
