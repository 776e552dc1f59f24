package providertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// queue_semantics.rs: FIFO peek-lock queues with delayed visibility.
var queueSemanticsTests = []Test{
	{Name: "test_worker_queue_fifo_ordering", Func: testWorkerQueueFIFOOrdering},
	{Name: "test_worker_peek_lock_semantics", Func: testWorkerPeekLockSemantics},
	{Name: "test_worker_ack_atomicity", Func: testWorkerAckAtomicity},
	{Name: "test_timer_delayed_visibility", Func: testTimerDelayedVisibility},
	{Name: "test_lost_lock_token_handling", Func: testLostLockTokenHandling},
	{Name: "test_worker_item_immediate_visibility", Func: testWorkerItemImmediateVisibility},
	{Name: "test_worker_delayed_visibility_skips_future_items", Func: testWorkerDelayedVisibilitySkipsFutureItems},
	{Name: "test_orphan_queue_messages_dropped", Func: testOrphanQueueMessagesDropped},
}

func testWorkerQueueFIFOOrdering(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	for id := range uint64(5) {
		enqueueWork(t, p, activityExecute("instance-A", 1, id, "Act", "in"))
	}
	for id := range uint64(5) {
		require.Equal(t, id, activityOf(t, mustFetchWork(t, p, testLock)).ID, "worker items come out in enqueue order")
	}
	requireNoWork(t, p)
}

func testWorkerPeekLockSemantics(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueWork(t, p, activityExecute("instance-A", 1, 1, "Act", "in"))
	w := mustFetchWork(t, p, testLock)
	requireNoWork(t, p, "a locked item is invisible")
	require.NoError(t, p.AckWorkItem(t.Context(), w.LockToken, activityCompleted("instance-A", 1, 1, "result")))
	requireNoWork(t, p, "an acked item is deleted")
}

func testWorkerAckAtomicity(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstanceWithActivities(t, p, "instance-A", activityExecute("instance-A", 1, 2, "Act", "in"))
	w := mustFetchWork(t, p, testLock)
	require.NoError(t, p.AckWorkItem(t.Context(), w.LockToken, activityCompleted("instance-A", 1, 2, "result")))
	requireNoWork(t, p)

	item := mustFetchInstance(t, p, testLock, "instance-A")
	require.Len(t, item.Messages, 1)
	c, ok := item.Messages[0].(duroxide.ActivityCompletedItem)
	require.Truef(t, ok, "expected ActivityCompleted, got %T", item.Messages[0])
	require.Equal(t, uint64(2), c.ID)
	require.Equal(t, "result", c.Result)
}

func testTimerDelayedVisibility(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "instance-A")
	// fire_at_ms is ignored by enqueue_for_orchestrator: only the delay counts.
	require.NoError(t, p.EnqueueForOrchestrator(t.Context(), timerFired("instance-A", 1, 2, 0), 5*time.Second))
	requireNoFetch(t, p, "the timer is not visible before its delay")
	sleep(t, 5100*time.Millisecond)
	item := mustFetchInstance(t, p, testLock, "instance-A")
	require.Len(t, item.Messages, 1)
	require.IsType(t, duroxide.TimerFiredItem{}, item.Messages[0])
}

func testLostLockTokenHandling(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	lock := f.LockTimeout()
	enqueueWork(t, p, activityExecute("instance-A", 1, 1, "Act", "in"))
	lost := mustFetchWork(t, p, lock)
	requireNoWork(t, p, "the item is locked")
	sleep(t, lock+100*time.Millisecond)
	again := mustFetchWork(t, p, testLock)
	require.Equal(t, uint64(1), activityOf(t, again).ID, "the item is redelivered")
	require.NotEqual(t, lost.LockToken, again.LockToken)
}

func testWorkerItemImmediateVisibility(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueWork(t, p, activityExecute("instance-A", 1, 1, "Act", "in"))
	require.Equal(t, uint64(1), activityOf(t, mustFetchWork(t, p, testLock)).ID)
}

func testWorkerDelayedVisibilitySkipsFutureItems(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueWork(t, p, activityExecute("instance-A", 1, 1, "Act1", "in"))
	enqueueWork(t, p, activityExecute("instance-A", 1, 2, "Act2", "in"))
	first := mustFetchWork(t, p, testLock)
	require.Equal(t, uint64(1), activityOf(t, first).ID)
	require.NoError(t, p.AbandonWorkItem(t.Context(), first.LockToken, abandonDelay, false))

	require.Equal(t, uint64(2), activityOf(t, mustFetchWork(t, p, testLock)).ID, "the delayed item is skipped")
	requireNoWork(t, p)
	sleep(t, abandonDelay+100*time.Millisecond)
	require.Equal(t, uint64(1), activityOf(t, mustFetchWork(t, p, testLock)).ID)
}

func testOrphanQueueMessagesDropped(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const orphan, existing = "orphan-instance", "existing-instance"
	enqueueOrch(t, p, duroxide.QueueMessageItem{Instance: orphan, Name: "ConfigUpdate", Data: "v1"})
	enqueueOrch(t, p, duroxide.QueueMessageItem{Instance: orphan, Name: "ConfigUpdate", Data: "v2"})
	requireNoFetch(t, p, "queue messages for an instance that was never started are not delivered")
	requireNoFetch(t, p, "and they are dropped, not retried")

	// Starting the instance now must not resurrect them.
	enqueueOrch(t, p, startItem(orphan))
	item := mustFetchInstance(t, p, testLock, orphan)
	require.Len(t, item.Messages, 1, "the dropped queue messages must be gone: %v", item.Messages)
	require.IsType(t, duroxide.StartOrchestrationItem{}, item.Messages[0])

	createInstance(t, p, existing)
	enqueueOrch(t, p, duroxide.QueueMessageItem{Instance: existing, Name: "ConfigUpdate", Data: "v3"})
	item = mustFetchInstance(t, p, testLock, existing)
	require.Equal(t, []duroxide.WorkItem{duroxide.QueueMessageItem{Instance: existing, Name: "ConfigUpdate", Data: "v3"}}, item.Messages)
}
