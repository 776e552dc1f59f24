package durable

// Port of duroxide 0.1.29 tests/replay_engine/event_allocation.rs: event
// ids of new events.

import (
	"reflect"
	"slices"
	"testing"

	"github.com/duroxide-go/cdb/duroxide"
)

func init() {
	registerReplaySuite("event_allocation",
		// New events are numbered from 2 after OrchestrationStarted. The three
		// futures are dropped unawaited, so ActivityCancelRequested
		// breadcrumbs follow and take the next ids.
		// Checked with the futures cancelled explicitly and with them left
		// unawaited at return: Go's two forms of Rust's dropped futures.
		replayCase{"sequential_allocation", func(t *testing.T) {
			for _, h := range []OrchestrationFunc{
				hMultiScheduleNoAwait(nameInput{"A", "a"}, nameInput{"B", "b"}, nameInput{"C", "c"}),
				hScheduleUnawaited(nameInput{"A", "a"}, nameInput{"B", "b"}, nameInput{"C", "c"}),
			} {
				checkSequentialAllocation(t, h)
			}
		}},
		// After replay, the next id is the largest id in history plus one.
		replayCase{"allocation_after_replay", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "First", "input"),
				evActivityCompleted(3, 2, "result"),
			))
			r := executeTurn(e, hTwoActivities(nameInput{"First", "input"}, nameInput{"Second", "input2"}))
			assertTurnContinue(t, r)
			if ids := deltaEventIDs(e); !reflect.DeepEqual(ids, []uint64{4}) {
				t.Fatalf("New event should get ID = max + 1: got %v", ids)
			}
			assertDelta(t, e, wantEvent{4, nil, duroxide.ActivityScheduled{Name: "Second", Input: "input2"}})
		}},
		// Gaps in history do not matter: numbering continues after the last.
		replayCase{"allocation_with_gaps", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evActivityScheduled(5, "Task", "input")))
			e.prepCompletions(msgsOf(msgActivityCompleted(5, "result")))
			r := executeTurn(e, hTwoActivities(nameInput{"Task", "input"}, nameInput{"Next", "next"}))
			assertTurnContinue(t, r)
			ids := deltaEventIDs(e)
			if !slices.Contains(ids, 6) {
				t.Fatalf("Completion should get ID 6: got %v", ids)
			}
			if !slices.Contains(ids, 7) {
				t.Fatalf("New schedule should get ID 7: got %v", ids)
			}
			assertDelta(t, e,
				wantEvent{6, refU64(5), duroxide.ActivityCompleted{Result: "result"}},
				wantEvent{7, nil, duroxide.ActivityScheduled{Name: "Next", Input: "next"}},
			)
		}},
		// The pending action names the event id of its schedule event.
		replayCase{"pending_actions_have_correct_event_id", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			r := executeTurn(e, hSingleActivity("Task", "input"))
			assertTurnContinue(t, r)
			if n := len(e.pendingActions()); n != 1 {
				t.Fatalf("want 1 pending action, got %d: %+v", n, e.pendingActions())
			}
			a, ok := e.pendingActions()[0].(actionCallActivity)
			if !ok {
				t.Fatalf("Expected CallActivity action, got %T", e.pendingActions()[0])
			}
			if a.SchedulingEventID != 2 {
				t.Fatalf("Action should reference event_id 2, got %d", a.SchedulingEventID)
			}
		}},
	)
}

// checkSequentialAllocation runs sequential_allocation's assertions
// against h.
func checkSequentialAllocation(t *testing.T, h OrchestrationFunc) {
	t.Helper()
	e := newTestEngine(histOf(evStarted(1)))
	r := executeTurn(e, h)
	assertTurnCompleted(t, r, "done")

	var scheduled []uint64
	for _, ev := range deltaOfType[duroxide.ActivityScheduled](e) {
		scheduled = append(scheduled, ev.EventID)
	}
	if !reflect.DeepEqual(scheduled, []uint64{2, 3, 4}) {
		t.Fatalf("Scheduled event IDs should start at 2: got %v", scheduled)
	}
	ids := deltaEventIDs(e)
	if len(ids) == 0 || ids[0] != 2 {
		t.Fatalf("First delta event ID should be 2: got %v", ids)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] != ids[i-1]+1 {
			t.Fatalf("Event IDs should be sequential starting from 2, got %v", ids)
		}
	}
}
