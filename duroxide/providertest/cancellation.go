package providertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// cancellation.rs: providers never filter worker items by orchestration
// state; activities are cancelled by deleting them from the worker queue
// (lock stealing), which later acks and renewals observe as errors.
var cancellationTests = []Test{
	{Name: "test_fetch_returns_running_state_for_active_orchestration", Func: testFetchReturnsRunningState},
	{Name: "test_fetch_returns_terminal_state_when_orchestration_completed", Func: func(t *testing.T, f Factory) {
		testFetchReturnsTerminalState(t, f, duroxide.StatusCompleted)
	}},
	{Name: "test_fetch_returns_terminal_state_when_orchestration_failed", Func: func(t *testing.T, f Factory) {
		testFetchReturnsTerminalState(t, f, duroxide.StatusFailed)
	}},
	{Name: "test_fetch_returns_terminal_state_when_orchestration_continued_as_new", Func: func(t *testing.T, f Factory) {
		testFetchReturnsTerminalState(t, f, duroxide.StatusContinuedAsNew)
	}},
	{Name: "test_fetch_returns_missing_state_when_instance_deleted", Func: testFetchReturnsMissingState},
	{Name: "test_renew_returns_running_when_orchestration_active", Func: testRenewReturnsRunning},
	{Name: "test_renew_returns_terminal_when_orchestration_completed", Func: testRenewReturnsTerminal},
	{Name: "test_renew_returns_missing_when_instance_deleted", Func: testRenewReturnsMissing},
	{Name: "test_ack_work_item_none_deletes_without_enqueue", Func: testAckWorkItemNoneDeletesWithoutEnqueue},
	{Name: "test_cancelled_activities_deleted_from_worker_queue", Func: testCancelledActivitiesDeleted},
	{Name: "test_ack_work_item_fails_when_entry_deleted", Func: testAckWorkItemFailsWhenEntryDeleted},
	{Name: "test_renew_fails_when_entry_deleted", Func: testRenewFailsWhenEntryDeleted},
	{Name: "test_cancelling_nonexistent_activities_is_idempotent", Func: testCancellingNonexistentActivitiesIsIdempotent},
	{Name: "test_batch_cancellation_deletes_multiple_activities", Func: testBatchCancellation},
	{Name: "test_same_activity_in_worker_items_and_cancelled_is_noop", Func: testSameActivityInWorkerItemsAndCancelled},
	{Name: "test_orphan_activity_after_instance_force_deletion", Func: testOrphanActivityAfterForceDeletion},
}

func testFetchReturnsRunningState(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstanceWithActivities(t, p, "inst-running", activityExecute("inst-running", 1, 2, "Act", "in"))
	a := activityOf(t, mustFetchWork(t, p, testLock))
	require.Equal(t, "inst-running", a.Instance)
	require.Equal(t, uint64(2), a.ID)
}

// testFetchReturnsTerminalState commits an activity in the same ack that
// ends the execution with status; the activity must still be fetchable.
func testFetchReturnsTerminalState(t *testing.T, f Factory, status string) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "inst-terminal"
	var last duroxide.Event
	switch status {
	case duroxide.StatusCompleted:
		last = orchestrationCompletedEvent(inst, 1, 3, "done")
	case duroxide.StatusFailed:
		last = orchestrationFailedEvent(inst, 1, 3, "boom")
	default:
		last = continuedAsNewEvent(inst, 1, 3, "next")
	}
	enqueueOrch(t, p, startItem(inst))
	item := mustFetchInstance(t, p, testLock, inst)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{startedEvent(inst, 1), activityScheduledEvent(inst, 1, 2, "Act", "in"), last},
		WorkerItems:  []duroxide.WorkItem{activityExecute(inst, 1, 2, "Act", "in")},
		Metadata:     statusMetadata(status, "out"),
	})
	a := activityOf(t, mustFetchWork(t, p, testLock))
	require.Equal(t, inst, a.Instance)
	require.Equal(t, uint64(2), a.ID)
}

func testFetchReturnsMissingState(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueWork(t, p, activityExecute("no-such-instance", 1, 1, "Act", "in"))
	a := activityOf(t, mustFetchWork(t, p, testLock))
	require.Equal(t, "no-such-instance", a.Instance)
}

func testRenewReturnsRunning(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstanceWithActivities(t, p, "inst", activityExecute("inst", 1, 2, "Act", "in"))
	w := mustFetchWork(t, p, testLock)
	require.NoError(t, p.RenewWorkItemLock(t.Context(), w.LockToken, 30*time.Second))
}

func testRenewReturnsTerminal(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstanceWithActivities(t, p, "inst", activityExecute("inst", 1, 2, "Act", "in"))
	w := mustFetchWork(t, p, testLock)
	pokeTurn(t, p, "inst", duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{orchestrationCompletedEvent("inst", 1, 2, "done")},
		Metadata:     statusMetadata(duroxide.StatusCompleted, "done"),
	})
	require.NoError(t, p.RenewWorkItemLock(t.Context(), w.LockToken, 30*time.Second),
		"renewal does not depend on the orchestration's state")
}

func testRenewReturnsMissing(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueWork(t, p, activityExecute("no-such-instance", 1, 1, "Act", "in"))
	w := mustFetchWork(t, p, testLock)
	require.NoError(t, p.RenewWorkItemLock(t.Context(), w.LockToken, 30*time.Second))
}

func testAckWorkItemNoneDeletesWithoutEnqueue(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstanceWithActivities(t, p, "inst", activityExecute("inst", 1, 2, "Act", "in"))
	w := mustFetchWork(t, p, testLock)
	require.NoError(t, p.AckWorkItem(t.Context(), w.LockToken, nil))
	requireNoWork(t, p, "the acked item is deleted")
	requireNoFetch(t, p, "a nil completion enqueues nothing")
}

func testCancelledActivitiesDeleted(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "inst"
	createInstanceWithActivities(t, p, inst,
		activityExecute(inst, 1, 1, "Act1", "in"),
		activityExecute(inst, 1, 2, "Act2", "in"),
		activityExecute(inst, 1, 3, "Act3", "in"))
	w := mustFetchWork(t, p, testLock)
	require.NoError(t, p.AbandonWorkItem(t.Context(), w.LockToken, 0, false))

	pokeTurn(t, p, inst, duroxide.OrchestrationCommit{
		ExecutionID: 1,
		CancelledActivities: []duroxide.ScheduledActivityIdentifier{
			{Instance: inst, ExecutionID: 1, ActivityID: 1},
			{Instance: inst, ExecutionID: 1, ActivityID: 2},
		},
	})
	a := activityOf(t, mustFetchWork(t, p, testLock))
	require.Equal(t, uint64(3), a.ID, "only the activity that was not cancelled remains")
	requireNoWork(t, p)
}

func testAckWorkItemFailsWhenEntryDeleted(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstanceWithActivities(t, p, "inst", activityExecute("inst", 1, 2, "Act", "in"))
	w := mustFetchWork(t, p, testLock)
	require.NoError(t, p.AckWorkItem(t.Context(), w.LockToken, nil))
	err := p.AckWorkItem(t.Context(), w.LockToken, activityCompleted("inst", 1, 2, "result"))
	requirePermanent(t, err, "acking a deleted entry must fail permanently")
}

func testRenewFailsWhenEntryDeleted(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstanceWithActivities(t, p, "inst", activityExecute("inst", 1, 2, "Act", "in"))
	w := mustFetchWork(t, p, testLock)
	require.NoError(t, p.AckWorkItem(t.Context(), w.LockToken, nil))
	require.ErrorIs(t, p.RenewWorkItemLock(t.Context(), w.LockToken, 30*time.Second), duroxide.ErrLockLost)
}

func testCancellingNonexistentActivitiesIsIdempotent(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstanceWithActivities(t, p, "inst", activityExecute("inst", 1, 2, "Act", "in"))
	pokeTurn(t, p, "inst", duroxide.OrchestrationCommit{
		ExecutionID: 1,
		CancelledActivities: []duroxide.ScheduledActivityIdentifier{
			{Instance: "inst", ExecutionID: 1, ActivityID: 999},
			{Instance: "inst", ExecutionID: 1, ActivityID: 1000},
			{Instance: "inst", ExecutionID: 2, ActivityID: 2},
			{Instance: "other-inst", ExecutionID: 1, ActivityID: 2},
		},
	})
	a := activityOf(t, mustFetchWork(t, p, testLock))
	require.Equal(t, uint64(2), a.ID, "cancelling other activities must not touch this one")
}

func testBatchCancellation(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	var acts []duroxide.ActivityExecuteItem
	var cancelled []duroxide.ScheduledActivityIdentifier
	for id := uint64(1); id <= 5; id++ {
		acts = append(acts, activityExecute("inst", 1, id, "Act", "in"))
		cancelled = append(cancelled, duroxide.ScheduledActivityIdentifier{Instance: "inst", ExecutionID: 1, ActivityID: id})
	}
	createInstanceWithActivities(t, p, "inst", acts...)
	pokeTurn(t, p, "inst", duroxide.OrchestrationCommit{ExecutionID: 1, CancelledActivities: cancelled})
	requireNoWork(t, p, "all 5 activities were cancelled")
}

func testSameActivityInWorkerItemsAndCancelled(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "inst")
	pokeTurn(t, p, "inst", duroxide.OrchestrationCommit{
		ExecutionID: 1,
		HistoryDelta: []duroxide.Event{
			activityScheduledEvent("inst", 1, 2, "DroppedActivity", "in"),
			activityScheduledEvent("inst", 1, 3, "NormalActivity", "in"),
		},
		WorkerItems: []duroxide.WorkItem{
			activityExecute("inst", 1, 2, "DroppedActivity", "in"),
			activityExecute("inst", 1, 3, "NormalActivity", "in"),
		},
		CancelledActivities: []duroxide.ScheduledActivityIdentifier{{Instance: "inst", ExecutionID: 1, ActivityID: 2}},
	})
	a := activityOf(t, mustFetchWork(t, p, testLock))
	require.Equal(t, "NormalActivity", a.Name)
	require.Equal(t, uint64(3), a.ID)
	requireNoWork(t, p, "worker items are inserted before cancellations are applied")
}

func testOrphanActivityAfterForceDeletion(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	admin := p.Admin()
	require.NotNil(t, admin, "this behaviour needs ProviderAdmin")
	createInstanceWithActivities(t, p, "inst", activityExecute("inst", 1, 2, "Act", "in"))

	_, err := admin.DeleteInstance(ctx, "inst", true)
	require.NoError(t, err, "force delete of a running instance")
	_, err = admin.InstanceInfo(ctx, "inst")
	require.ErrorIs(t, err, duroxide.ErrInstanceNotFound, "the instance is gone")

	// The provider may or may not have removed the queued activity; if it
	// is still delivered, completing it must not fail.
	if w := tryFetchWork(t, p, testLock, duroxide.DefaultOnly()); w != nil {
		require.NoError(t, p.AckWorkItem(ctx, w.LockToken, activityCompleted("inst", 1, 2, "result")))
	}
}
