package durable

// Port of duroxide 0.1.29 tests/replay_engine/action_to_event.rs: every
// scheduling action records its matching event in the history delta, so
// replay can enforce determinism.

import (
	"testing"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// hDetachedOrch starts a detached orchestration and returns "scheduled".
func hDetachedOrch(name, instance, input string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		StartOrchestration(ctx, name, instance, input)
		return "scheduled", nil
	}
}

// hSubOrchNoAwait schedules a child, drops its future and returns.
func hSubOrchNoAwait(name, input string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		CallSubOrchestration[string](ctx, name, input).Cancel()
		return "scheduled", nil
	}
}

// hSingleSessionActivity awaits one session-bound activity.
func hSingleSessionActivity(name, input, sessionID string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		return CallActivity[string](ctx, name, input, ActivityOptions{Session: sessionID}).Await()
	}
}

// hTaggedActivity awaits one activity routed by tag.
func hTaggedActivity(name, input, tag string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		return CallActivity[string](ctx, name, input, ActivityOptions{Tag: tag}).Await()
	}
}

// onlyActivityScheduled returns the single ActivityScheduled of the delta.
func onlyActivityScheduled(t *testing.T, e *replayEngine) duroxide.ActivityScheduled {
	t.Helper()
	evs := deltaOfType[duroxide.ActivityScheduled](e)
	if len(evs) != 1 {
		t.Fatalf("Expected exactly one ActivityScheduled event in delta, got %v", evs)
	}
	return evs[0].Kind.(duroxide.ActivityScheduled)
}

func showOptStr(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func init() {
	registerReplaySuite("action_to_event",
		replayCase{"schedule_activity_creates_activity_scheduled_event", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			assertTurnContinue(t, executeTurn(e, hSingleActivity("MyActivity", "my-input")))
			k := onlyActivityScheduled(t, e)
			if k.Name != "MyActivity" || k.Input != "my-input" {
				t.Fatalf("ActivityScheduled = %+v, want MyActivity/my-input", k)
			}
		}},
		replayCase{"schedule_activity_on_session_creates_activity_scheduled_event_with_session_id", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			assertTurnContinue(t, executeTurn(e, hSingleSessionActivity("MyActivity", "my-input", "sess-1")))
			k := onlyActivityScheduled(t, e)
			if k.Name != "MyActivity" || k.Input != "my-input" {
				t.Fatalf("ActivityScheduled = %+v, want MyActivity/my-input", k)
			}
			if k.SessionID == nil || *k.SessionID != "sess-1" {
				t.Fatalf("session_id = %s, want sess-1", showOptStr(k.SessionID))
			}
		}},
		replayCase{"schedule_activity_on_session_session_id_mismatch_causes_nondeterminism", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "MyActivity", "my-input"), // no session_id
			})
			r := executeTurn(e, hSingleSessionActivity("MyActivity", "my-input", "sess-1"))
			assertTurnNondeterminism(t, r)
		}},
		replayCase{"schedule_timer_creates_timer_created_event", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			assertTurnContinue(t, executeTurn(e, hSingleTimer(10*time.Second)))
			evs := deltaOfType[duroxide.TimerCreated](e)
			if len(evs) != 1 {
				t.Fatalf("Expected exactly one TimerCreated event in delta, got %v", evs)
			}
			if k := evs[0].Kind.(duroxide.TimerCreated); k.FireAtMs == 0 {
				t.Fatalf("Expected fire_at_ms to be set, got %+v", k)
			}
		}},
		replayCase{"schedule_wait_creates_external_subscribed_event", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			assertTurnContinue(t, executeTurn(e, hWaitExternal("MyEvent")))
			evs := deltaOfType[duroxide.ExternalSubscribed](e)
			if len(evs) != 1 {
				t.Fatalf("Expected exactly one ExternalSubscribed event in delta, got %v", evs)
			}
			if k := evs[0].Kind.(duroxide.ExternalSubscribed); k.Name != "MyEvent" {
				t.Fatalf("ExternalSubscribed name = %q, want MyEvent", k.Name)
			}
		}},
		replayCase{"schedule_sub_orchestration_creates_sub_orchestration_scheduled_event", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			assertTurnCompleted(t, executeTurn(e, hSubOrchNoAwait("ChildOrch", "child-input")), "scheduled")
			evs := deltaOfType[duroxide.SubOrchestrationScheduled](e)
			if len(evs) != 1 {
				t.Fatalf("Expected exactly one SubOrchestrationScheduled event in delta, got %v", evs)
			}
			if k := evs[0].Kind.(duroxide.SubOrchestrationScheduled); k.Name != "ChildOrch" || k.Input != "child-input" {
				t.Fatalf("SubOrchestrationScheduled = %+v, want ChildOrch/child-input", k)
			}
		}},
		replayCase{"schedule_orchestration_creates_orchestration_chained_event", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			r := executeTurn(e, hDetachedOrch("DetachedChild", "child-instance", "child-input"))
			assertTurnCompleted(t, r, "scheduled")
			evs := deltaOfType[duroxide.OrchestrationChained](e)
			if len(evs) != 1 {
				t.Fatalf("Expected exactly one OrchestrationChained event in delta (StartOrchestrationDetached must be recorded), got %v", evs)
			}
			k := evs[0].Kind.(duroxide.OrchestrationChained)
			if k.Name != "DetachedChild" || k.Instance != "child-instance" || k.Input != "child-input" {
				t.Fatalf("OrchestrationChained = %+v, want DetachedChild/child-instance/child-input", k)
			}
		}},
		replayCase{"multiple_action_types_create_corresponding_events", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			h := hMultiScheduleNoAwait(nameInput{"Task1", "input1"}, nameInput{"Task2", "input2"})
			assertTurnCompleted(t, executeTurn(e, h), "done")
			if evs := deltaOfType[duroxide.ActivityScheduled](e); len(evs) != 2 {
				t.Fatalf("Expected two ActivityScheduled events in delta, got %v", evs)
			}
		}},

		// Nondeterminism detection.
		replayCase{"detached_orchestration_then_activity_replays_correctly", func(t *testing.T) {
			// Phase 1: fresh execution.
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			h := hDetachedThenActivity("DetachedChild", "child-1", "child-input", "MyActivity", "activity-input")
			assertTurnContinue(t, executeTurn(e, h))
			delta := append([]duroxide.Event(nil), e.historyDelta()...)

			// Phase 2: replay what phase 1 persisted, plus the completion.
			replay := newTestEngine(append([]duroxide.Event{evStarted(1)}, delta...))
			var activityID uint64
			found := false
			for _, ev := range replay.finalHistory() {
				if _, ok := ev.Kind.(duroxide.ActivityScheduled); ok {
					activityID, found = ev.EventID, true
					break
				}
			}
			if !found {
				t.Fatalf("ActivityScheduled should exist in history: %v", replay.finalHistory())
			}
			replay.prepCompletions([]duroxide.WorkItem{msgActivityCompleted(activityID, "activity-result")})
			assertTurnCompleted(t, executeTurn(replay, h), "activity-result")
		}},

		// Activity tags.
		replayCase{"with_tag_sets_tag_on_emitted_event", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			assertTurnContinue(t, executeTurn(e, hTaggedActivity("GpuWork", "data", "gpu")))
			k := onlyActivityScheduled(t, e)
			if k.Name != "GpuWork" {
				t.Fatalf("name = %q, want GpuWork", k.Name)
			}
			if k.Tag == nil || *k.Tag != "gpu" {
				t.Fatalf("tag = %s, want gpu", showOptStr(k.Tag))
			}
		}},
		replayCase{"no_with_tag_leaves_none", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{evStarted(1)})
			assertTurnContinue(t, executeTurn(e, hSingleActivity("PlainWork", "data")))
			if k := onlyActivityScheduled(t, e); k.Tag != nil {
				t.Fatalf("tag = %q, want None", *k.Tag)
			}
		}},
		replayCase{"tag_mismatch_on_replay_causes_nondeterminism", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evActivityScheduled(2, "GpuWork", "data"), // no tag
			})
			assertTurnNondeterminism(t, executeTurn(e, hTaggedActivity("GpuWork", "data", "gpu")))
		}},
		replayCase{"tag_value_change_on_replay_causes_nondeterminism", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evWithID(2, nil, duroxide.ActivityScheduled{Name: "Render", Input: "data", Tag: refStr("gpu")}),
			})
			assertTurnNondeterminism(t, executeTurn(e, hTaggedActivity("Render", "data", "cpu")))
		}},
		replayCase{"tag_removal_on_replay_causes_nondeterminism", func(t *testing.T) {
			e := newTestEngine([]duroxide.Event{
				evStarted(1),
				evWithID(2, nil, duroxide.ActivityScheduled{Name: "Render", Input: "data", Tag: refStr("gpu")}),
			})
			assertTurnNondeterminism(t, executeTurn(e, hSingleActivity("Render", "data")))
		}},
	)
}
