package providertest

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// lock_expiration.rs: locks expire, renewals extend only live locks, and
// abandons release at once (or after their delay).
var lockExpirationTests = []Test{
	{Name: "test_lock_expires_after_timeout", Func: testLockExpiresAfterTimeout},
	{Name: "test_abandon_releases_lock_immediately", Func: testAbandonReleasesLockImmediately},
	{Name: "test_lock_renewal_on_ack", Func: testLockRenewalOnAck},
	{Name: "test_concurrent_lock_attempts_respect_expiration", Func: testConcurrentLockAttemptsRespectExpiration},
	{Name: "test_worker_lock_renewal_success", Func: testWorkerLockRenewalSuccess},
	{Name: "test_worker_lock_renewal_invalid_token", Func: testWorkerLockRenewalInvalidToken},
	{Name: "test_worker_lock_renewal_after_expiration", Func: testWorkerLockRenewalAfterExpiration},
	{Name: "test_worker_lock_renewal_extends_timeout", Func: testWorkerLockRenewalExtendsTimeout},
	{Name: "test_worker_lock_renewal_after_ack", Func: testWorkerLockRenewalAfterAck},
	{Name: "test_abandon_work_item_releases_lock", Func: testAbandonWorkItemReleasesLock},
	{Name: "test_abandon_work_item_with_delay", Func: testAbandonWorkItemWithDelay},
	{Name: "test_worker_ack_fails_after_lock_expiry", Func: testWorkerAckFailsAfterLockExpiry},
	{Name: "test_orchestration_lock_renewal_after_expiration", Func: testOrchestrationLockRenewalAfterExpiration},
}

func testLockExpiresAfterTimeout(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	lock := f.LockTimeout()
	enqueueOrch(t, p, startItem("instance-A"))
	first := mustFetchInstance(t, p, lock, "instance-A")
	requireNoFetch(t, p, "the instance is locked")

	sleep(t, lock+100*time.Millisecond)
	second := mustFetchInstance(t, p, testLock, "instance-A")
	require.NotEqual(t, first.LockToken, second.LockToken)

	commit := duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{startedEvent("instance-A", 1)},
		Metadata:     runningMetadata(),
	}
	require.ErrorIs(t, p.AckOrchestrationItem(t.Context(), first.LockToken, commit), duroxide.ErrLockLost, "the expired token must not ack")
	mustAck(t, p, second.LockToken, commit)
}

func testAbandonReleasesLockImmediately(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueOrch(t, p, startItem("instance-A"))
	first := mustFetchInstance(t, p, testLock, "instance-A")
	require.NoError(t, p.AbandonOrchestrationItem(t.Context(), first.LockToken, 0, false))
	second := mustFetchInstance(t, p, testLock, "instance-A")
	require.NotEqual(t, first.LockToken, second.LockToken)
	require.Len(t, second.Messages, 1)
}

func testLockRenewalOnAck(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueOrch(t, p, startItem("instance-A"))
	item := mustFetchInstance(t, p, testLock, "instance-A")
	enqueueOrch(t, p, startItem("instance-A"))
	requireNoFetch(t, p, "the instance is locked")

	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{startedEvent("instance-A", 1)},
		Metadata:     runningMetadata(),
	})
	item = mustFetchInstance(t, p, testLock, "instance-A")
	require.Len(t, item.Messages, 1, "only the message that arrived during the lock is left")
	require.IsType(t, duroxide.StartOrchestrationItem{}, item.Messages[0])
	require.Len(t, item.History, 1)
}

func testConcurrentLockAttemptsRespectExpiration(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	lock := f.LockTimeout()
	enqueueOrch(t, p, startItem("instance-A"))
	// The lock is taken during this fetch: it is live at least until lock
	// after the fetch began and has expired lock after it returned.
	fetchStart := time.Now()
	mustFetchInstance(t, p, lock, "instance-A")
	fetchEnd := time.Now()

	results := make([]fetchResult, 5)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 50 * time.Millisecond)
			item, err := p.FetchOrchestrationItem(ctx, lock, 0, nil)
			results[i] = fetchResult{item, err}
		})
	}
	wg.Wait()
	last := tryFetch(t, p, lock)
	skipIfPast(t, fetchStart.Add(lock), "the staggered attempts")
	require.Nil(t, last, "the lock is still live after the staggered attempts")
	for i, r := range results {
		require.NoError(t, r.err, "fetcher %d", i)
		require.Nil(t, r.item, "fetcher %d must not get a locked instance", i)
	}

	sleepUntil(t, fetchEnd.Add(lock+100*time.Millisecond))
	mustFetchInstance(t, p, testLock, "instance-A")
}

func testWorkerLockRenewalSuccess(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	lock := f.LockTimeout()
	enqueueWork(t, p, activityExecute("instance-A", 1, 1, "Act", "in"))
	w := mustFetchWork(t, p, lock)
	requireNoWork(t, p, "the item is locked")
	sleep(t, 100*time.Millisecond)
	require.NoError(t, p.RenewWorkItemLock(t.Context(), w.LockToken, lock))
	requireNoWork(t, p, "the renewed item is still locked")
}

func testWorkerLockRenewalInvalidToken(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	require.ErrorIs(t, p.RenewWorkItemLock(t.Context(), "invalid-token-123", 30*time.Second), duroxide.ErrLockLost)
}

func testWorkerLockRenewalAfterExpiration(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueWork(t, p, activityExecute("instance-A", 1, 1, "Act", "in"))
	w := mustFetchWork(t, p, time.Second)
	// Rust sleeps lock_timeout+100ms after a 1s lock; max keeps the
	// behaviour meaningful for factories with a shorter lock timeout.
	sleep(t, max(f.LockTimeout(), time.Second)+100*time.Millisecond)
	require.ErrorIs(t, p.RenewWorkItemLock(t.Context(), w.LockToken, 30*time.Second), duroxide.ErrLockLost, "an expired lock cannot be renewed")
}

func testWorkerLockRenewalExtendsTimeout(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	lock := f.LockTimeout()
	createInstanceWithActivities(t, p, "instance-A", activityExecute("instance-A", 1, 2, "Act", "in"))
	// The original lock began during the fetch: live until at least lock
	// after fetchStart, expired lock after fetchEnd.
	fetchStart := time.Now()
	w := mustFetchWork(t, p, lock)
	fetchEnd := time.Now()
	// Renew late in the original lock (Rust: after 60% of it), while it is
	// certainly live.
	sleepUntil(t, fetchStart.Add(lock*6/10))
	renewStart := time.Now()
	err := p.RenewWorkItemLock(t.Context(), w.LockToken, 2*lock)
	skipIfPast(t, fetchStart.Add(lock), "the renewal")
	require.NoError(t, err)
	// Past the original expiry, inside the renewed lock (2×lock, so the
	// window is wide even on a loaded machine).
	sleepUntil(t, fetchEnd.Add(lock+100*time.Millisecond))
	requireNoWork(t, p, "the renewal extended the lock past its original expiry")
	skipIfPast(t, renewStart.Add(2*lock), "the check after the renewal")
}

func testWorkerLockRenewalAfterAck(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstanceWithActivities(t, p, "instance-A", activityExecute("instance-A", 1, 2, "Act", "in"))
	w := mustFetchWork(t, p, testLock)
	require.NoError(t, p.AckWorkItem(t.Context(), w.LockToken, activityCompleted("instance-A", 1, 2, "result")))
	require.ErrorIs(t, p.RenewWorkItemLock(t.Context(), w.LockToken, 30*time.Second), duroxide.ErrLockLost, "an acked item cannot be renewed")
}

func testAbandonWorkItemReleasesLock(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueWork(t, p, activityExecute("instance-A", 1, 1, "Act", "in"))
	first := mustFetchWork(t, p, testLock)
	require.NoError(t, p.AbandonWorkItem(t.Context(), first.LockToken, 0, false))
	second := mustFetchWork(t, p, testLock)
	require.NotEqual(t, first.LockToken, second.LockToken)
	require.Equal(t, uint64(1), activityOf(t, second).ID)
}

func testAbandonWorkItemWithDelay(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueWork(t, p, activityExecute("instance-A", 1, 1, "Act", "in"))
	w := mustFetchWork(t, p, testLock)
	require.NoError(t, p.AbandonWorkItem(t.Context(), w.LockToken, abandonDelay, false))
	requireNoWork(t, p, "the abandoned item is delayed")
	sleep(t, abandonDelay+100*time.Millisecond)
	require.Equal(t, uint64(1), activityOf(t, mustFetchWork(t, p, testLock)).ID)
}

func testWorkerAckFailsAfterLockExpiry(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstanceWithActivities(t, p, "instance-A", activityExecute("instance-A", 1, 2, "Act", "in"))
	w := mustFetchWork(t, p, time.Second)
	sleep(t, 1200*time.Millisecond)
	err := p.AckWorkItem(t.Context(), w.LockToken, activityCompleted("instance-A", 1, 2, "result"))
	require.ErrorIs(t, err, duroxide.ErrLockLost, "an ack after the lock expired must fail")

	again := mustFetchWork(t, p, testLock)
	require.Equal(t, uint64(2), activityOf(t, again).ID, "the item survives the failed ack")
	requireNoFetch(t, p, "the failed ack must not enqueue its completion")
}

func testOrchestrationLockRenewalAfterExpiration(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	lock := f.LockTimeout()
	enqueueOrch(t, p, startItem("instance-A"))
	item := mustFetchInstance(t, p, lock, "instance-A")
	sleep(t, lock+100*time.Millisecond)
	require.ErrorIs(t, p.RenewOrchestrationItemLock(t.Context(), item.LockToken, 30*time.Second), duroxide.ErrLockLost, "an expired lock cannot be renewed")
}
