package durable

// Port of duroxide 0.1.29 tests/replay_engine/failure_handling.rs: the
// error categories of activity and child failures.

import (
	"testing"

	"github.com/duroxide-go/cdb/duroxide"
)

// assertFailedVariant checks the turn failed with details of the given
// ErrorDetails variant and display message.
func assertFailedVariant(t *testing.T, r turnResult, variant, message string) {
	t.Helper()
	assertTurnFailed(t, r)
	if r.Details == nil || r.Details.Variant() != variant {
		t.Fatalf("Expected %s failure, got %v", variant, r)
	}
	if got := displayMessage(r.Details); got != message {
		t.Fatalf("failure message: got %q, want %q", got, message)
	}
}

func init() {
	registerReplaySuite("failure_handling",
		// An application failure reaches the code, which returns it.
		replayCase{"application_error_propagates", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evActivityScheduled(2, "Task", "input")))
			e.prepCompletions(msgsOf(msgActivityFailed(2, "business rule violated")))
			r := executeTurn(e, hSingleActivity("Task", "input"))
			assertFailedVariant(t, r, "Application", "business rule violated")
		}},
		// An infrastructure failure aborts the turn before the code runs.
		replayCase{"infrastructure_error_aborts", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evActivityScheduled(2, "Task", "input")))
			e.prepCompletions(msgsOf(msgActivityFailedInfra(2, "database connection lost")))
			r := executeTurn(e, hSingleActivity("Task", "input"))
			assertFailedVariant(t, r, "Infrastructure", "infrastructure:test: database connection lost")
			// The failure is still recorded in history for audit.
			assertDelta(t, e, wantEvent{3, refU64(2), duroxide.ActivityFailed{
				Details: duroxide.InfrastructureError{Operation: "test", Message: "database connection lost"},
			}})
		}},
		// A configuration failure aborts the turn too.
		replayCase{"configuration_error_aborts", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evActivityScheduled(2, "Task", "input")))
			e.prepCompletions(msgsOf(msgActivityFailedConfig(2, "activity not registered")))
			r := executeTurn(e, hSingleActivity("Task", "input"))
			assertFailedVariant(t, r, "Configuration", "nondeterministic: activity not registered")
		}},
		// A child's infrastructure failure aborts the parent's turn.
		replayCase{"sub_orch_infra_error_aborts_parent", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evSubOrchScheduled(2, "Child", "sub::2", "input")))
			e.prepCompletions(msgsOf(duroxide.SubOrchFailedItem{
				ParentInstance: testInstance, ParentExecutionID: testExecutionID, ParentID: 2,
				Details: duroxide.InfrastructureError{Operation: "child", Message: "child infra failure"},
			}))
			r := executeTurn(e, hSubOrch("Child", "input"))
			assertTurnFailed(t, r)
			assertFailedVariant(t, r, "Infrastructure", "infrastructure:child: child infra failure")
			assertDelta(t, e, wantEvent{3, refU64(2), duroxide.SubOrchestrationFailed{
				Details: duroxide.InfrastructureError{Operation: "child", Message: "child infra failure"},
			}})
		}},
		// A child's application failure reaches the code.
		replayCase{"sub_orch_app_error_propagates", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evSubOrchScheduled(2, "Child", "sub::2", "input")))
			e.prepCompletions(msgsOf(msgSubOrchFailed(2, "child business error")))
			r := executeTurn(e, hSubOrch("Child", "input"))
			assertTurnFailed(t, r)
			assertFailedVariant(t, r, "Application", "child business error")
		}},
	)
}
