package providertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// Port of duroxide src/provider_validation/bulk_deletion.rs (4 tests):
// delete_instance_bulk deletes terminal root instances matching a filter
// (criteria ANDed, limit applied last), cascading to their descendants.

var bulkDeletionTests = []Test{
	{Name: "test_delete_instance_bulk_filter_combinations", Func: testDeleteInstanceBulkFilterCombinations},
	{Name: "test_delete_instance_bulk_safety_and_limits", Func: testDeleteInstanceBulkSafetyAndLimits},
	{Name: "test_delete_instance_bulk_completed_before_filter", Func: testDeleteInstanceBulkCompletedBeforeFilter},
	{Name: "test_delete_instance_bulk_cascades_to_children", Func: testDeleteInstanceBulkCascadesToChildren},
}

// mustBulkDelete runs delete_instance_bulk and requires success.
func mustBulkDelete(t *testing.T, a duroxide.ProviderAdmin, filter duroxide.InstanceFilter) *duroxide.DeleteInstanceResult {
	t.Helper()
	res, err := a.DeleteInstanceBulk(t.Context(), filter)
	require.NoError(t, err, "delete_instance_bulk")
	require.NotNil(t, res)
	return res
}

func testDeleteInstanceBulkFilterCombinations(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	a := admOf(t, p)
	for i := range 5 {
		admCompleted(t, p, fmt.Sprintf("bulk-del-filter-%d", i))
	}

	res := mustBulkDelete(t, a, duroxide.InstanceFilter{InstanceIDs: []string{"bulk-del-filter-0", "bulk-del-filter-1"}})
	assert.Equal(t, uint64(2), res.InstancesDeleted, "should delete the 2 instances named by id")
	admRequireGone(t, a, "bulk-del-filter-0")
	admRequireGone(t, a, "bulk-del-filter-1")
	admRequireExists(t, a, "bulk-del-filter-2")

	res = mustBulkDelete(t, a, duroxide.InstanceFilter{InstanceIDs: []string{"does-not-exist-1", "does-not-exist-2"}})
	assert.Equal(t, uint64(0), res.InstancesDeleted, "nonexistent ids delete nothing")

	res = mustBulkDelete(t, a, duroxide.InstanceFilter{})
	assert.GreaterOrEqual(t, res.InstancesDeleted, uint64(3), "an empty filter deletes the remaining terminal instances")
	for i := 2; i < 5; i++ {
		admRequireGone(t, a, fmt.Sprintf("bulk-del-filter-%d", i))
	}
}

func testDeleteInstanceBulkSafetyAndLimits(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	a := admOf(t, p)
	admCompleted(t, p, "bulk-del-safe-completed-1")
	admCompleted(t, p, "bulk-del-safe-completed-2")
	createInstance(t, p, "bulk-del-safe-running-1")
	createInstance(t, p, "bulk-del-safe-running-2")

	res := mustBulkDelete(t, a, duroxide.InstanceFilter{InstanceIDs: []string{
		"bulk-del-safe-completed-1", "bulk-del-safe-completed-2",
		"bulk-del-safe-running-1", "bulk-del-safe-running-2",
	}})
	assert.Equal(t, uint64(2), res.InstancesDeleted, "only the completed instances may be deleted")
	admRequireExists(t, a, "bulk-del-safe-running-1", "a running instance must not be deleted")
	admRequireExists(t, a, "bulk-del-safe-running-2", "a running instance must not be deleted")

	for i := range 4 {
		admCompleted(t, p, fmt.Sprintf("bulk-del-batch-%d", i))
	}
	limit := duroxide.InstanceFilter{Limit: ptr(uint32(2))}
	assert.Equal(t, uint64(2), mustBulkDelete(t, a, limit).InstancesDeleted, "the first batch deletes 2")
	assert.Equal(t, uint64(2), mustBulkDelete(t, a, limit).InstancesDeleted, "the second batch deletes 2")
	assert.Equal(t, uint64(0), mustBulkDelete(t, a, limit).InstancesDeleted, "the third batch deletes 0 (all gone)")
}

func testDeleteInstanceBulkCompletedBeforeFilter(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	a := admOf(t, p)
	ids := []string{"bulk-del-time-1", "bulk-del-time-2"}

	before := nowMs()
	sleep(t, 10*time.Millisecond)
	for _, id := range ids {
		admCompleted(t, p, id)
	}
	sleep(t, 10*time.Millisecond)
	after := nowMs()

	res := mustBulkDelete(t, a, duroxide.InstanceFilter{InstanceIDs: ids, CompletedBefore: ptr(before)})
	assert.Equal(t, uint64(0), res.InstancesDeleted, "nothing completed before the first cutoff")
	for _, id := range ids {
		admRequireExists(t, a, id, "%s should still exist", id)
	}

	res = mustBulkDelete(t, a, duroxide.InstanceFilter{InstanceIDs: ids, CompletedBefore: ptr(after)})
	assert.Equal(t, uint64(2), res.InstancesDeleted, "both completed before the second cutoff")
	for _, id := range ids {
		admRequireGone(t, a, id, "%s should be deleted", id)
	}
}

func testDeleteInstanceBulkCascadesToChildren(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	a := admOf(t, p)
	const parent1, child1 = "bulk-del-cascade-parent1", "bulk-del-cascade-child1"
	const parent2 = "bulk-del-cascade-parent2"
	children2 := []string{"bulk-del-cascade-child2a", "bulk-del-cascade-child2b", "bulk-del-cascade-child2c"}
	const standalone = "bulk-del-cascade-standalone"

	admCompleted(t, p, parent1)
	admCompletedWithParent(t, p, child1, parent1)
	admCompleted(t, p, parent2)
	for _, c := range children2 {
		admCompletedWithParent(t, p, c, parent2)
	}
	admCompleted(t, p, standalone)
	all := append([]string{parent1, child1, parent2, standalone}, children2...)
	for _, id := range all {
		admRequireExists(t, a, id)
	}

	res := mustBulkDelete(t, a, duroxide.InstanceFilter{InstanceIDs: []string{parent1, parent2, standalone}})
	assert.Equal(t, uint64(7), res.InstancesDeleted, "3 roots + 1 + 3 children = 7 instances")
	for _, id := range all {
		admRequireGone(t, a, id, "%s should be deleted", id)
	}
}
