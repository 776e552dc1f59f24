package durable

// Port of duroxide 0.1.29 tests/replay_engine/sequential_progress.rs:
// multi-step orchestrations replayed turn after turn.

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// firstSchedulingID returns the SchedulingEventID of the first pending
// action of type A, failing the test if there is none.
func firstSchedulingID[A action](t *testing.T, e *replayEngine, id func(A) uint64) uint64 {
	t.Helper()
	as := actionsOfType[A](e)
	if len(as) == 0 {
		var zero A
		t.Fatalf("Expected a %T pending action, got %+v", zero, e.pendingActions())
	}
	return id(as[0])
}

func init() {
	registerReplaySuite("sequential_progress",
		replayCase{"two_activities_first_done", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "A1", "input1"),
				evActivityCompleted(3, 2, "result1"),
			))
			r := executeTurn(e, hTwoActivities(nameInput{"A1", "input1"}, nameInput{"A2", "input2"}))
			assertTurnContinue(t, r)
			assertPendingLen(t, e, 1, "Second activity should be pending")
			if !hasActivityAction(e, "A2") {
				t.Fatal("A2 should be in pending actions")
			}
			if a := actionsOfType[actionCallActivity](e); len(a) != 1 || a[0].SchedulingEventID != 4 {
				t.Fatalf("A2 should be scheduled as event 4: %+v", e.pendingActions())
			}
		}},
		replayCase{"two_activities_both_done", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "A1", "input1"),
				evActivityCompleted(3, 2, "result1"),
				evActivityScheduled(4, "A2", "input2"),
				evActivityCompleted(5, 4, "result2"),
			))
			r := executeTurn(e, hTwoActivities(nameInput{"A1", "input1"}, nameInput{"A2", "input2"}))
			assertTurnCompleted(t, r, "result1,result2")
		}},
		// Completions are routed by schedule id, not by (name, input).
		replayCase{"identical_activities_both_done_routes_correctly", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "Task", "same"),
				evActivityCompleted(3, 2, "R1"),
				evActivityScheduled(4, "Task", "same"),
				evActivityCompleted(5, 4, "R2"),
			))
			r := executeTurn(e, hTwoActivities(nameInput{"Task", "same"}, nameInput{"Task", "same"}))
			assertTurnCompleted(t, r, "R1,R2")
		}},
		// The same activity twice with a timer between, each turn on a fresh
		// engine built from the history persisted so far (a restart).
		replayCase{"identical_activities_routes_correctly_across_restart_boundary", func(t *testing.T) {
			h := func(ctx *OrchestrationContext, _ string) (string, error) {
				r1, err := CallActivity[string](ctx, "Task", "same").Await()
				if err != nil {
					return "", err
				}
				if _, err := NewTimer(ctx, 60*time.Second).Await(); err != nil {
					return "", err
				}
				r2, err := CallActivity[string](ctx, "Task", "same").Await()
				if err != nil {
					return "", err
				}
				return r1 + "," + r2, nil
			}
			activityID := func(a actionCallActivity) uint64 { return a.SchedulingEventID }
			timerID := func(a actionCreateTimer) uint64 { return a.SchedulingEventID }

			// Turn 1: the first activity is scheduled.
			e1 := newTestEngine(histOf(evStarted(1)))
			assertTurnContinue(t, executeTurn(e1, h))
			if !hasActivityAction(e1, "Task") {
				t.Fatal("Task should be pending")
			}
			if hasTimerAction(e1) {
				t.Fatal("Timer should not be pending yet")
			}
			persisted := append(histOf(evStarted(1)), e1.historyDelta()...)
			if _, ok := e1.pendingActions()[0].(actionCallActivity); !ok {
				t.Fatalf("Expected CallActivity pending action, got %+v", e1.pendingActions()[0])
			}
			firstID := firstSchedulingID(t, e1, activityID)
			persisted = append(persisted, evActivityCompleted(3, firstID, "R1"))

			// Turn 2: the first completion replays and only the timer is new.
			e2 := newTestEngine(cloneHistory(persisted))
			assertTurnContinue(t, executeTurn(e2, h))
			if !hasTimerAction(e2) {
				t.Fatal("Timer should be pending")
			}
			if hasActivityAction(e2, "Task") {
				t.Fatal("Activity should not be rescheduled")
			}
			persisted = append(persisted, e2.historyDelta()...)
			persisted = append(persisted, evTimerFired(5, firstSchedulingID(t, e2, timerID), 0))

			// Turn 3: the timer fired; the second activity is scheduled.
			e3 := newTestEngine(cloneHistory(persisted))
			assertTurnContinue(t, executeTurn(e3, h))
			if !hasActivityAction(e3, "Task") {
				t.Fatal("Second Task should be pending")
			}
			if hasTimerAction(e3) {
				t.Fatal("No new timer expected")
			}
			persisted = append(persisted, e3.historyDelta()...)
			persisted = append(persisted, evActivityCompleted(7, firstSchedulingID(t, e3, activityID), "R2"))

			// Turn 4: both results, each routed to its own schedule.
			e4 := newTestEngine(persisted)
			assertTurnCompleted(t, executeTurn(e4, h), "R1,R2")
		}},
		replayCase{"activity_then_timer", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evActivityCompleted(3, 2, "done"),
			))
			r := executeTurn(e, hActivityThenTimer("Task", "input", 60*time.Second))
			assertTurnContinue(t, r)
			if !hasTimerAction(e) {
				t.Fatal("Timer should be pending")
			}
		}},
		replayCase{"timer_then_activity", func(t *testing.T) {
			h := func(ctx *OrchestrationContext, _ string) (string, error) {
				if _, err := NewTimer(ctx, 60*time.Second).Await(); err != nil {
					return "", err
				}
				return CallActivity[string](ctx, "Task", "input").Await()
			}
			e := newTestEngine(histOf(evStarted(1), evTimerCreated(2, 1000), evTimerFired(3, 2, 1000)))
			r := executeTurn(e, h)
			assertTurnContinue(t, r)
			if !hasActivityAction(e, "Task") {
				t.Fatal("Activity should be pending")
			}
		}},
		replayCase{"many_sequential_activities", func(t *testing.T) {
			h := func(ctx *OrchestrationContext, _ string) (string, error) {
				results := make([]string, 0, 10)
				for i := 0; i < 10; i++ {
					r, err := CallActivity[string](ctx, fmt.Sprintf("Act%d", i), fmt.Sprintf("input%d", i)).Await()
					if err != nil {
						return "", err
					}
					results = append(results, r)
				}
				return strings.Join(results, ","), nil
			}
			history := histOf(evStarted(1))
			id := uint64(2)
			for i := 0; i < 10; i++ {
				sched := id
				history = append(history, evActivityScheduled(id, fmt.Sprintf("Act%d", i), fmt.Sprintf("input%d", i)))
				id++
				history = append(history, evActivityCompleted(id, sched, fmt.Sprintf("result%d", i)))
				id++
			}
			e := newTestEngine(history)
			r := executeTurn(e, h)
			expected := make([]string, 10)
			for i := range expected {
				expected[i] = fmt.Sprintf("result%d", i)
			}
			assertTurnCompleted(t, r, strings.Join(expected, ","))
		}},
	)
}
