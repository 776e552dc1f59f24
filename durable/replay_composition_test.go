package durable

// Port of duroxide 0.1.29 tests/replay_engine/composition.rs: select and
// join over durable futures, including the 1024-child fan-in regression.

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// hLargeSubOrchestrationFanIn starts count children with explicit ids,
// joins them and checks each result is its index.
func hLargeSubOrchestrationFanIn(count int) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		futs := make([]*Future[string], count)
		for i := range futs {
			futs[i] = CallSubOrchestration[string](ctx, "Child", strconv.Itoa(i), SubOrchestrationOptions{InstanceID: fmt.Sprintf("child-%d", i)})
		}
		results := Join(ctx, futs...)
		for _, r := range results {
			if r.Err != nil {
				return "", r.Err
			}
		}
		for i, r := range results {
			if r.Value != strconv.Itoa(i) {
				return "", fmt.Errorf("result at index %d was %s", i, r.Value)
			}
		}
		return strconv.Itoa(len(results)), nil
	}
}

func init() {
	registerReplaySuite("composition",
		replayCase{"select2_activity_wins", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evTimerCreated(3, 1000),
				evActivityCompleted(4, 2, "activity-result"),
			))
			r := executeTurn(e, hSelect2("Task", "input", 60*time.Second))
			assertTurnCompleted(t, r, "activity:activity-result")
			// The losing timer is virtual: dropping it records nothing.
			assertDelta(t, e)
			if ids := e.cancelledActivityIDs(); len(ids) != 0 {
				t.Fatalf("no activity to cancel, got %v", ids)
			}
		}},
		replayCase{"select2_timer_wins", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evTimerCreated(3, 1000),
				evTimerFired(4, 3, 1000),
			))
			r := executeTurn(e, hSelect2("Task", "input", 60*time.Second))
			assertTurnCompleted(t, r, "timeout")
			// The losing activity is dropped: cancelled on its worker, with a
			// breadcrumb in history.
			assertDelta(t, e, wantEvent{5, refU64(2), duroxide.ActivityCancelRequested{Reason: "dropped_future"}})
			if ids := e.cancelledActivityIDs(); len(ids) != 1 || ids[0] != 2 {
				t.Fatalf("cancelled activity ids %v, want [2]", ids)
			}
		}},
		replayCase{"select2_both_pending", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evTimerCreated(3, 1000),
			))
			r := executeTurn(e, hSelect2("Task", "input", 60*time.Second))
			assertTurnContinue(t, r)
		}},
		replayCase{"join_all_complete", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "A", "a"),
				evActivityScheduled(3, "B", "b"),
				evActivityCompleted(4, 2, "result-a"),
				evActivityCompleted(5, 3, "result-b"),
			))
			r := executeTurn(e, hJoinActivities(nameInput{"A", "a"}, nameInput{"B", "b"}))
			assertTurnCompleted(t, r, "result-a,result-b")
		}},
		replayCase{"join_partial_complete", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "A", "a"),
				evActivityScheduled(3, "B", "b"),
				evActivityCompleted(4, 2, "result-a"),
			))
			r := executeTurn(e, hJoinActivities(nameInput{"A", "a"}, nameInput{"B", "b"}))
			assertTurnContinue(t, r)
		}},
		replayCase{"join_fresh_schedule", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			r := executeTurn(e, hJoinActivities(nameInput{"A", "a"}, nameInput{"B", "b"}, nameInput{"C", "c"}))
			assertTurnContinue(t, r)
			if n := len(e.pendingActions()); n != 3 {
				t.Fatalf("Three activities should be pending: got %d: %+v", n, e.pendingActions())
			}
		}},
		// One failure in the join fails the orchestration.
		replayCase{"join_one_fails", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "A", "a"),
				evActivityScheduled(3, "B", "b"),
				evActivityCompleted(4, 2, "result-a"),
				evActivityFailed(5, 3, "B failed"),
			))
			r := executeTurn(e, hJoinActivities(nameInput{"A", "a"}, nameInput{"B", "b"}))
			assertTurnFailed(t, r)
		}},
		// Regression: a parent whose 1024 children all completed in history
		// must reach a terminal result on replay, with no new work.
		replayCase{"join_large_completed_sub_orchestration_fan_in_reaches_terminal", func(t *testing.T) {
			const fanIn = 1024
			history := make([]duroxide.Event, 0, 1+fanIn*2)
			history = append(history, evStarted(1))
			for i := 0; i < fanIn; i++ {
				history = append(history, evSubOrchScheduled(uint64(i+2), "Child", fmt.Sprintf("child-%d", i), strconv.Itoa(i)))
			}
			for i := 0; i < fanIn; i++ {
				history = append(history, evSubOrchCompleted(uint64(fanIn+i+2), uint64(i+2), strconv.Itoa(i)))
			}
			e := newTestEngine(history)
			r := executeTurn(e, hLargeSubOrchestrationFanIn(fanIn))
			assertTurnCompleted(t, r, strconv.Itoa(fanIn))
			assertDelta(t, e)
			if n := len(e.pendingActions()); n != 0 {
				t.Fatalf("fully replayed fan-in should not emit new pending work: %d actions", n)
			}
		}},
	)
}
