package providertest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// Port of duroxide src/provider_validation/deletion.rs (13 tests):
// delete_instance (terminal, force, cascade, zombie prevention), the
// hierarchy primitives and delete_instances_atomic.

var deletionTests = []Test{
	{Name: "test_delete_terminal_instances", Func: testDeleteTerminalInstances},
	{Name: "test_delete_running_rejected_force_succeeds", Func: testDeleteRunningRejectedForceSucceeds},
	{Name: "test_delete_nonexistent_instance", Func: testDeleteNonexistentInstance},
	{Name: "test_delete_cleans_queues_and_locks", Func: testDeleteCleansQueuesAndLocks},
	{Name: "test_cascade_delete_hierarchy", Func: testCascadeDeleteHierarchy},
	{Name: "test_force_delete_prevents_ack_recreation", Func: testForceDeletePreventsAckRecreation},
	{Name: "test_list_children", Func: testListChildren},
	{Name: "test_delete_get_parent_id", Func: testDeleteGetParentID},
	{Name: "test_delete_get_instance_tree", Func: testDeleteGetInstanceTree},
	{Name: "test_delete_instances_atomic", Func: testDeleteInstancesAtomic},
	{Name: "test_delete_instances_atomic_force", Func: testDeleteInstancesAtomicForce},
	{Name: "test_delete_instances_atomic_orphan_detection", Func: testDeleteInstancesAtomicOrphanDetection},
	{Name: "test_stale_activity_after_delete_recreate", Func: testStaleActivityAfterDeleteRecreate},
}

// delTerminal creates an instance whose first turn is acked with status
// and output (Failed with a "cancelled: ..." output is how a cancelled
// instance looks to a provider).
func delTerminal(t *testing.T, p duroxide.Provider, instance, status, output string) {
	t.Helper()
	createInstanceWith(t, p, instance, statusMetadata(status, output))
}

// errContainsAny reports whether err's text contains one of subs
// (case-insensitively).
func errContainsAny(err error, subs ...string) bool {
	if err == nil {
		return false
	}
	msg := strings.ToLower(err.Error())
	for _, s := range subs {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// delHierarchy creates root → child1 → grandchild and root → child2 with
// the ::sub:: ids of the Rust tests (children made by admChild) and
// returns the ids.
func delHierarchy(t *testing.T, p duroxide.Provider, root string) (child1, child2, grandchild string) {
	t.Helper()
	child1, child2 = root+"::sub::2", root+"::sub::3"
	grandchild = child2 + "::sub::4"
	admCompleted(t, p, root)
	admChild(t, p, child1, root)
	admChild(t, p, child2, root)
	admChild(t, p, grandchild, child2)
	return child1, child2, grandchild
}

func testDeleteTerminalInstances(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	const completed, failed, cancelled = "delete-term-completed", "delete-term-failed", "delete-term-cancelled"
	admCompleted(t, p, completed)
	delTerminal(t, p, failed, duroxide.StatusFailed, "error: something went wrong")
	delTerminal(t, p, cancelled, duroxide.StatusFailed, "cancelled: user requested cancellation")
	for _, id := range []string{completed, failed, cancelled} {
		admRequireExists(t, a, id)
	}

	for _, id := range []string{completed, failed, cancelled} {
		res, err := a.DeleteInstance(ctx, id, false)
		require.NoError(t, err, "delete_instance(%s)", id)
		require.NotNil(t, res)
		assert.GreaterOrEqual(t, res.InstancesDeleted, uint64(1), "%s: the instance should be deleted", id)
		assert.GreaterOrEqual(t, res.ExecutionsDeleted, uint64(1), "%s: at least 1 execution should be deleted", id)
		assert.GreaterOrEqual(t, res.EventsDeleted, uint64(1), "%s: at least 1 event should be deleted", id)
		admRequireGone(t, a, id, "%s should not exist after deletion", id)
	}
}

func testDeleteRunningRejectedForceSucceeds(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	const id = "delete-running-force"
	createInstance(t, p, id)

	_, err := a.DeleteInstance(ctx, id, false)
	requirePermanent(t, err, "deleting a running instance without force must fail")
	assert.True(t, errContainsAny(err, "running"), "the error should mention 'running': %v", err)
	// Go: the kind, which the Client matches (not the words).
	require.ErrorIs(t, err, duroxide.ErrInstanceStillRunning, "the refusal's kind")
	admRequireExists(t, a, id, "the instance should still exist after the rejected deletion")

	res, err := a.DeleteInstance(ctx, id, true)
	require.NoError(t, err, "force delete")
	require.NotNil(t, res)
	assert.GreaterOrEqual(t, res.InstancesDeleted, uint64(1), "force delete should succeed")
	admRequireGone(t, a, id, "the instance should not exist after force deletion")
}

func testDeleteNonexistentInstance(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	_, err := a.DeleteInstance(ctx, "does-not-exist-12345", false)
	requirePermanent(t, err, "deleting a nonexistent instance must fail")
	assert.True(t, errContainsAny(err, "not found"), "the error should mention 'not found': %v", err)
	require.ErrorIs(t, err, duroxide.ErrInstanceNotFound, "Go: the refusal's kind")
}

func testDeleteCleansQueuesAndLocks(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	const id = "delete-queues-locks"
	enqueueOrch(t, p, startItem(id))
	enqueueWork(t, p, activityExecute(id, 1, 1, "TestActivity", "{}"))
	item := mustFetchInstance(t, p, testLock, id)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{startedEvent(id, 1)},
		Metadata: duroxide.ExecutionMetadata{
			Status:               ptr(duroxide.StatusCompleted),
			OrchestrationName:    ptr(testOrchName),
			OrchestrationVersion: ptr(testOrchVersion),
		},
	})

	res, err := a.DeleteInstance(ctx, id, false)
	require.NoError(t, err, "delete_instance")
	require.NotNil(t, res)
	assert.GreaterOrEqual(t, res.QueueMessagesDeleted, uint64(1), "queue messages should have been deleted")

	// The id can be reused: a new instance with different data.
	const newName, newInput = "ReusedOrch", `{"reused": true}`
	enqueueOrch(t, p, duroxide.StartOrchestrationItem{
		Instance: id, Orchestration: newName, Input: newInput, Version: ptr("2.0.0"), ExecutionID: 1,
	})
	item = mustFetchInstance(t, p, testLock, id)
	assert.Equal(t, newName, item.OrchestrationName, "the fetched item should carry the new orchestration name")
	err = p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1,
		HistoryDelta: []duroxide.Event{event(id, 1, 1, duroxide.OrchestrationStarted{
			Name: newName, Version: "2.0.0", Input: newInput,
		})},
		Metadata: duroxide.ExecutionMetadata{OrchestrationName: ptr(newName), OrchestrationVersion: ptr("2.0.0")},
	})
	require.NoError(t, err, "the instance should be re-creatable after deletion (locks cleared)")

	info, err := a.InstanceInfo(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, newName, info.OrchestrationName, "the recreated instance should have the new data, not stale data")

	_, err = a.DeleteInstance(ctx, id, true)
	require.NoError(t, err, "cleanup delete")
}

func testCascadeDeleteHierarchy(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	const root, child1, child2, grandchild = "cascade-root", "cascade-child1", "cascade-child2", "cascade-grandchild"
	admCompletedWithParent(t, p, root, "")
	admCompletedWithParent(t, p, child1, root)
	admCompletedWithParent(t, p, child2, root)
	admCompletedWithParent(t, p, grandchild, child1)
	for _, id := range []string{root, child1, child2, grandchild} {
		admRequireExists(t, a, id)
	}

	_, err := a.DeleteInstance(ctx, child1, false)
	require.Error(t, err, "a sub-orchestration must not be deleted directly")
	assert.True(t, errContainsAny(err, "sub-orchestration", "root", "parent"),
		"the error should mention sub-orchestration, root or parent: %v", err)
	require.ErrorIs(t, err, duroxide.ErrCannotDeleteSubOrchestration, "Go: the refusal's kind")
	_, err = a.DeleteInstance(ctx, child1, true)
	require.ErrorIs(t, err, duroxide.ErrCannotDeleteSubOrchestration, "a sub-orchestration must not be deleted directly, even with force")
	_, err = a.DeleteInstance(ctx, grandchild, false)
	require.ErrorIs(t, err, duroxide.ErrCannotDeleteSubOrchestration, "a nested sub-orchestration must not be deleted directly")

	res, err := a.DeleteInstance(ctx, root, false)
	require.NoError(t, err, "deleting the root")
	require.NotNil(t, res)
	assert.GreaterOrEqual(t, res.InstancesDeleted, uint64(1), "the root should be deleted")
	assert.GreaterOrEqual(t, res.ExecutionsDeleted, uint64(4), "executions of all 4 instances should be counted")
	for _, id := range []string{root, child1, child2, grandchild} {
		admRequireGone(t, a, id, "%s should be cascade deleted", id)
	}
}

func testForceDeletePreventsAckRecreation(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	const id = "zombie-prevention"
	createInstance(t, p, id)

	enqueueOrch(t, p, externalRaised(id, "test-event", "{}"))
	item := mustFetchInstance(t, p, testLock, id)

	res, err := a.DeleteInstance(ctx, id, true)
	require.NoError(t, err, "force delete while the turn is locked")
	require.NotNil(t, res)
	assert.GreaterOrEqual(t, res.InstancesDeleted, uint64(1), "force delete should succeed")

	err = p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{event(id, 1, 2, duroxide.ExternalEvent{Name: "test-event", Data: "{}"})},
	})
	require.ErrorIs(t, err, duroxide.ErrLockLost, "the ack must fail after a force delete, or it would recreate a zombie instance")
	admRequireGone(t, a, id, "the instance must not be recreated after a force delete")
}

func testListChildren(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	const root = "list-children-root"
	child1, child2, grandchild := delHierarchy(t, p, root)

	children, err := a.ListChildren(ctx, root)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{child1, child2}, children, "the root has exactly its 2 direct children")

	children, err = a.ListChildren(ctx, child2)
	require.NoError(t, err)
	assert.Equal(t, []string{grandchild}, children, "child2 has 1 child")

	children, err = a.ListChildren(ctx, grandchild)
	require.NoError(t, err)
	assert.Empty(t, children, "a leaf has no children")

	children, err = a.ListChildren(ctx, "non-existent")
	require.NoError(t, err, "list_children of an unknown instance is not an error")
	assert.Empty(t, children)

	_, err = a.DeleteInstance(ctx, root, true)
	require.NoError(t, err, "cleanup delete")
}

func testDeleteGetParentID(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	const root = "parent-id-root"
	child := root + "::sub::2"
	admCompleted(t, p, root)
	admChild(t, p, child, root)

	parent, has, err := a.ParentID(ctx, root)
	require.NoError(t, err)
	assert.False(t, has, "a root has no parent")
	assert.Empty(t, parent)

	parent, has, err = a.ParentID(ctx, child)
	require.NoError(t, err)
	assert.True(t, has, "a child has a parent")
	assert.Equal(t, root, parent)

	_, _, err = a.ParentID(ctx, "non-existent")
	require.ErrorIs(t, err, duroxide.ErrInstanceNotFound, "get_parent_id of an unknown instance must fail")

	_, err = a.DeleteInstance(ctx, root, true)
	require.NoError(t, err, "cleanup delete")
}

func testDeleteGetInstanceTree(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	const root = "tree-root"
	child1, child2, grandchild := delHierarchy(t, p, root)

	tree, err := a.InstanceTree(ctx, root)
	require.NoError(t, err)
	require.NotNil(t, tree)
	assert.Equal(t, root, tree.RootID)
	assert.Equal(t, 4, tree.Size(), "the tree has 4 instances")
	assert.False(t, tree.IsRootOnly(), "the tree has children")
	assert.ElementsMatch(t, []string{root, child1, child2, grandchild}, tree.AllIDs)

	leaf, err := a.InstanceTree(ctx, grandchild)
	require.NoError(t, err)
	require.NotNil(t, leaf)
	assert.Equal(t, 1, leaf.Size(), "a leaf's tree has 1 instance")
	assert.True(t, leaf.IsRootOnly())

	_, err = a.DeleteInstance(ctx, root, true)
	require.NoError(t, err, "cleanup delete")
}

func testDeleteInstancesAtomic(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	ids := []string{"atomic-del-1", "atomic-del-2", "atomic-del-3"}
	for _, id := range ids {
		admCompleted(t, p, id)
		admRequireExists(t, a, id)
	}

	res, err := a.DeleteInstancesAtomic(ctx, ids, false)
	require.NoError(t, err)
	require.NotNil(t, res)
	assert.GreaterOrEqual(t, res.InstancesDeleted, uint64(1), "should report the deletion")
	assert.GreaterOrEqual(t, res.ExecutionsDeleted, uint64(3), "at least 3 executions should be deleted")
	for _, id := range ids {
		admRequireGone(t, a, id, "%s should be gone", id)
	}
}

func testDeleteInstancesAtomicForce(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	const completed, running = "atomic-force-completed", "atomic-force-running"
	admCompleted(t, p, completed)
	createInstance(t, p, running)
	ids := []string{completed, running}

	_, err := a.DeleteInstancesAtomic(ctx, ids, false)
	require.Error(t, err, "must fail without force while an instance is running")
	admRequireExists(t, a, completed, "nothing may be deleted by the failed call")
	admRequireExists(t, a, running, "nothing may be deleted by the failed call")

	res, err := a.DeleteInstancesAtomic(ctx, ids, true)
	require.NoError(t, err, "force delete")
	require.NotNil(t, res)
	assert.GreaterOrEqual(t, res.InstancesDeleted, uint64(1), "should delete with force")
	admRequireGone(t, a, completed)
	admRequireGone(t, a, running)
}

func testDeleteInstancesAtomicOrphanDetection(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	const root = "orphan-detect-root"
	child := root + "::sub::2"
	admCompleted(t, p, root)
	admChild(t, p, child, root)
	admRequireExists(t, a, root)
	admRequireExists(t, a, child)

	_, err := a.DeleteInstancesAtomic(ctx, []string{root}, false)
	require.Error(t, err, "deleting a parent without its child must fail: it would orphan the child")
	assert.True(t, errContainsAny(err, "child", "orphan", "tree"), "the error should mention child/orphan/tree: %v", err)
	admRequireExists(t, a, root, "nothing may be deleted by the failed call")
	admRequireExists(t, a, child, "nothing may be deleted by the failed call")

	_, err = a.DeleteInstancesAtomic(ctx, []string{root, child}, false)
	require.NoError(t, err, "deleting the complete tree should succeed")
	admRequireGone(t, a, root)
	admRequireGone(t, a, child)
}

func testStaleActivityAfterDeleteRecreate(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	const id = "stale-activity-recreate"

	enqueueOrch(t, p, startItem(id))
	item := mustFetchInstance(t, p, testLock, id)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1,
		HistoryDelta: []duroxide.Event{
			startedEvent(id, 1),
			activityScheduledEvent(id, 1, 2, "OldActivity", "old-input"),
		},
		WorkerItems: []duroxide.WorkItem{activityExecute(id, 1, 2, "OldActivity", "old-input")},
		Metadata:    runningMetadata(),
	})

	oldWork := mustFetchWork(t, p, testLock)

	res, err := a.DeleteInstance(ctx, id, true)
	require.NoError(t, err, "force delete")
	require.NotNil(t, res)
	assert.GreaterOrEqual(t, res.InstancesDeleted, uint64(1), "force delete should succeed")
	admRequireGone(t, a, id, "the instance should be deleted")

	// Recreate the same id (execution 1 again).
	createInstance(t, p, id)
	info, err := a.InstanceInfo(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, testOrchName, info.OrchestrationName)

	err = p.AckWorkItem(ctx, oldWork.LockToken, activityCompleted(id, 1, 2, "stale-result-from-old-instance"))
	require.ErrorIs(t, err, duroxide.ErrLockLost, "a stale activity's ack must fail, or it would corrupt the recreated instance")

	enqueueOrch(t, p, externalRaised(id, "probe-event", "{}"))
	probe := mustFetchInstance(t, p, testLock, id)
	for _, m := range probe.Messages {
		if c, ok := m.(duroxide.ActivityCompletedItem); ok {
			assert.NotContains(t, c.Result, "stale-result", "the new instance must not see the deleted instance's completion")
		}
	}

	// Cleanup; the outcomes are not asserted, as in the Rust suite.
	_ = p.AckOrchestrationItem(ctx, probe.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1,
		Metadata:    duroxide.ExecutionMetadata{Status: ptr(duroxide.StatusCompleted)},
	})
	_, _ = a.DeleteInstance(ctx, id, true)
}
