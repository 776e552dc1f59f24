package providertest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// Port of duroxide src/provider_validation/kv_store.rs (35 tests).
//
// KV events in an ack go to the current execution's delta; an ack whose
// metadata status is Completed, Failed or ContinuedAsNew merges the delta
// into the instance's store (the status alone triggers the merge). Client
// reads see store+delta; the fetched snapshot sees the store only.

var kvStoreTests = []Test{
	{Name: "test_kv_set_and_get", Func: testKvSetAndGet},
	{Name: "test_kv_overwrite", Func: testKvOverwrite},
	{Name: "test_kv_clear_single", Func: testKvClearSingle},
	{Name: "test_kv_clear_all", Func: testKvClearAll},
	{Name: "test_kv_get_nonexistent", Func: testKvGetNonexistent},
	{Name: "test_kv_snapshot_in_fetch", Func: testKvSnapshotInFetch},
	{Name: "test_kv_snapshot_after_clear_single", Func: testKvSnapshotAfterClearSingle},
	{Name: "test_kv_snapshot_after_clear_all", Func: testKvSnapshotAfterClearAll},
	{Name: "test_kv_execution_id_tracking", Func: testKvExecutionIDTracking},
	{Name: "test_kv_cross_execution_overwrite", Func: testKvCrossExecutionOverwrite},
	{Name: "test_kv_cross_execution_remove_readd", Func: testKvCrossExecutionRemoveReadd},
	{Name: "test_kv_prune_preserves_overwritten", Func: testKvPrunePreservesOverwritten},
	{Name: "test_kv_prune_preserves_all_keys", Func: testKvPrunePreservesAllKeys},
	{Name: "test_kv_instance_isolation", Func: testKvInstanceIsolation},
	{Name: "test_kv_delete_instance_cascades", Func: testKvDeleteInstanceCascades},
	{Name: "test_kv_clear_nonexistent_key", Func: testKvClearNonexistentKey},
	{Name: "test_kv_get_unknown_instance", Func: testKvGetUnknownInstance},
	{Name: "test_kv_set_after_clear", Func: testKvSetAfterClear},
	{Name: "test_kv_empty_value", Func: testKvEmptyValue},
	{Name: "test_kv_large_value", Func: testKvLargeValue},
	{Name: "test_kv_special_chars_in_key", Func: testKvSpecialCharsInKey},
	{Name: "test_kv_snapshot_empty", Func: testKvSnapshotEmpty},
	{Name: "test_kv_snapshot_cross_execution", Func: testKvSnapshotCrossExecution},
	{Name: "test_kv_prune_current_execution_protected", Func: testKvPruneCurrentExecutionProtected},
	{Name: "test_kv_delete_instance_with_children", Func: testKvDeleteInstanceWithChildren},
	{Name: "test_kv_clear_isolation", Func: testKvClearIsolation},
	{Name: "test_kv_delta_snapshot_excludes_current_execution", Func: testKvDeltaSnapshotExcludesCurrentExecution},
	{Name: "test_kv_delta_snapshot_includes_completed_execution", Func: testKvDeltaSnapshotIncludesCompletedExecution},
	{Name: "test_kv_delta_client_reads_merged", Func: testKvDeltaClientReadsMerged},
	{Name: "test_kv_delta_tombstone_overrides_store", Func: testKvDeltaTombstoneOverridesStore},
	{Name: "test_kv_delta_clear_all_tombstones_store", Func: testKvDeltaClearAllTombstonesStore},
	{Name: "test_kv_delta_merged_on_completion", Func: testKvDeltaMergedOnCompletion},
	{Name: "test_kv_delta_merged_on_can", Func: testKvDeltaMergedOnCan},
	{Name: "test_kv_delta_delete_instance_cascades", Func: testKvDeltaDeleteInstanceCascades},
	{Name: "test_kv_delta_prune_untouched_key_survives", Func: testKvDeltaPruneUntouchedKeySurvives},
}

// ---- kv helpers ----

// kvAckWithDelta is Rust's ack_with_delta: poke, fetch, ack events with
// default metadata (no status, so no merge).
func kvAckWithDelta(t *testing.T, p duroxide.Provider, instance string, executionID uint64, events ...duroxide.Event) {
	t.Helper()
	admPokeAck(t, p, instance, executionID, events, duroxide.ExecutionMetadata{})
}

// kvContinueAsNew is Rust's continue_as_new: a poke turn acked on the
// previous execution with status ContinuedAsNew and no events, then a
// ContinueAsNew item fetched and acked as newExecutionID with its
// OrchestrationStarted.
func kvContinueAsNew(t *testing.T, p duroxide.Provider, instance string, newExecutionID uint64) {
	t.Helper()
	admPokeAck(t, p, instance, newExecutionID-1, nil, kvStatusMetadata(duroxide.StatusContinuedAsNew))
	enqueueOrch(t, p, duroxide.ContinueAsNewItem{
		Instance: instance, Orchestration: testOrchName, Input: testInput,
		Version: ptr(testOrchVersion), CarryForwardEvents: []duroxide.CarryForwardEvent{},
	})
	item := mustFetch(t, p, testLock)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  newExecutionID,
		HistoryDelta: []duroxide.Event{startedEvent(instance, newExecutionID)},
		Metadata:     runningMetadata(),
	})
}

// kvStatusMetadata is runningMetadata with a status and no output.
func kvStatusMetadata(status string) duroxide.ExecutionMetadata {
	m := runningMetadata()
	m.Status = ptr(status)
	return m
}

// kvCompleteInstance is Rust's complete_instance: a poke turn acked with
// OrchestrationCompleted (event 9999) and status Completed.
func kvCompleteInstance(t *testing.T, p duroxide.Provider, instance string, executionID uint64) {
	t.Helper()
	admPokeAck(t, p, instance, executionID,
		[]duroxide.Event{orchestrationCompletedEvent(instance, executionID, 9999, "done")},
		statusMetadata(duroxide.StatusCompleted, "done"))
}

// kvGet reads one key of the merged view; nil means absent.
func kvGet(t *testing.T, p duroxide.Provider, instance, key string) *string {
	t.Helper()
	v, found, err := p.KVValue(t.Context(), instance, key)
	require.NoError(t, err, "get_kv_value(%s, %s)", instance, key)
	if !found {
		return nil
	}
	return &v
}

// kvSnapshotTurn pokes the instance, fetches it and returns the item's KV
// snapshot after acking the turn (execution executionID, no changes).
func kvSnapshotTurn(t *testing.T, p duroxide.Provider, instance string, executionID uint64) map[string]duroxide.KVEntry {
	t.Helper()
	poke(t, p, instance)
	item := mustFetchInstance(t, p, testLock, instance)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: executionID})
	return item.KVSnapshot
}

// kvSnapshotValues flattens a snapshot to key → value.
func kvSnapshotValues(s map[string]duroxide.KVEntry) map[string]string {
	out := map[string]string{}
	for k, e := range s {
		out[k] = e.Value
	}
	return out
}

// kvPruneKeepLast1 prunes the instance with keep_last = 1.
func kvPruneKeepLast1(t *testing.T, p duroxide.Provider, instance string) {
	t.Helper()
	_, err := admOf(t, p).PruneExecutions(t.Context(), instance, duroxide.PruneOptions{KeepLast: ptr(uint32(1))})
	require.NoError(t, err, "prune_executions")
}

// ---- tests ----

func testKvSetAndGet(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-set")
	kvAckWithDelta(t, p, "kv-set", 1, kvSet("kv-set", 1, 100, "counter", "42", 0))
	assert.Equal(t, ptr("42"), kvGet(t, p, "kv-set", "counter"))
}

func testKvOverwrite(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-over")
	kvAckWithDelta(t, p, "kv-over", 1, kvSet("kv-over", 1, 100, "status", "old", 0))
	assert.Equal(t, ptr("old"), kvGet(t, p, "kv-over", "status"), "initial value should be 'old'")
	kvAckWithDelta(t, p, "kv-over", 1, kvSet("kv-over", 1, 101, "status", "new", 0))
	assert.Equal(t, ptr("new"), kvGet(t, p, "kv-over", "status"))
}

func testKvClearSingle(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-clr1")
	kvAckWithDelta(t, p, "kv-clr1", 1, kvSet("kv-clr1", 1, 100, "remove_me", "x", 0))
	assert.Equal(t, ptr("x"), kvGet(t, p, "kv-clr1", "remove_me"), "value should be set before clearing")
	kvAckWithDelta(t, p, "kv-clr1", 1, kvCleared("kv-clr1", 1, 101, "remove_me"))
	assert.Nil(t, kvGet(t, p, "kv-clr1", "remove_me"))
}

func testKvClearAll(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-clra")
	kvAckWithDelta(t, p, "kv-clra", 1,
		kvSet("kv-clra", 1, 100, "a", "1", 0),
		kvSet("kv-clra", 1, 101, "b", "2", 0))
	assert.Equal(t, ptr("1"), kvGet(t, p, "kv-clra", "a"), "key 'a' should be set")
	assert.Equal(t, ptr("2"), kvGet(t, p, "kv-clra", "b"), "key 'b' should be set")

	kvAckWithDelta(t, p, "kv-clra", 1, kvAllCleared("kv-clra", 1, 102))
	assert.Nil(t, kvGet(t, p, "kv-clra", "a"))
	assert.Nil(t, kvGet(t, p, "kv-clra", "b"))
}

func testKvGetNonexistent(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-none")
	assert.Nil(t, kvGet(t, p, "kv-none", "nope"))
}

func testKvSnapshotInFetch(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-fetch")
	kvAckWithDelta(t, p, "kv-fetch", 1,
		kvSet("kv-fetch", 1, 100, "x", "10", 0),
		kvSet("kv-fetch", 1, 101, "y", "20", 0))
	kvCompleteInstance(t, p, "kv-fetch", 1)

	snap := kvSnapshotTurn(t, p, "kv-fetch", 1)
	assert.Equal(t, map[string]string{"x": "10", "y": "20"}, kvSnapshotValues(snap))
}

func testKvSnapshotAfterClearSingle(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-fclr1")
	kvAckWithDelta(t, p, "kv-fclr1", 1,
		kvSet("kv-fclr1", 1, 100, "keep", "yes", 0),
		kvSet("kv-fclr1", 1, 101, "remove", "bye", 0))
	kvAckWithDelta(t, p, "kv-fclr1", 1, kvCleared("kv-fclr1", 1, 102, "remove"))
	kvCompleteInstance(t, p, "kv-fclr1", 1)

	snap := kvSnapshotTurn(t, p, "kv-fclr1", 1)
	assert.Equal(t, map[string]string{"keep": "yes"}, kvSnapshotValues(snap))
}

func testKvSnapshotAfterClearAll(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-fclra")
	kvAckWithDelta(t, p, "kv-fclra", 1,
		kvSet("kv-fclra", 1, 100, "a", "1", 0),
		kvSet("kv-fclra", 1, 101, "b", "2", 0))
	kvAckWithDelta(t, p, "kv-fclra", 1, kvAllCleared("kv-fclra", 1, 102))

	snap := kvSnapshotTurn(t, p, "kv-fclra", 1)
	assert.Empty(t, snap, "expected an empty snapshot")
}

func testKvExecutionIDTracking(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	admOf(t, p)
	createInstance(t, p, "kv-exec")
	kvAckWithDelta(t, p, "kv-exec", 1, kvSet("kv-exec", 1, 100, "shared", "from_exec_1", 0))
	assert.Equal(t, ptr("from_exec_1"), kvGet(t, p, "kv-exec", "shared"))

	kvContinueAsNew(t, p, "kv-exec", 2)
	kvAckWithDelta(t, p, "kv-exec", 2, kvSet("kv-exec", 2, 200, "shared", "from_exec_2", 0))
	assert.Equal(t, ptr("from_exec_2"), kvGet(t, p, "kv-exec", "shared"), "should reflect the exec 2 value")

	kvPruneKeepLast1(t, p, "kv-exec")
	assert.Equal(t, ptr("from_exec_2"), kvGet(t, p, "kv-exec", "shared"),
		"the key must survive pruning: its last writer (exec 2) is not pruned")
}

func testKvCrossExecutionOverwrite(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-xexec")
	kvAckWithDelta(t, p, "kv-xexec", 1, kvSet("kv-xexec", 1, 100, "k", "v1", 0))
	assert.Equal(t, ptr("v1"), kvGet(t, p, "kv-xexec", "k"), "should see the value from exec 1")

	kvContinueAsNew(t, p, "kv-xexec", 2)
	kvAckWithDelta(t, p, "kv-xexec", 2, kvSet("kv-xexec", 2, 200, "k", "v2", 0))
	assert.Equal(t, ptr("v2"), kvGet(t, p, "kv-xexec", "k"), "exec 2 should overwrite the exec 1 value")
}

func testKvCrossExecutionRemoveReadd(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-xrm")
	kvAckWithDelta(t, p, "kv-xrm", 1, kvSet("kv-xrm", 1, 100, "cycle", "exec1", 0))
	assert.Equal(t, ptr("exec1"), kvGet(t, p, "kv-xrm", "cycle"))

	kvContinueAsNew(t, p, "kv-xrm", 2)
	kvAckWithDelta(t, p, "kv-xrm", 2, kvCleared("kv-xrm", 2, 200, "cycle"))
	assert.Nil(t, kvGet(t, p, "kv-xrm", "cycle"), "the key should be cleared in exec 2")

	kvContinueAsNew(t, p, "kv-xrm", 3)
	kvAckWithDelta(t, p, "kv-xrm", 3, kvSet("kv-xrm", 3, 300, "cycle", "exec3", 0))
	assert.Equal(t, ptr("exec3"), kvGet(t, p, "kv-xrm", "cycle"), "the key should be re-set in exec 3")
}

func testKvPrunePreservesOverwritten(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	admOf(t, p)
	createInstance(t, p, "kv-prn1")
	kvAckWithDelta(t, p, "kv-prn1", 1, kvSet("kv-prn1", 1, 100, "survive", "v1", 0))
	kvContinueAsNew(t, p, "kv-prn1", 2)
	kvAckWithDelta(t, p, "kv-prn1", 2, kvSet("kv-prn1", 2, 200, "survive", "v2", 0))

	kvPruneKeepLast1(t, p, "kv-prn1")
	assert.Equal(t, ptr("v2"), kvGet(t, p, "kv-prn1", "survive"),
		"an overwritten key must survive pruning of the old execution")
}

func testKvPrunePreservesAllKeys(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	admOf(t, p)
	createInstance(t, p, "kv-prn2")
	kvAckWithDelta(t, p, "kv-prn2", 1, kvSet("kv-prn2", 1, 100, "orphan", "survives", 0))
	kvContinueAsNew(t, p, "kv-prn2", 2)
	kvAckWithDelta(t, p, "kv-prn2", 2, kvSet("kv-prn2", 2, 200, "keeper", "alive", 0))
	assert.Equal(t, ptr("survives"), kvGet(t, p, "kv-prn2", "orphan"))
	assert.Equal(t, ptr("alive"), kvGet(t, p, "kv-prn2", "keeper"))

	kvPruneKeepLast1(t, p, "kv-prn2")
	assert.Equal(t, ptr("survives"), kvGet(t, p, "kv-prn2", "orphan"),
		"KV entries must survive execution pruning (instance-scoped lifetime)")
	assert.Equal(t, ptr("alive"), kvGet(t, p, "kv-prn2", "keeper"), "the exec 2 key must survive")
}

func testKvInstanceIsolation(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-iso-a")
	createInstance(t, p, "kv-iso-b")
	kvAckWithDelta(t, p, "kv-iso-a", 1, kvSet("kv-iso-a", 1, 100, "shared_name", "from_a", 0))
	kvAckWithDelta(t, p, "kv-iso-b", 1, kvSet("kv-iso-b", 1, 100, "shared_name", "from_b", 0))
	assert.Equal(t, ptr("from_a"), kvGet(t, p, "kv-iso-a", "shared_name"))
	assert.Equal(t, ptr("from_b"), kvGet(t, p, "kv-iso-b", "shared_name"))
}

func testKvDeleteInstanceCascades(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	createInstance(t, p, "kv-del")
	kvAckWithDelta(t, p, "kv-del", 1, kvSet("kv-del", 1, 100, "doomed", "bye", 0))
	kvCompleteInstance(t, p, "kv-del", 1)
	assert.Equal(t, ptr("bye"), kvGet(t, p, "kv-del", "doomed"), "the value should exist before deletion")

	_, err := a.DeleteInstance(ctx, "kv-del", false)
	require.NoError(t, err, "delete_instance")
	assert.Nil(t, kvGet(t, p, "kv-del", "doomed"), "KV should be gone after instance deletion")
}

func testKvClearNonexistentKey(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-clrne")
	kvAckWithDelta(t, p, "kv-clrne", 1, kvCleared("kv-clrne", 1, 100, "never_existed"))
	assert.Nil(t, kvGet(t, p, "kv-clrne", "never_existed"))
}

func testKvGetUnknownInstance(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	assert.Nil(t, kvGet(t, p, "no-such-instance", "key"))
}

func testKvSetAfterClear(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-sac")
	kvAckWithDelta(t, p, "kv-sac", 1,
		kvSet("kv-sac", 1, 100, "old_a", "1", 0),
		kvSet("kv-sac", 1, 101, "old_b", "2", 0))
	kvAckWithDelta(t, p, "kv-sac", 1,
		kvAllCleared("kv-sac", 1, 102),
		kvSet("kv-sac", 1, 103, "new_x", "fresh", 0))
	assert.Nil(t, kvGet(t, p, "kv-sac", "old_a"))
	assert.Nil(t, kvGet(t, p, "kv-sac", "old_b"))
	assert.Equal(t, ptr("fresh"), kvGet(t, p, "kv-sac", "new_x"))
}

func testKvEmptyValue(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-empty")
	kvAckWithDelta(t, p, "kv-empty", 1, kvSet("kv-empty", 1, 100, "blank", "", 0))
	assert.Equal(t, ptr(""), kvGet(t, p, "kv-empty", "blank"), "an empty string is a value, not absence")
}

func testKvLargeValue(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-big")
	big := strings.Repeat("x", 64*1024)
	kvAckWithDelta(t, p, "kv-big", 1, kvSet("kv-big", 1, 100, "payload", big, 0))
	got := kvGet(t, p, "kv-big", "payload")
	require.NotNil(t, got)
	assert.Len(t, *got, len(big))
	assert.True(t, *got == big, "the 64 KiB value must round-trip unchanged")
}

func testKvSpecialCharsInKey(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-chars")
	keys := [][2]string{
		{"key with spaces", "v1"},
		{"日本語キー", "v2"},
		{"dotted.key.name", "v3"},
		{"path/like/key", "v4"},
		{"emoji🎉key", "v5"},
	}
	var events []duroxide.Event
	for i, kv := range keys {
		events = append(events, kvSet("kv-chars", 1, 100+uint64(i), kv[0], kv[1], 0))
	}
	kvAckWithDelta(t, p, "kv-chars", 1, events...)
	for _, kv := range keys {
		assert.Equal(t, ptr(kv[1]), kvGet(t, p, "kv-chars", kv[0]), "key %q should be retrievable", kv[0])
	}
}

func testKvSnapshotEmpty(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-sempty")
	snap := kvSnapshotTurn(t, p, "kv-sempty", 1)
	assert.Empty(t, snap, "expected an empty snapshot for a fresh instance")
}

func testKvSnapshotCrossExecution(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-scross")
	kvAckWithDelta(t, p, "kv-scross", 1, kvSet("kv-scross", 1, 100, "A", "from_exec1", 0))
	kvContinueAsNew(t, p, "kv-scross", 2)
	kvAckWithDelta(t, p, "kv-scross", 2, kvSet("kv-scross", 2, 200, "B", "from_exec2", 0))

	snap := kvSnapshotTurn(t, p, "kv-scross", 2)
	assert.Equal(t, map[string]string{"A": "from_exec1"}, kvSnapshotValues(snap),
		"the snapshot holds prior-execution state only; B is in the current execution's delta")
}

func testKvPruneCurrentExecutionProtected(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	admOf(t, p)
	createInstance(t, p, "kv-prncur")
	kvAckWithDelta(t, p, "kv-prncur", 1, kvSet("kv-prncur", 1, 100, "alive", "yes", 0))
	kvPruneKeepLast1(t, p, "kv-prncur")
	assert.Equal(t, ptr("yes"), kvGet(t, p, "kv-prncur", "alive"), "the current execution's KV must survive pruning")
}

func testKvDeleteInstanceWithChildren(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	createInstance(t, p, "kv-parent")
	kvAckWithDelta(t, p, "kv-parent", 1, kvSet("kv-parent", 1, 100, "parent_key", "parent_val", 0))

	child := startItem("kv-child")
	child.ParentInstance, child.ParentID = ptr("kv-parent"), ptr(uint64(1))
	enqueueOrch(t, p, child)
	item := mustFetchInstance(t, p, testLock, "kv-child")
	md := runningMetadata()
	md.ParentInstanceID = ptr("kv-parent")
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{admStartedEvent("kv-child", 1, testOrchName, ptr("kv-parent"), ptr(uint64(1)))},
		Metadata:     md,
	})
	kvAckWithDelta(t, p, "kv-child", 1, kvSet("kv-child", 1, 100, "child_key", "child_val", 0))

	kvCompleteInstance(t, p, "kv-child", 1)
	kvCompleteInstance(t, p, "kv-parent", 1)

	_, err := a.DeleteInstance(ctx, "kv-parent", false)
	require.NoError(t, err, "delete_instance")
	assert.Nil(t, kvGet(t, p, "kv-parent", "parent_key"), "the parent's KV should be removed")
	assert.Nil(t, kvGet(t, p, "kv-child", "child_key"), "the child's KV should be removed with its parent")
}

func testKvClearIsolation(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-ciso-a")
	createInstance(t, p, "kv-ciso-b")
	kvAckWithDelta(t, p, "kv-ciso-a", 1, kvSet("kv-ciso-a", 1, 100, "shared", "from_a", 0))
	kvAckWithDelta(t, p, "kv-ciso-b", 1, kvSet("kv-ciso-b", 1, 100, "shared", "from_b", 0))
	kvAckWithDelta(t, p, "kv-ciso-a", 1, kvAllCleared("kv-ciso-a", 1, 101))
	assert.Nil(t, kvGet(t, p, "kv-ciso-a", "shared"))
	assert.Equal(t, ptr("from_b"), kvGet(t, p, "kv-ciso-b", "shared"), "clearing instance A must not affect instance B")
}

func testKvDeltaSnapshotExcludesCurrentExecution(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-ds1")
	kvAckWithDelta(t, p, "kv-ds1", 1, kvSet("kv-ds1", 1, 100, "counter", "1", 100))
	assert.Equal(t, ptr("1"), kvGet(t, p, "kv-ds1", "counter"), "a client read should see the current execution's value")

	snap := kvSnapshotTurn(t, p, "kv-ds1", 1)
	assert.Empty(t, snap, "the snapshot must not contain values set by the current (running) execution")
}

func testKvDeltaSnapshotIncludesCompletedExecution(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-ds2")
	kvAckWithDelta(t, p, "kv-ds2", 1, kvSet("kv-ds2", 1, 100, "counter", "5", 100))
	kvContinueAsNew(t, p, "kv-ds2", 2)

	snap := kvSnapshotTurn(t, p, "kv-ds2", 2)
	require.Contains(t, snap, "counter", "the snapshot must contain the prior execution's value after CAN")
	assert.Equal(t, "5", snap["counter"].Value)
}

func testKvDeltaClientReadsMerged(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-dm")
	kvAckWithDelta(t, p, "kv-dm", 1,
		kvSet("kv-dm", 1, 100, "color", "red", 100),
		kvSet("kv-dm", 1, 101, "size", "large", 101))
	kvCompleteInstance(t, p, "kv-dm", 1)

	kvAckWithDelta(t, p, "kv-dm", 2,
		kvSet("kv-dm", 2, 200, "color", "blue", 200),
		kvSet("kv-dm", 2, 201, "shape", "circle", 201))

	assert.Equal(t, ptr("blue"), kvGet(t, p, "kv-dm", "color"), "the delta should override the store")
	assert.Equal(t, ptr("large"), kvGet(t, p, "kv-dm", "size"), "a store value without a delta should be visible")
	assert.Equal(t, ptr("circle"), kvGet(t, p, "kv-dm", "shape"), "a delta-only key should be visible")
}

func testKvDeltaTombstoneOverridesStore(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-dt")
	kvAckWithDelta(t, p, "kv-dt", 1, kvSet("kv-dt", 1, 100, "temp", "exists", 100))
	kvCompleteInstance(t, p, "kv-dt", 1)
	kvAckWithDelta(t, p, "kv-dt", 2, kvCleared("kv-dt", 2, 200, "temp"))
	assert.Nil(t, kvGet(t, p, "kv-dt", "temp"), "a tombstone in the delta must override the store")
}

func testKvDeltaClearAllTombstonesStore(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-dca")
	kvAckWithDelta(t, p, "kv-dca", 1,
		kvSet("kv-dca", 1, 100, "a", "1", 100),
		kvSet("kv-dca", 1, 101, "b", "2", 101))
	kvCompleteInstance(t, p, "kv-dca", 1)
	kvAckWithDelta(t, p, "kv-dca", 2,
		kvAllCleared("kv-dca", 2, 200),
		kvSet("kv-dca", 2, 201, "c", "3", 201))
	assert.Nil(t, kvGet(t, p, "kv-dca", "a"), "clear-all must tombstone store key 'a'")
	assert.Nil(t, kvGet(t, p, "kv-dca", "b"), "clear-all must tombstone store key 'b'")
	assert.Equal(t, ptr("3"), kvGet(t, p, "kv-dca", "c"), "a key set after clear-all should be visible")
}

func testKvDeltaMergedOnCompletion(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-dmc")
	kvAckWithDelta(t, p, "kv-dmc", 1, kvSet("kv-dmc", 1, 100, "result", "42", 100))
	kvCompleteInstance(t, p, "kv-dmc", 1)
	assert.Equal(t, ptr("42"), kvGet(t, p, "kv-dmc", "result"), "the value should be in the store after the completion merge")
}

func testKvDeltaMergedOnCan(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-dmc2")
	kvAckWithDelta(t, p, "kv-dmc2", 1,
		kvSet("kv-dmc2", 1, 100, "version", "1", 100),
		kvSet("kv-dmc2", 1, 101, "progress", "50%", 101))
	kvAckWithDelta(t, p, "kv-dmc2", 1, kvSet("kv-dmc2", 1, 102, "progress", "100%", 102))
	kvContinueAsNew(t, p, "kv-dmc2", 2)

	snap := kvSnapshotValues(kvSnapshotTurn(t, p, "kv-dmc2", 2))
	assert.Equal(t, "1", snap["version"], "version should carry over through the store after the CAN merge")
	assert.Equal(t, "100%", snap["progress"], "the latest progress value should carry over")
}

func testKvDeltaDeleteInstanceCascades(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	createInstance(t, p, "kv-ddel")
	kvAckWithDelta(t, p, "kv-ddel", 1, kvSet("kv-ddel", 1, 100, "data", "important", 100))
	assert.Equal(t, ptr("important"), kvGet(t, p, "kv-ddel", "data"))

	_, err := a.DeleteInstance(ctx, "kv-ddel", true)
	require.NoError(t, err, "delete_instance(force)")
	assert.Nil(t, kvGet(t, p, "kv-ddel", "data"), "the KV delta must be removed with the instance")
}

func testKvDeltaPruneUntouchedKeySurvives(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	admOf(t, p)
	createInstance(t, p, "kv-dprn")
	kvAckWithDelta(t, p, "kv-dprn", 1, kvSet("kv-dprn", 1, 100, "stale_config", "from_exec_1", 100))
	kvContinueAsNew(t, p, "kv-dprn", 2)
	kvAckWithDelta(t, p, "kv-dprn", 2, kvSet("kv-dprn", 2, 200, "other", "unrelated", 200))
	kvContinueAsNew(t, p, "kv-dprn", 3)

	assert.Equal(t, ptr("from_exec_1"), kvGet(t, p, "kv-dprn", "stale_config"))
	assert.Equal(t, ptr("unrelated"), kvGet(t, p, "kv-dprn", "other"))

	kvPruneKeepLast1(t, p, "kv-dprn")
	assert.Equal(t, ptr("from_exec_1"), kvGet(t, p, "kv-dprn", "stale_config"),
		"a key from a pruned execution must survive: KV is instance-scoped")
	assert.Equal(t, ptr("unrelated"), kvGet(t, p, "kv-dprn", "other"),
		"a key from pruned execution 2 must survive too")

	snap := kvSnapshotValues(kvSnapshotTurn(t, p, "kv-dprn", 3))
	assert.Equal(t, "from_exec_1", snap["stale_config"], "the snapshot must include the untouched key")
	assert.Equal(t, "unrelated", snap["other"], "the snapshot must include the key from pruned execution 2")
}
