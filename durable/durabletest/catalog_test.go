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
