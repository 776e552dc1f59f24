package durabletest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// unregisteredBackoffTests ports tests/unregistered_backoff_tests.rs.
func unregisteredBackoffTests() []sample {
	return []sample{
		{name: "unknown_orchestration_fails_with_poison", run: unknownOrchestrationFailsWithPoison},
		{name: "unknown_activity_fails_with_poison", run: unknownActivityFailsWithPoison},
		{name: "test_backoff_calculation", run: testBackoffCalculation},
		{name: "test_backoff_custom_config", run: testBackoffCustomConfig},
		{name: "continue_as_new_to_missing_version_fails_with_poison", run: continueAsNewToMissingVersionFailsWithPoison},
		{name: "delete_poisoned_orchestration", run: deletePoisonedOrchestration},
	}
}

// unregisteredOptions is Rust's: 3 attempts, 10 ms polls, 10-50 ms backoff.
func unregisteredOptions() *durable.Options {
	return &durable.Options{
		MaxAttempts:         3,
		MinPollInterval:     10 * time.Millisecond,
		UnregisteredBackoff: durable.Backoff{Base: 10 * time.Millisecond, Max: 50 * time.Millisecond},
	}
}

func unknownOrchestrationFailsWithPoison(e *env) {
	r := durable.NewRegistry()
	must(e.t, r.AddOrchestrationVersion("VersionedOrch", "1.0.0", func(_ *durable.OrchestrationContext, in string) (string, error) {
		return "v1: " + in, nil
	}))
	e.start(r, unregisteredOptions())
	e.startOrch("inst-unknown-name", "DoesNotExist", "")
	require.NoError(e.t, e.client().StartOrchestration(e.ctx, "inst-unknown-version", "VersionedOrch", "input", durable.StartOptions{Version: "9.9.9"}))
	for _, inst := range []string{"inst-unknown-name", "inst-unknown-version"} {
		p := poisonDetails(e, e.wait(inst))
		require.Greater(e.t, p.AttemptCount, p.MaxAttempts, "Expected Poison error for %s", inst)
		h := e.executionHistory(inst, 1)
		require.True(e.t, countEvents(h, func(ev duroxide.Event) bool {
			k, ok := ev.Kind.(duroxide.OrchestrationFailed)
			if !ok {
				return false
			}
			_, poison := k.Details.(duroxide.PoisonError)
			return poison
		}) > 0, "Expected poison failure in history for %s", inst)
	}
}

func unknownActivityFailsWithPoison(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "SimpleOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.CallActivity[string](ctx, "UnknownActivity", "input").Await()
	})
	e.start(r, unregisteredOptions())
	e.startOrch("inst-activity-unknown", "SimpleOrch", "")
	poisonDetails(e, e.wait("inst-activity-unknown"))
}

func testBackoffCalculation(e *env) {
	b := durable.Backoff{Base: time.Second, Max: time.Minute}
	for attempt, want := range map[uint32]time.Duration{
		1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 16 * time.Second,
		6: 32 * time.Second, 7: time.Minute, 8: time.Minute, 10: time.Minute,
	} {
		require.Equal(e.t, want, b.Delay(attempt), "attempt %d", attempt)
	}
}

func testBackoffCustomConfig(e *env) {
	b := durable.Backoff{Base: 100 * time.Millisecond, Max: 500 * time.Millisecond}
	for attempt, want := range map[uint32]time.Duration{
		1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond,
		4: 500 * time.Millisecond, 5: 500 * time.Millisecond, 10: 500 * time.Millisecond,
	} {
		require.Equal(e.t, want, b.Delay(attempt), "attempt %d", attempt)
	}
}

func continueAsNewToMissingVersionFailsWithPoison(e *env) {
	r := durable.NewRegistry()
	must(e.t, r.AddOrchestrationVersion("CanToMissing", "1.0.0", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return "", durable.ContinueAsNew(ctx, "new-input", durable.ContinueAsNewOptions{Version: "3.0.0"})
	}))
	e.start(r, unregisteredOptions())
	require.NoError(e.t, e.client().StartOrchestration(e.ctx, "can-missing-test", "CanToMissing", "start", durable.StartOptions{Version: "1.0.0"}))
	poisonDetails(e, e.wait("can-missing-test"))
}

func deletePoisonedOrchestration(e *env) {
	const instance = "delete-after-poison"
	e.start(durable.NewRegistry(), unregisteredOptions())
	e.startOrch(instance, "UnregisteredOrch", "input")
	require.Equal(e.t, durable.StateFailed, e.wait(instance).State, "Should have failed with poison")
	_, err := e.client().DeleteInstance(e.ctx, instance, false)
	require.NoError(e.t, err, "Delete should succeed for poisoned orchestration")
	require.Equal(e.t, durable.StateNotFound, e.status(instance).State, "Instance should be NotFound after delete")
}
