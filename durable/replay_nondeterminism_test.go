package durable

// Port of duroxide 0.1.29 tests/replay_engine/nondeterminism.rs: the engine
// detects replay mismatches between history and the code's decisions.

import (
	"fmt"
	"testing"
	"time"
)

func init() {
	registerReplaySuite("nondeterminism",
		// History has an activity, the code schedules a timer.
		replayCase{"schedule_mismatch_activity_vs_timer", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evActivityScheduled(2, "Task", "input")))
			r := executeTurn(e, hSingleTimer(60*time.Second))
			assertTurnNondeterminism(t, r)
			assertTurnNondeterminismText(t, r, fmt.Sprintf("schedule mismatch: action=CreateTimer { scheduling_event_id: 0, fire_at_ms: %d }"+
				` vs event=ActivityScheduled { name: "Task", input: "input", session_id: None, tag: None }`, testNowMs+60_000))
		}},
		// History has a timer, the code schedules an activity.
		replayCase{"schedule_mismatch_timer_vs_activity", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evTimerCreated(2, 1000)))
			r := executeTurn(e, hSingleActivity("Task", "input"))
			assertTurnNondeterminism(t, r)
			assertTurnNondeterminismText(t, r, `schedule mismatch: action=CallActivity { scheduling_event_id: 0, name: "Task", input: "input", session_id: None, tag: None }`+
				` vs event=TimerCreated { fire_at_ms: 1000 }`)
		}},
		// The activity's name changed between runs.
		replayCase{"schedule_mismatch_wrong_activity_name", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evActivityScheduled(2, "ActivityA", "input")))
			r := executeTurn(e, hSingleActivity("ActivityB", "input"))
			assertTurnNondeterminism(t, r)
			assertTurnNondeterminismText(t, r, `schedule mismatch: action=CallActivity { scheduling_event_id: 0, name: "ActivityB", input: "input", session_id: None, tag: None }`+
				` vs event=ActivityScheduled { name: "ActivityA", input: "input", session_id: None, tag: None }`)
		}},
		// The activity's input changed between runs.
		replayCase{"schedule_mismatch_wrong_input", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evActivityScheduled(2, "Task", "input-x")))
			r := executeTurn(e, hSingleActivity("Task", "input-y"))
			assertTurnNondeterminism(t, r)
			assertTurnNondeterminismText(t, r, `schedule mismatch: action=CallActivity { scheduling_event_id: 0, name: "Task", input: "input-y", session_id: None, tag: None }`+
				` vs event=ActivityScheduled { name: "Task", input: "input-x", session_id: None, tag: None }`)
		}},
		// The code waits for a different external event.
		replayCase{"schedule_mismatch_wrong_external_name", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evExternalSubscribed(2, "EventX")))
			r := executeTurn(e, hWaitExternal("EventY"))
			assertTurnNondeterminism(t, r)
			assertTurnNondeterminismText(t, r, `schedule mismatch: action=WaitExternal { scheduling_event_id: 0, name: "EventY" }`+
				` vs event=ExternalSubscribed { name: "EventX" }`)
		}},
		// A schedule in history the code no longer reaches is legitimate: the
		// original code may have scheduled without awaiting and returned.
		replayCase{"history_schedule_no_emitted_action", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evActivityScheduled(2, "Task", "input")))
			r := executeTurn(e, hImmediateOK("done"))
			assertTurnCompleted(t, r, "done")
		}},
		// A completion for an id nothing scheduled fails in stage 1.
		replayCase{"completion_without_schedule", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			e.prepCompletions(msgsOf(msgActivityCompleted(999, "result")))
			r := executeTurn(e, hImmediateOK("done"))
			assertTurnNondeterminismText(t, r, "no matching schedule for completion id=999")
			assertDelta(t, e) // the rejected completion is not recorded
		}},
		// An activity completion for a timer's id.
		replayCase{"completion_kind_mismatch", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evTimerCreated(2, 1000)))
			e.prepCompletions(msgsOf(msgActivityCompleted(2, "result")))
			r := executeTurn(e, hSingleTimer(60*time.Second))
			assertTurnNondeterminismText(t, r, "completion kind mismatch for id=2, expected 'timer', got 'activity'")
		}},
		// A timer firing for an activity's id.
		replayCase{"timer_completion_for_activity_schedule", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evActivityScheduled(2, "Task", "input")))
			e.prepCompletions(msgsOf(msgTimerFired(2, 1000)))
			r := executeTurn(e, hSingleActivity("Task", "input"))
			assertTurnNondeterminism(t, r)
			assertTurnFailedWithMessage(t, r, "completion kind mismatch")
			assertTurnNondeterminismText(t, r, "completion kind mismatch for id=2, expected 'activity', got 'timer'")
		}},
		// A child's completion for an activity's id.
		replayCase{"sub_orch_completion_for_activity_schedule", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evActivityScheduled(2, "Task", "input")))
			e.prepCompletions(msgsOf(msgSubOrchCompleted(2, "result")))
			r := executeTurn(e, hSingleActivity("Task", "input"))
			assertTurnNondeterminism(t, r)
			assertTurnFailedWithMessage(t, r, "completion kind mismatch")
			assertTurnNondeterminismText(t, r, "completion kind mismatch for id=2, expected 'activity', got 'suborchestration'")
		}},
		// A child's completion for a timer's id.
		replayCase{"sub_orch_completion_for_timer_schedule", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evTimerCreated(2, 1000)))
			e.prepCompletions(msgsOf(msgSubOrchCompleted(2, "result")))
			r := executeTurn(e, hSingleTimer(60*time.Second))
			assertTurnNondeterminism(t, r)
			assertTurnFailedWithMessage(t, r, "completion kind mismatch")
			assertTurnNondeterminismText(t, r, "completion kind mismatch for id=2, expected 'timer', got 'suborchestration'")
		}},
		// A timer firing for a child's id.
		replayCase{"timer_completion_for_sub_orch_schedule", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evSubOrchScheduled(2, "ChildOrch", "child-inst", "input")))
			e.prepCompletions(msgsOf(msgTimerFired(2, 1000)))
			r := executeTurn(e, hSubOrch("ChildOrch", "input"))
			assertTurnNondeterminism(t, r)
			assertTurnFailedWithMessage(t, r, "completion kind mismatch")
			assertTurnNondeterminismText(t, r, "completion kind mismatch for id=2, expected 'suborchestration', got 'timer'")
		}},
		// History has OrchestrationChained but the code (which suspends, so the
		// event is reached) starts no detached orchestration.
		replayCase{"orchestration_chained_no_matching_action", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evOrchestrationChained(3, "ChildOrch", "child-inst", "input"),
			))
			r := executeTurn(e, hSingleActivity("Task", "input"))
			assertTurnNondeterminism(t, r)
			assertTurnFailedWithMessage(t, r, "OrchestrationChained")
			assertTurnNondeterminismText(t, r, "history OrchestrationChained but no emitted action")
		}},
		// The detached orchestration's name changed.
		replayCase{"orchestration_chained_name_mismatch", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evOrchestrationChained(2, "ChildA", "child-inst", "input"),
				evActivityScheduled(3, "Task", "work"),
			))
			r := executeTurn(e, hDetachedThenActivity("ChildB", "child-inst", "input", "Task", "work"))
			assertTurnNondeterminism(t, r)
			assertTurnFailedWithMessage(t, r, "schedule mismatch")
			assertTurnNondeterminismText(t, r, `schedule mismatch: action=StartOrchestrationDetached { scheduling_event_id: 0, name: "ChildB", version: None, instance: "child-inst", input: "input" }`+
				` vs event=OrchestrationChained { name: "ChildA", instance: "child-inst", input: "input" }`)
		}},
		// A history ActivityCompleted whose source is a timer.
		replayCase{"activity_completed_for_timer_in_history", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evTimerCreated(2, 1000),
				evActivityCompleted(3, 2, "wrong"),
			))
			r := executeTurn(e, hSingleTimer(60*time.Second))
			assertTurnNondeterminism(t, r)
			assertTurnFailedWithMessage(t, r, "completion kind mismatch")
			assertTurnNondeterminismText(t, r, "completion kind mismatch: expected activity")
		}},
		// A second TimerFired for a timer that already fired; the second timer
		// keeps the code suspended so the duplicate is reached.
		replayCase{"timer_completion_for_closed_schedule", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evTimerCreated(2, 1000),
				evTimerFired(3, 2, 1000),
				evTimerCreated(4, 2000),
				evTimerFired(5, 2, 1000),
			))
			r := executeTurn(e, hTwoTimers(time.Second, 2*time.Second))
			assertTurnNondeterminism(t, r)
			assertTurnFailedWithMessage(t, r, "completion without open schedule")
			assertTurnNondeterminismText(t, r, "completion without open schedule")
		}},
		// A second SubOrchestrationCompleted for a finished child.
		replayCase{"sub_orch_completion_for_closed_schedule", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evSubOrchScheduled(2, "Child", "child-inst", "input"),
				evSubOrchCompleted(3, 2, "first"),
				evActivityScheduled(4, "Pending", "work"),
				evSubOrchCompleted(5, 2, "second"),
			))
			r := executeTurn(e, hSubOrchThenActivity("Child", "input", "Pending", "work"))
			assertTurnNondeterminism(t, r)
			assertTurnFailedWithMessage(t, r, "completion without open schedule")
			assertTurnNondeterminismText(t, r, "completion without open schedule")
		}},
		// A second ActivityCompleted for a finished activity.
		replayCase{"activity_completion_for_closed_schedule", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evActivityCompleted(3, 2, "first"),
				evActivityScheduled(4, "Pending", "work"),
				evActivityCompleted(5, 2, "second"),
			))
			r := executeTurn(e, hTwoActivities(nameInput{"Task", "input"}, nameInput{"Pending", "work"}))
			assertTurnNondeterminism(t, r)
			assertTurnFailedWithMessage(t, r, "completion without open schedule")
			assertTurnNondeterminismText(t, r, "completion without open schedule")
		}},
		// An ActivityFailed for a finished activity (the Failed variant).
		replayCase{"activity_failed_for_closed_schedule", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evActivityCompleted(3, 2, "first"),
				evActivityScheduled(4, "Pending", "work"),
				evActivityFailed(5, 2, "duplicate error"),
			))
			r := executeTurn(e, hTwoActivities(nameInput{"Task", "input"}, nameInput{"Pending", "work"}))
			assertTurnNondeterminism(t, r)
			assertTurnFailedWithMessage(t, r, "completion without open schedule")
			assertTurnNondeterminismText(t, r, "completion without open schedule")
		}},
		// A SubOrchestrationFailed for a finished child (the Failed variant).
		replayCase{"sub_orch_failed_for_closed_schedule", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evSubOrchScheduled(2, "Child", "child-inst", "input"),
				evSubOrchCompleted(3, 2, "first"),
				evActivityScheduled(4, "Pending", "work"),
				evSubOrchFailed(5, 2, "duplicate error"),
			))
			r := executeTurn(e, hSubOrchThenActivity("Child", "input", "Pending", "work"))
			assertTurnNondeterminism(t, r)
			assertTurnFailedWithMessage(t, r, "completion without open schedule")
			assertTurnNondeterminismText(t, r, "completion without open schedule")
		}},
	)
}
