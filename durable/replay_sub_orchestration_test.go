package durable

// Port of duroxide 0.1.29 tests/replay_engine/sub_orchestration.rs:
// deterministic child instance ids.

import (
	"slices"
	"strings"
	"testing"

	"github.com/duroxide-go/cdb/duroxide"
)

func init() {
	registerReplaySuite("sub_orchestration",
		// An auto-generated child id is "sub::{scheduling event id}".
		replayCase{"auto_instance_id", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			r := executeTurn(e, hSubOrch("Child", "child-input"))
			assertTurnContinue(t, r)
			assertPendingLen(t, e, 1, "one child start")
			a, ok := e.pendingActions()[0].(actionStartSubOrchestration)
			if !ok {
				t.Fatalf("Expected StartSubOrchestration action, got %T", e.pendingActions()[0])
			}
			if want := "sub::" + uitoa(a.SchedulingEventID); a.Instance != want {
				t.Fatalf("instance = %q, want %q", a.Instance, want)
			}
			if a.SchedulingEventID != 2 {
				t.Fatalf("scheduling event id = %d, want 2", a.SchedulingEventID)
			}
		}},
		// Replay uses the id recorded in history.
		replayCase{"replay_uses_history_instance", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evSubOrchScheduled(2, "Child", "sub::2", "child-input"),
				evSubOrchCompleted(3, 2, "child-result"),
			))
			r := executeTurn(e, hSubOrch("Child", "child-input"))
			assertTurnCompleted(t, r, "child-result")
		}},
		// An explicit id is kept as given.
		replayCase{"explicit_instance_preserved", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			r := executeTurn(e, func(ctx *OrchestrationContext, _ string) (string, error) {
				return CallSubOrchestration[string](ctx, "Child", "child-input", SubOrchestrationOptions{InstanceID: "my-custom-instance"}).Await()
			})
			assertTurnContinue(t, r)
			if len(e.pendingActions()) == 0 {
				t.Fatal("Expected StartSubOrchestration action, got none")
			}
			a, ok := e.pendingActions()[0].(actionStartSubOrchestration)
			if !ok {
				t.Fatalf("Expected StartSubOrchestration action, got %T", e.pendingActions()[0])
			}
			if a.Instance != "my-custom-instance" {
				t.Fatalf("Explicit instance should be preserved: got %q", a.Instance)
			}
		}},
		// Two children dropped unawaited get distinct auto-generated ids.
		// Rust drop()s both futures; Go's forms are Cancel and leaving them
		// unawaited at return, and both are checked.
		replayCase{"multiple_sub_orchs_unique_ids", func(t *testing.T) {
			for _, h := range []OrchestrationFunc{
				func(ctx *OrchestrationContext, _ string) (string, error) {
					CallSubOrchestration[string](ctx, "Child1", "input1").Cancel()
					CallSubOrchestration[string](ctx, "Child2", "input2").Cancel()
					return "done", nil
				},
				func(ctx *OrchestrationContext, _ string) (string, error) {
					CallSubOrchestration[string](ctx, "Child1", "input1")
					CallSubOrchestration[string](ctx, "Child2", "input2")
					return "done", nil
				},
			} {
				checkMultipleSubOrchsUniqueIDs(t, h)
			}
		}},
	)
}

// checkMultipleSubOrchsUniqueIDs runs multiple_sub_orchs_unique_ids's
// assertions against h.
func checkMultipleSubOrchsUniqueIDs(t *testing.T, h OrchestrationFunc) {
	t.Helper()
	e := newTestEngine(histOf(evStarted(1)))
	r := executeTurn(e, h)
	assertTurnCompleted(t, r, "done")
	assertPendingLen(t, e, 2, "two child starts")
	var instances []string
	for _, a := range actionsOfType[actionStartSubOrchestration](e) {
		instances = append(instances, a.Instance)
	}
	if len(instances) != 2 {
		t.Fatalf("want 2 StartSubOrchestration actions, got %v", instances)
	}
	if instances[0] == instances[1] {
		t.Fatalf("Instance IDs should be unique: %v", instances)
	}
	for _, inst := range instances {
		if !strings.HasPrefix(inst, subOrchAutoPrefix) {
			t.Fatalf("Should have auto-generated prefix %q: %q", subOrchAutoPrefix, inst)
		}
	}
	if !slices.Equal(instances, []string{"sub::2", "sub::3"}) {
		t.Fatalf("instances %v, want [sub::2 sub::3]", instances)
	}
	// Both futures were dropped: each child is cancelled once.
	assertDroppedFutureBreadcrumbs[duroxide.SubOrchestrationCancelRequested](t, e, 4, 2, 3)
	cancelled := slices.Sorted(slices.Values(e.cancelledSubOrchestrationIDs()))
	if !slices.Equal(cancelled, []string{"sub::2", "sub::3"}) {
		t.Fatalf("cancelled children %v, want [sub::2 sub::3]", e.cancelledSubOrchestrationIDs())
	}
}
