package durable

// Port of duroxide 0.1.29 tests/replay_engine/fresh_execution.rs: first
// turns, with only OrchestrationStarted in history.

import (
	"slices"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// assertPendingLen checks the number of pending actions.
func assertPendingLen(t *testing.T, e *replayEngine, want int, why string) {
	t.Helper()
	if got := len(e.pendingActions()); got != want {
		t.Fatalf("%s: %d pending actions, want %d: %+v", why, got, want, e.pendingActions())
	}
}

func init() {
	registerReplaySuite("fresh_execution",
		replayCase{"immediate_return_ok", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			r := executeTurn(e, hImmediateOK("success"))
			assertTurnCompleted(t, r, "success")
			assertPendingLen(t, e, 0, "No pending actions expected")
			assertDeltaLen(t, e, 0, "No history delta expected")
		}},
		replayCase{"immediate_return_err", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			r := executeTurn(e, hImmediateErr("failure"))
			assertTurnFailed(t, r)
			assertPendingLen(t, e, 0, "No pending actions expected")
		}},
		replayCase{"schedule_activity_pending", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			r := executeTurn(e, hSingleActivity("Greet", "Alice"))
			assertDelta(t, e, wantEvent{2, nil, duroxide.ActivityScheduled{Name: "Greet", Input: "Alice"}})
			if a := actionsOfType[actionCallActivity](e); len(a) != 1 || a[0] != (actionCallActivity{SchedulingEventID: 2, Name: "Greet", Input: "Alice"}) {
				t.Fatalf("pending actions %+v, want one CallActivity{2, Greet, Alice}", e.pendingActions())
			}
			assertTurnContinue(t, r)
			assertPendingLen(t, e, 1, "One pending action expected")
			if !hasActivityAction(e, "Greet") {
				t.Fatal("Activity action expected")
			}
			assertDeltaLen(t, e, 1, "One history delta expected")
			if !hasActivityScheduledDelta(e, "Greet") {
				t.Fatal("ActivityScheduled event expected")
			}
		}},
		replayCase{"schedule_timer_pending", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			r := executeTurn(e, hSingleTimer(60*time.Second))
			assertDelta(t, e, wantEvent{2, nil, duroxide.TimerCreated{FireAtMs: testNowMs + 60_000}})
			if a := actionsOfType[actionCreateTimer](e); len(a) != 1 || a[0] != (actionCreateTimer{SchedulingEventID: 2, FireAtMs: testNowMs + 60_000}) {
				t.Fatalf("pending actions %+v, want one CreateTimer{2, now+60s}", e.pendingActions())
			}
			assertTurnContinue(t, r)
			assertPendingLen(t, e, 1, "One pending action expected")
			if !hasTimerAction(e) {
				t.Fatal("Timer action expected")
			}
			assertDeltaLen(t, e, 1, "One history delta expected")
			if !hasTimerCreatedDelta(e) {
				t.Fatal("TimerCreated event expected")
			}
		}},
		replayCase{"schedule_external_pending", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			r := executeTurn(e, hWaitExternal("Approval"))
			assertDelta(t, e, wantEvent{2, nil, duroxide.ExternalSubscribed{Name: "Approval"}})
			assertTurnContinue(t, r)
			assertPendingLen(t, e, 1, "One pending action expected")
			if !hasExternalAction(e, "Approval") {
				t.Fatal("External wait action expected")
			}
			assertDeltaLen(t, e, 1, "One history delta expected")
			if !hasExternalSubscribedDelta(e, "Approval") {
				t.Fatal("ExternalSubscribed event expected")
			}
		}},
		replayCase{"schedule_sub_orch_pending", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			r := executeTurn(e, hSubOrch("ChildOrch", "child-input"))
			assertDelta(t, e, wantEvent{2, nil, duroxide.SubOrchestrationScheduled{Name: "ChildOrch", Instance: "sub::2", Input: "child-input"}})
			assertTurnContinue(t, r)
			assertPendingLen(t, e, 1, "One pending action expected")
			if !hasSubOrchAction(e, "ChildOrch") {
				t.Fatal("Sub-orchestration action expected")
			}
		}},
		replayCase{"continue_as_new", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			r := executeTurn(e, hContinueAsNew("new-input"))
			assertTurnContinueAsNew(t, r, "new-input")
		}},
		// A child scheduled and dropped, then continue-as-new: both actions
		// come out of the turn.
		replayCase{"sub_orch_then_continue_as_new", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			r := executeTurn(e, hSubOrchThenContinueAsNew("ChildOrch", "child-input", "new-input"))
			assertTurnContinueAsNew(t, r, "new-input")
			if !hasSubOrchAction(e, "ChildOrch") {
				t.Fatal("Sub-orchestration action expected")
			}
			if !hasContinueAsNewAction(e, "new-input") {
				t.Fatal("ContinueAsNew action expected")
			}
			// Rust returns ContinueAsNew before collecting dropped futures, so
			// the dropped child leaves no breadcrumb and is not cancelled.
			assertDelta(t, e, wantEvent{2, nil, duroxide.SubOrchestrationScheduled{Name: "ChildOrch", Instance: "sub::2", Input: "child-input"}})
			if ids := e.cancelledSubOrchestrationIDs(); len(ids) != 0 {
				t.Fatalf("no child is cancelled on continue-as-new, got %v", ids)
			}
		}},
		// Scheduled and never awaited: all three are pending work, and the
		// dropped futures leave ActivityCancelRequested breadcrumbs.
		// Rust drops each future at once (let _ = ...). In Go the same code
		// is either an explicit Cancel or simply leaving the futures
		// unawaited when the function returns; both must record the drop.
		replayCase{"multiple_schedules_no_await", func(t *testing.T) {
			for _, h := range []OrchestrationFunc{
				hMultiScheduleNoAwait(nameInput{"A", "a"}, nameInput{"B", "b"}, nameInput{"C", "c"}),
				hScheduleUnawaited(nameInput{"A", "a"}, nameInput{"B", "b"}, nameInput{"C", "c"}),
			} {
				checkMultipleSchedulesNoAwait(t, h)
			}
		}},
	)
}

// checkMultipleSchedulesNoAwait runs multiple_schedules_no_await's
// assertions against h.
func checkMultipleSchedulesNoAwait(t *testing.T, h OrchestrationFunc) {
	t.Helper()
	e := newTestEngine(histOf(evStarted(1)))
	r := executeTurn(e, h)
	assertTurnCompleted(t, r, "done")
	assertPendingLen(t, e, 3, "Three pending actions expected")
	if n := len(deltaOfType[duroxide.ActivityScheduled](e)); n != 3 {
		t.Fatalf("Three ActivityScheduled events expected, got %d", n)
	}
	if n := len(deltaOfType[duroxide.ActivityCancelRequested](e)); n != 3 {
		t.Fatalf("Three ActivityCancelRequested events expected, got %d", n)
	}
	for i, w := range []duroxide.ActivityScheduled{{Name: "A", Input: "a"}, {Name: "B", Input: "b"}, {Name: "C", Input: "c"}} {
		assertEvent(t, i, e.historyDelta()[i], wantEvent{uint64(2 + i), nil, w})
	}
	assertDroppedFutureBreadcrumbs[duroxide.ActivityCancelRequested](t, e, 5, 2, 3, 4)
	ids := slices.Sorted(slices.Values(e.cancelledActivityIDs()))
	if !slices.Equal(ids, []uint64{2, 3, 4}) {
		t.Fatalf("cancelled activity ids %v, want [2 3 4]", e.cancelledActivityIDs())
	}
}
