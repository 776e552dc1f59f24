package durabletest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable/durabletest"
)

// TestTestsListsEachModulesTests checks the catalogue a caller filters
// RunModules with: every module lists its tests, an unknown one nil.
func TestTestsListsEachModulesTests(t *testing.T) {
	for _, m := range durabletest.Modules() {
		require.NotEmpty(t, durabletest.Tests(m), "module %s", m)
	}
	require.Contains(t, durabletest.Tests("e2e_samples"), "sample_typed_activity_and_orchestration_fs")
	require.Contains(t, durabletest.Tests("operations_tests"), "prune_many_prunes_the_executions_of_each_selected_instance")
	require.Nil(t, durabletest.Tests("no_such_module"))
}

// TestRaceReplayListsRustsNineBehaviours pins the race_replay module to
// duroxide 729fbb10's src/provider_validation/race_replay.rs: its nine
// test functions, in source order, none left out of the table.
func TestRaceReplayListsRustsNineBehaviours(t *testing.T) {
	require.Equal(t, []string{
		"test_duplicate_start_preserves_pinned_handler",
		"test_continue_as_new_unregistered_backoff",
		"test_continue_as_new_duplicate_start",
		"test_continue_as_new_transition_delivery",
		"test_queue_race_cancellation_replay",
		"test_continue_as_new_queue_race_replay",
		"test_queue_replay_version_stamp_roundtrip",
		"test_positional_wait_race_replay",
		"test_legacy_queue_race_decision_preserved",
	}, durabletest.Tests("race_replay"))
}
