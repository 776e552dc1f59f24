package providertest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// Port of duroxide src/provider_validation/prune.rs (4 tests). The current
// execution is never pruned; keep_last None, 0 and 1 are equivalent; bulk
// pruning includes Running instances.

var pruneTests = []Test{
	{Name: "test_prune_options_combinations", Func: testPruneOptionsCombinations},
	{Name: "test_prune_safety", Func: testPruneSafety},
	{Name: "test_prune_bulk", Func: testPruneBulk},
	{Name: "test_prune_bulk_includes_running_instances", Func: testPruneBulkIncludesRunningInstances},
}

// pruneCompletedChain creates n executions of "TestOrch", the last Completed.
func pruneCompletedChain(t *testing.T, p duroxide.Provider, instance string, n uint64) {
	t.Helper()
	admMultiExec(t, p, instance, testOrchName, n, duroxide.StatusCompleted)
}

// mustExecutions lists the instance's executions.
func mustExecutions(t *testing.T, a duroxide.ProviderAdmin, instance string) []uint64 {
	t.Helper()
	ids, err := a.ListExecutions(t.Context(), instance)
	require.NoError(t, err, "list_executions(%s)", instance)
	return ids
}

func testPruneOptionsCombinations(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)

	const id = "prune-options-test"
	pruneCompletedChain(t, p, id, 4)
	require.Len(t, mustExecutions(t, a, id), 4, "should have 4 executions")

	res, err := a.PruneExecutions(ctx, id, duroxide.PruneOptions{KeepLast: ptr(uint32(2))})
	require.NoError(t, err)
	require.NotNil(t, res)
	assert.Equal(t, uint64(1), res.InstancesProcessed)
	assert.ElementsMatch(t, []uint64{3, 4}, mustExecutions(t, a, id), "keep_last=2 keeps the latest 2 executions")

	const id2 = "prune-options-empty"
	pruneCompletedChain(t, p, id2, 3)
	info, err := a.InstanceInfo(ctx, id2)
	require.NoError(t, err)
	_, err = a.PruneExecutions(ctx, id2, duroxide.PruneOptions{})
	require.NoError(t, err)
	assert.Equal(t, []uint64{info.CurrentExecutionID}, mustExecutions(t, a, id2),
		"empty options prune all historical executions and keep only the current one")
}

func testPruneSafety(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)

	const id = "prune-safety-current"
	pruneCompletedChain(t, p, id, 3)
	_, err := a.PruneExecutions(ctx, id, duroxide.PruneOptions{KeepLast: ptr(uint32(0))})
	require.NoError(t, err)
	info, err := a.InstanceInfo(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), info.CurrentExecutionID, "the current execution must remain")
	assert.Contains(t, mustExecutions(t, a, id), uint64(3), "keep_last=0 must not prune the current execution")

	_, err = a.PruneExecutions(ctx, "does-not-exist-prune", duroxide.PruneOptions{KeepLast: ptr(uint32(1))})
	require.ErrorIs(t, err, duroxide.ErrInstanceNotFound, "pruning a nonexistent instance must fail")

	for _, tc := range []struct {
		label    string
		keepLast *uint32
	}{{"none", nil}, {"some0", ptr(uint32(0))}, {"some1", ptr(uint32(1))}} {
		inst := fmt.Sprintf("prune-terminal-%s", tc.label)
		pruneCompletedChain(t, p, inst, 4)
		info, err := a.InstanceInfo(ctx, inst)
		require.NoError(t, err)
		require.Equal(t, duroxide.StatusCompleted, info.Status, "the instance should be terminal")

		res, err := a.PruneExecutions(ctx, inst, duroxide.PruneOptions{KeepLast: tc.keepLast})
		require.NoError(t, err, "keep_last=%s", tc.label)
		require.NotNil(t, res)
		assert.Equal(t, []uint64{info.CurrentExecutionID}, mustExecutions(t, a, inst),
			"keep_last=%s: exactly the current execution should remain", tc.label)
		assert.GreaterOrEqual(t, res.ExecutionsDeleted, uint64(3),
			"keep_last=%s: the 3 historical executions should be deleted", tc.label)
	}
}

func testPruneBulk(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	for i := range 3 {
		pruneCompletedChain(t, p, fmt.Sprintf("prune-bulk-%d", i), 4)
	}

	res, err := a.PruneExecutionsBulk(ctx,
		duroxide.InstanceFilter{InstanceIDs: []string{"prune-bulk-0", "prune-bulk-1"}},
		duroxide.PruneOptions{KeepLast: ptr(uint32(1))})
	require.NoError(t, err)
	require.NotNil(t, res)
	assert.Equal(t, uint64(2), res.InstancesProcessed, "should process 2 instances")
	assert.GreaterOrEqual(t, res.ExecutionsDeleted, uint64(4), "should delete executions across both instances")

	assert.Len(t, mustExecutions(t, a, "prune-bulk-0"), 1, "instance 0 should have 1 execution")
	assert.Len(t, mustExecutions(t, a, "prune-bulk-1"), 1, "instance 1 should have 1 execution")
	assert.Len(t, mustExecutions(t, a, "prune-bulk-2"), 4, "instance 2 is not in the filter and keeps 4")
}

func testPruneBulkIncludesRunningInstances(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	const id = "prune-running-inst"
	admMultiExec(t, p, id, "LongRunning", 3, duroxide.StatusRunning)

	require.Len(t, mustExecutions(t, a, id), 3, "should have 3 executions")
	info, err := a.InstanceInfo(ctx, id)
	require.NoError(t, err)
	require.Equal(t, duroxide.StatusRunning, info.Status, "the instance should still be Running")
	require.Equal(t, uint64(3), info.CurrentExecutionID, "the current execution should be 3")

	res, err := a.PruneExecutionsBulk(ctx,
		duroxide.InstanceFilter{InstanceIDs: []string{id}},
		duroxide.PruneOptions{KeepLast: ptr(uint32(1))})
	require.NoError(t, err)
	require.NotNil(t, res)
	assert.Equal(t, uint64(1), res.InstancesProcessed, "the running instance should be processed")
	assert.Equal(t, uint64(2), res.ExecutionsDeleted, "the 2 historical executions should be deleted")
	assert.Equal(t, []uint64{3}, mustExecutions(t, a, id), "only the current execution should remain")

	info, err = a.InstanceInfo(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, duroxide.StatusRunning, info.Status, "the instance should still be Running after the prune")
}
