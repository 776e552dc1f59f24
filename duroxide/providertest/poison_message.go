package providertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// poison_message.rs: attempt counts, which the runtime's poison handling
// relies on. The Rust test names have no test_ prefix.
var poisonMessageTests = []Test{
	{Name: "orchestration_attempt_count_starts_at_one", Func: testOrchestrationAttemptCountStartsAtOne},
	{Name: "orchestration_attempt_count_increments_on_refetch", Func: testOrchestrationAttemptCountIncrementsOnRefetch},
	{Name: "worker_attempt_count_starts_at_one", Func: testWorkerAttemptCountStartsAtOne},
	{Name: "worker_attempt_count_increments_on_lock_expiry", Func: testWorkerAttemptCountIncrementsOnLockExpiry},
	{Name: "attempt_count_is_per_message", Func: testAttemptCountIsPerMessage},
	{Name: "abandon_work_item_ignore_attempt_decrements", Func: testAbandonWorkItemIgnoreAttemptDecrements},
	{Name: "abandon_orchestration_item_ignore_attempt_decrements", Func: testAbandonOrchestrationItemIgnoreAttemptDecrements},
	{Name: "ignore_attempt_never_goes_negative", Func: testIgnoreAttemptNeverGoesNegative},
	{Name: "max_attempt_count_across_message_batch", Func: testMaxAttemptCountAcrossMessageBatch},
}

func testOrchestrationAttemptCountStartsAtOne(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueOrch(t, p, startItem("poison-1"))
	require.Equal(t, uint32(1), mustFetchInstance(t, p, testLock, "poison-1").AttemptCount)
}

func testOrchestrationAttemptCountIncrementsOnRefetch(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueOrch(t, p, startItem("poison-2"))
	for want := uint32(1); want <= 3; want++ {
		item := mustFetchInstance(t, p, testLock, "poison-2")
		require.Equal(t, want, item.AttemptCount, "fetch %d", want)
		if want < 3 {
			require.NoError(t, p.AbandonOrchestrationItem(t.Context(), item.LockToken, 0, false))
		}
	}
}

func testWorkerAttemptCountStartsAtOne(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueWork(t, p, activityExecute("poison-3", 1, 1, "Act", "in"))
	require.Equal(t, uint32(1), mustFetchWork(t, p, testLock).AttemptCount)
}

func testWorkerAttemptCountIncrementsOnLockExpiry(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueWork(t, p, activityExecute("poison-4", 1, 1, "Act", "in"))
	require.Equal(t, uint32(1), mustFetchWork(t, p, time.Second).AttemptCount)
	sleep(t, 1100*time.Millisecond)
	require.Equal(t, uint32(2), mustFetchWork(t, p, testLock).AttemptCount, "a redelivery after lock expiry counts")
}

func testAttemptCountIsPerMessage(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueWork(t, p, activityExecute("poison-5", 1, 1, "Act1", "in"))
	enqueueWork(t, p, activityExecute("poison-5", 1, 2, "Act2", "in"))
	first := mustFetchWork(t, p, testLock)
	second := mustFetchWork(t, p, testLock)
	require.Equal(t, uint32(1), first.AttemptCount)
	require.Equal(t, uint32(1), second.AttemptCount)
	require.NotEqual(t, activityOf(t, first).ID, activityOf(t, second).ID)
}

func testAbandonWorkItemIgnoreAttemptDecrements(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueWork(t, p, activityExecute("poison-6", 1, 1, "Act", "in"))
	w := mustFetchWork(t, p, testLock)
	require.Equal(t, uint32(1), w.AttemptCount)
	require.NoError(t, p.AbandonWorkItem(t.Context(), w.LockToken, 0, false))
	w = mustFetchWork(t, p, testLock)
	require.Equal(t, uint32(2), w.AttemptCount)
	require.NoError(t, p.AbandonWorkItem(t.Context(), w.LockToken, 0, true))
	w = mustFetchWork(t, p, testLock)
	require.Equal(t, uint32(2), w.AttemptCount, "ignore_attempt undoes the previous fetch's increment")
}

func testAbandonOrchestrationItemIgnoreAttemptDecrements(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueOrch(t, p, startItem("poison-7"))
	item := mustFetchInstance(t, p, testLock, "poison-7")
	require.Equal(t, uint32(1), item.AttemptCount)
	require.NoError(t, p.AbandonOrchestrationItem(t.Context(), item.LockToken, 0, false))
	item = mustFetchInstance(t, p, testLock, "poison-7")
	require.Equal(t, uint32(2), item.AttemptCount)
	require.NoError(t, p.AbandonOrchestrationItem(t.Context(), item.LockToken, 0, true))
	item = mustFetchInstance(t, p, testLock, "poison-7")
	require.Equal(t, uint32(2), item.AttemptCount, "ignore_attempt undoes the previous fetch's increment")
}

func testIgnoreAttemptNeverGoesNegative(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueOrch(t, p, startItem("poison-8"))
	for i := range 3 {
		item := mustFetchInstance(t, p, testLock, "poison-8")
		require.Equal(t, uint32(1), item.AttemptCount, "orchestration fetch %d", i+1)
		require.NoError(t, p.AbandonOrchestrationItem(t.Context(), item.LockToken, 0, true))
	}

	enqueueWork(t, p, activityExecute("poison-8", 1, 1, "Act", "in"))
	for i := range 3 {
		w := mustFetchWork(t, p, testLock)
		require.Equal(t, uint32(1), w.AttemptCount, "worker fetch %d", i+1)
		require.NoError(t, p.AbandonWorkItem(t.Context(), w.LockToken, 0, true))
	}
}

func testMaxAttemptCountAcrossMessageBatch(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "poison-9"
	enqueueOrch(t, p, startItem(inst))
	item := mustFetchInstance(t, p, testLock, inst)
	require.NoError(t, p.AbandonOrchestrationItem(t.Context(), item.LockToken, 0, false))
	item = mustFetchInstance(t, p, testLock, inst)
	require.Equal(t, uint32(2), item.AttemptCount)

	enqueueOrch(t, p, activityCompleted(inst, 1, 1, "result"))
	require.NoError(t, p.AbandonOrchestrationItem(t.Context(), item.LockToken, 0, false))

	item = mustFetchInstance(t, p, testLock, inst)
	require.Len(t, item.Messages, 2)
	require.Equal(t, uint32(3), item.AttemptCount, "the batch reports the maximum attempt count (start: 3, completion: 1)")
	require.Equal(t, uint32(3), f.MaxAttemptCount(t, p, inst))
}
