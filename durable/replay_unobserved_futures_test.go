package durable

// Port of duroxide 0.1.29 tests/replay_engine/unobserved_futures.rs: a
// future that goes away before completing (Select loser, explicit drop, or
// still pending when the code returns) is cancelled. Rust's drop(fut) is
// fut.Cancel() in Go; a Rust local dropped at the end of the function is a
// Go future left pending when the function returns.

import (
	"slices"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// hSelect2TimerWins races an activity against a timer; the timer is
// expected to win and the activity loser to be cancelled.
func hSelect2TimerWins(name, input string, d time.Duration) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		activity := CallActivity[string](ctx, name, input)
		timer := NewTimer(ctx, d)
		if ctx.Select(activity, timer) == 0 {
			r, err := activity.Await()
			if err != nil {
				return "", err
			}
			return "activity_won:" + r, nil
		}
		return "timer_won", nil
	}
}

// hSelect2ActivityWins is the same race where the activity is expected to
// win; the timer loser needs no cancellation.
func hSelect2ActivityWins(name, input string, d time.Duration) OrchestrationFunc {
	return hSelect2TimerWins(name, input, d)
}

// hScheduleActivityAndTimerThenAwaitActivity schedules an activity and a
// timer but awaits the activity instead of dropping it: a code change
// against a history that recorded the drop.
func hScheduleActivityAndTimerThenAwaitActivity(name, input string, d time.Duration) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		activity := CallActivity[string](ctx, name, input)
		_ = NewTimer(ctx, d) // kept alive while the activity is awaited
		r, err := activity.Await()
		if err != nil {
			return "", err
		}
		return "activity_awaited:" + r, nil
	}
}

// hSelect2TimerWinsThenDropNewActivity replays a timer win (dropping the
// activity loser), then schedules and drops a new activity this turn.
func hSelect2TimerWinsThenDropNewActivity(name, input string, d time.Duration, extraName, extraInput string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		activity := CallActivity[string](ctx, name, input)
		timer := NewTimer(ctx, d)
		ctx.Select(activity, timer)
		CallActivity[string](ctx, extraName, extraInput).Cancel()
		return "timer_won_plus_extra_drop", nil
	}
}

// hSelect3 races two activities and a timer; the timer is expected to win.
func hSelect3(ctx *OrchestrationContext, _ string) (string, error) {
	a1 := CallActivity[string](ctx, "Task1", "input1")
	a2 := CallActivity[string](ctx, "Task2", "input2")
	timer := NewTimer(ctx, time.Millisecond)
	switch ctx.Select(a1, a2, timer) {
	case 0:
		return a1.Await()
	case 1:
		return a2.Await()
	}
	return "timer_won", nil
}

// hDropActivityAfterSchedule schedules an activity and drops it at once.
func hDropActivityAfterSchedule(name, input string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		CallActivity[string](ctx, name, input).Cancel()
		return "completed_after_dropping_activity", nil
	}
}

// hExplicitDropTimer schedules a timer and drops it.
func hExplicitDropTimer(ctx *OrchestrationContext, _ string) (string, error) {
	NewTimer(ctx, 60*time.Second).Cancel()
	return "timer_dropped", nil
}

// hExplicitDropExternalWait subscribes to an external event and drops it.
func hExplicitDropExternalWait(name string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		WaitEvent[string](ctx, name).Cancel()
		return "wait_dropped", nil
	}
}

// hMultipleDroppedActivities returns with two activities and a timer still
// pending, so all three are dropped.
func hMultipleDroppedActivities(ctx *OrchestrationContext, _ string) (string, error) {
	_ = CallActivity[string](ctx, "Task1", "input1")
	_ = CallActivity[string](ctx, "Task2", "input2")
	_ = NewTimer(ctx, 10*time.Second)
	return "all_dropped", nil
}

// hDropSubOrchAfterSchedule schedules a child and drops it at once.
func hDropSubOrchAfterSchedule(name, input string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		CallSubOrchestration[string](ctx, name, input).Cancel()
		return "sub_orch_dropped", nil
	}
}

// hSubOrchSelectLoser races a child against a timer; the timer is expected
// to win and the child to be cancelled.
func hSubOrchSelectLoser(name, input string, d time.Duration) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		sub := CallSubOrchestration[string](ctx, name, input)
		timer := NewTimer(ctx, d)
		if ctx.Select(sub, timer) == 0 {
			return sub.Await()
		}
		return "timer_won_sub_orch_cancelled", nil
	}
}

// hDropActivityThenAwaitTimer drops an activity, then waits on a timer.
func hDropActivityThenAwaitTimer(ctx *OrchestrationContext, _ string) (string, error) {
	CallActivity[string](ctx, "DroppedTask", "input").Cancel()
	if _, err := NewTimer(ctx, 100*time.Millisecond).Await(); err != nil {
		return "", err
	}
	return "done_after_drop", nil
}

// droppedActivityCancels returns the delta's ActivityCancelRequested
// breadcrumbs with reason "dropped_future".
func droppedActivityCancels(e *replayEngine) []duroxide.Event {
	var out []duroxide.Event
	for _, ev := range e.historyDelta() {
		if k, ok := ev.Kind.(duroxide.ActivityCancelRequested); ok && k.Reason == "dropped_future" {
			out = append(out, ev)
		}
	}
	return out
}

// droppedSubOrchCancels returns the delta's SubOrchestrationCancelRequested
// breadcrumbs with reason "dropped_future".
func droppedSubOrchCancels(e *replayEngine) []duroxide.Event {
	var out []duroxide.Event
	for _, ev := range e.historyDelta() {
		if k, ok := ev.Kind.(duroxide.SubOrchestrationCancelRequested); ok && k.Reason == "dropped_future" {
			out = append(out, ev)
		}
	}
	return out
}

// evAnySource reports whether one of evs has source_event_id source.
func evAnySource(evs []duroxide.Event, source uint64) bool {
	return slices.ContainsFunc(evs, func(ev duroxide.Event) bool { return evSourceIs(ev, source) })
}

func evSourceIs(ev duroxide.Event, id uint64) bool {
	return ev.SourceEventID != nil && *ev.SourceEventID == id
}

func init() {
	registerReplaySuite("unobserved_futures",
		// Select losers.
		replayCase{"select2_timer_wins_activity_cancelled", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "LongTask", "input"),
				evTimerCreated(3, 1000),
			})
			e.prepCompletions([]duroxide.WorkItem{msgTimerFired(3, 1000)})
			r := executeTurn(e, hSelect2TimerWins("LongTask", "input", time.Millisecond))
			assertTurnCompleted(t, r, "timer_won")
			if c := e.cancelledActivityIDs(); !slices.Contains(c, 2) {
				t.Fatalf("Activity schedule_id 2 should be in cancelled list, got %v", c)
			}
		}},
		replayCase{"select2_activity_wins_timer_not_cancelled", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "FastTask", "input"),
				evTimerCreated(3, 5000),
			})
			e.prepCompletions([]duroxide.WorkItem{msgActivityCompleted(2, "done")})
			r := executeTurn(e, hSelect2ActivityWins("FastTask", "input", 5*time.Millisecond))
			assertTurnCompleted(t, r, "activity_won:done")
			if c := e.cancelledActivityIDs(); len(c) != 0 {
				t.Fatalf("No activities should be cancelled (timer dropped, but timers don't need cancel), got %v", c)
			}
		}},
		replayCase{"select3_two_activities_cancelled", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "Task1", "input1"),
				evActivityScheduled(3, "Task2", "input2"),
				evTimerCreated(4, 1000),
			})
			e.prepCompletions([]duroxide.WorkItem{msgTimerFired(4, 1000)})
			r := executeTurn(e, hSelect3)
			assertTurnCompleted(t, r, "timer_won")
			if c := e.cancelledActivityIDs(); !slices.Contains(c, 2) || !slices.Contains(c, 3) {
				t.Fatalf("Both activities should be cancelled, got %v", c)
			}
		}},

		// Completed futures.
		replayCase{"completed_future_not_in_cancelled_list", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evActivityCompleted(3, 2, "result"),
			})
			assertTurnCompleted(t, executeTurn(e, hSingleActivity("Task", "input")), "result")
			if c := e.cancelledActivityIDs(); len(c) != 0 {
				t.Fatalf("Completed activity should NOT be in cancelled list, got %v", c)
			}
		}},

		// Explicit drops after scheduling.
		replayCase{"explicit_drop_activity_gets_cancelled", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			r := executeTurn(e, hDropActivityAfterSchedule("DroppedTask", "input"))
			assertTurnCompleted(t, r, "completed_after_dropping_activity")
			if !hasActivityScheduledDelta(e, "DroppedTask") {
				t.Fatalf("Activity should be in history delta (emitted at schedule time): %v", e.historyDelta())
			}
			if c := e.cancelledActivityIDs(); !slices.Contains(c, 2) {
				t.Fatalf("Dropped activity should be in cancelled list, got %v", c)
			}
			if !evAnySource(droppedActivityCancels(e), 2) {
				t.Fatalf("Expected ActivityCancelRequested(source_event_id=2, reason=dropped_future) in history delta: %v", e.historyDelta())
			}
		}},
		replayCase{"explicit_drop_timer_no_cancel_needed", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			assertTurnCompleted(t, executeTurn(e, hExplicitDropTimer), "timer_dropped")
			if c := e.cancelledActivityIDs(); len(c) != 0 {
				t.Fatalf("No activities cancelled for timer drop, got %v", c)
			}
		}},
		replayCase{"explicit_drop_external_wait", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			assertTurnCompleted(t, executeTurn(e, hExplicitDropExternalWait("MyEvent")), "wait_dropped")
			if c := e.cancelledActivityIDs(); len(c) != 0 {
				t.Fatalf("External waits don't go to activity cancel list, got %v", c)
			}
		}},

		// Several dropped futures.
		replayCase{"multiple_dropped_activities_all_cancelled", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			assertTurnCompleted(t, executeTurn(e, hMultipleDroppedActivities), "all_dropped")
			c := e.cancelledActivityIDs()
			if !slices.Contains(c, 2) || !slices.Contains(c, 3) {
				t.Fatalf("Both activities should be cancelled, got %v", c)
			}
			if slices.Contains(c, 4) {
				t.Fatalf("Timer should NOT be in cancelled list, got %v", c)
			}
		}},

		// Sub-orchestrations.
		replayCase{"sub_orch_drop_after_schedule_cancelled", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			r := executeTurn(e, hDropSubOrchAfterSchedule("ChildOrch", "child_input"))
			assertTurnCompleted(t, r, "sub_orch_dropped")
			if c := e.cancelledSubOrchestrationIDs(); len(c) == 0 {
				t.Fatalf("Child sub-orchestration should be in cancelled list, got %v", c)
			}
			if !evAnySource(droppedSubOrchCancels(e), 2) {
				t.Fatalf("Expected SubOrchestrationCancelRequested(source_event_id=2, reason=dropped_future) in history delta: %v", e.historyDelta())
			}
		}},
		replayCase{"sub_orch_select_loser_child_cancelled", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evSubOrchScheduled(2, "ChildOrch", "sub::2", "child_input"),
				evTimerCreated(3, 1000),
			})
			e.prepCompletions([]duroxide.WorkItem{msgTimerFired(3, 1000)})
			r := executeTurn(e, hSubOrchSelectLoser("ChildOrch", "child_input", time.Millisecond))
			assertTurnCompleted(t, r, "timer_won_sub_orch_cancelled")
			if c := e.cancelledSubOrchestrationIDs(); !slices.Contains(c, "sub::2") {
				t.Fatalf("Child sub-orchestration should be cancelled, got %v", c)
			}
		}},

		// Replay determinism.
		replayCase{"replay_select_loser_same_cancellation", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evTimerCreated(3, 1000),
				evTimerFired(4, 3, 1000),
			})
			r := executeTurn(e, hSelect2TimerWins("Task", "input", time.Millisecond))
			assertTurnCompleted(t, r, "timer_won")
			if c := e.cancelledActivityIDs(); !slices.Contains(c, 2) {
				t.Fatalf("Replay should still cancel the activity, got %v", c)
			}
		}},
		replayCase{"completed_sub_orch_not_cancelled", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evSubOrchScheduled(2, "ChildOrch", "sub::2", "input"),
				evSubOrchCompleted(3, 2, "child_result"),
			})
			assertTurnCompleted(t, executeTurn(e, hSubOrch("ChildOrch", "input")), "child_result")
			if c := e.cancelledSubOrchestrationIDs(); len(c) != 0 {
				t.Fatalf("Completed sub-orchestration should NOT be cancelled, got %v", c)
			}
		}},

		// Dehydration: an explicit drop is captured even when the turn suspends.
		replayCase{"explicit_drop_then_await_captures_cancellation", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "DroppedTask", "input"),
				evTimerCreated(3, 100), // not fired: the turn suspends
			})
			assertTurnContinue(t, executeTurn(e, hDropActivityThenAwaitTimer))
			if c := e.cancelledActivityIDs(); !slices.Contains(c, 2) {
				t.Fatalf("Explicitly dropped activity should be cancelled even when orchestration dehydrates, got %v", c)
			}
		}},

		// Cancellation request and completion races.
		replayCase{"replay_tolerates_completion_after_cancel_request", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evTimerCreated(3, 1000),
				evTimerFired(4, 3, 1000),
				evActivityCancelRequested(5, 2, "dropped_future"),
				evActivityCompleted(6, 2, "late_result"),
			})
			r := executeTurn(e, hSelect2TimerWins("Task", "input", 1000*time.Millisecond))
			assertTurnCompleted(t, r, "timer_won")
		}},
		replayCase{"replay_fails_when_cancellation_decisions_differ", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evActivityCancelRequested(3, 2, "dropped_future"),
				evActivityCompleted(4, 2, "done"),
			})
			// The code now awaits the activity instead of dropping it.
			assertTurnNondeterminism(t, executeTurn(e, hSingleActivity("Task", "input")))
		}},

		// Cross-turn cancellation: both the side channel and the breadcrumb.
		replayCase{"cross_turn_activity_cancellation_emits_both_signals", func(t *testing.T) {
			persisted := []duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evTimerCreated(3, 1000),
			}
			e := newTestEngineWithPersistedLen(persisted, len(persisted))
			e.prepCompletions([]duroxide.WorkItem{msgTimerFired(3, 1000)})
			r := executeTurn(e, hSelect2TimerWins("Task", "input", time.Millisecond))
			assertTurnCompleted(t, r, "timer_won")
			if c := e.cancelledActivityIDs(); !slices.Contains(c, 2) {
				t.Fatalf("cancelled_activity_ids should contain activity 2 for provider lock-stealing, got %v", c)
			}
			cancels := droppedActivityCancels(e)
			if len(cancels) != 1 {
				t.Fatalf("Expected exactly 1 ActivityCancelRequested in history_delta, got %v", cancels)
			}
			if !evSourceIs(cancels[0], 2) {
				t.Fatalf("ActivityCancelRequested should reference the scheduled activity (event_id=2), got %v", cancels[0])
			}
		}},
		replayCase{"cross_turn_sub_orch_cancellation_emits_both_signals", func(t *testing.T) {
			persisted := []duroxide.Event{
				evStarted(1),
				evSubOrchScheduled(2, "ChildOrch", "sub::2", "input"),
				evTimerCreated(3, 1000),
			}
			e := newTestEngineWithPersistedLen(persisted, len(persisted))
			e.prepCompletions([]duroxide.WorkItem{msgTimerFired(3, 1000)})
			r := executeTurn(e, hSubOrchSelectLoser("ChildOrch", "input", time.Millisecond))
			assertTurnCompleted(t, r, "timer_won_sub_orch_cancelled")
			if c := e.cancelledSubOrchestrationIDs(); !slices.Contains(c, "sub::2") {
				t.Fatalf("cancelled_sub_orchestration_ids should contain 'sub::2', got %v", c)
			}
			cancels := droppedSubOrchCancels(e)
			if len(cancels) != 1 {
				t.Fatalf("Expected exactly 1 SubOrchestrationCancelRequested in history_delta, got %v", cancels)
			}
			if !evSourceIs(cancels[0], 2) {
				t.Fatalf("SubOrchestrationCancelRequested should reference the scheduled sub-orch (event_id=2), got %v", cancels[0])
			}
		}},
		replayCase{"replay_does_not_reemit_activity_cancellation_side_channel_when_already_in_history", func(t *testing.T) {
			persisted := []duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evTimerCreated(3, 1000),
				evTimerFired(4, 3, 1000),
				evActivityCancelRequested(5, 2, "dropped_future"),
			}
			e := newTestEngineWithPersistedLen(persisted, len(persisted))
			r := executeTurn(e, hSelect2TimerWins("Task", "input", 1000*time.Millisecond))
			assertTurnCompleted(t, r, "timer_won")
			if c := e.cancelledActivityIDs(); len(c) != 0 {
				t.Fatalf("cancelled_activity_ids should be empty on replay when cancellation-request already exists in history, got %v", c)
			}
			if c := droppedActivityCancels(e); len(c) != 0 {
				t.Fatalf("No new ActivityCancelRequested events expected in history_delta, got %v", c)
			}
		}},
		replayCase{"replay_does_not_reemit_sub_orch_cancellation_side_channel_when_already_in_history", func(t *testing.T) {
			persisted := []duroxide.Event{
				evStarted(1),
				evSubOrchScheduled(2, "ChildOrch", "sub::2", "input"),
				evTimerCreated(3, 1000),
				evTimerFired(4, 3, 1000),
				evSubOrchCancelRequested(5, 2, "dropped_future"),
			}
			e := newTestEngineWithPersistedLen(persisted, len(persisted))
			r := executeTurn(e, hSubOrchSelectLoser("ChildOrch", "input", 1000*time.Millisecond))
			assertTurnCompleted(t, r, "timer_won_sub_orch_cancelled")
			if c := e.cancelledSubOrchestrationIDs(); len(c) != 0 {
				t.Fatalf("cancelled_sub_orchestration_ids should be empty on replay when cancellation-request already exists in history, got %v", c)
			}
			if c := droppedSubOrchCancels(e); len(c) != 0 {
				t.Fatalf("No new SubOrchestrationCancelRequested events expected in history_delta, got %v", c)
			}
		}},
		replayCase{"replay_allows_new_cancellations_in_current_turn_even_when_prior_cancellations_exist", func(t *testing.T) {
			persisted := []duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evTimerCreated(3, 1000),
				evTimerFired(4, 3, 1000),
				evActivityCancelRequested(5, 2, "dropped_future"),
			}
			e := newTestEngineWithPersistedLen(persisted, len(persisted))
			r := executeTurn(e, hSelect2TimerWinsThenDropNewActivity("Task", "input", 1000*time.Millisecond, "Extra", "x"))
			assertTurnCompleted(t, r, "timer_won_plus_extra_drop")
			c := e.cancelledActivityIDs()
			if slices.Contains(c, 2) {
				t.Fatalf("Should not re-emit persisted cancellation schedule_id=2 in side-channel, got %v", c)
			}
			if !slices.Contains(c, 6) {
				t.Fatalf("Expected side-channel cancellation for newly scheduled/dropped activity (event_id=6), got %v", c)
			}
		}},
		replayCase{"replay_fails_if_persisted_dropped_future_cancel_is_no_longer_emitted_by_code", func(t *testing.T) {
			persisted := []duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evTimerCreated(3, 1000),
				evTimerFired(4, 3, 1000),
				evActivityCancelRequested(5, 2, "dropped_future"),
			}
			e := newTestEngineWithPersistedLen(persisted, len(persisted))
			r := executeTurn(e, hScheduleActivityAndTimerThenAwaitActivity("Task", "input", 1000*time.Millisecond))
			assertTurnNondeterminism(t, r)
			assertTurnFailedWithMessage(t, r, "cancellation mismatch (activities)")
		}},

		// Duplicate cancel-request breadcrumbs are no-ops on replay.
		replayCase{"duplicate_activity_cancel_requested_is_benign", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evTimerCreated(3, 1000),
				evTimerFired(4, 3, 1000),
				evActivityCancelRequested(5, 2, "dropped_future"),
				evActivityCancelRequested(6, 2, "orchestration_terminal_failed"),
			})
			r := executeTurn(e, hSelect2TimerWins("Task", "input", 1000*time.Millisecond))
			assertTurnCompleted(t, r, "timer_won")
		}},
		replayCase{"duplicate_sub_orch_cancel_requested_is_benign", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evSubOrchScheduled(2, "ChildOrch", "sub::2", "input"),
				evTimerCreated(3, 1000),
				evTimerFired(4, 3, 1000),
				evSubOrchCancelRequested(5, 2, "dropped_future"),
				evSubOrchCancelRequested(6, 2, "orchestration_terminal_failed"),
			})
			r := executeTurn(e, hSubOrchSelectLoser("ChildOrch", "input", 1000*time.Millisecond))
			assertTurnCompleted(t, r, "timer_won_sub_orch_cancelled")
		}},
	)
}
