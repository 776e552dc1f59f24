package providertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// Port of duroxide src/provider_validation/sessions.rs (33 tests).
// Worker fetches use a 5 s item lock unless a test says otherwise and
// sessionConfig has a 30 s session lock.

var sessionsTests = []Test{
	{Name: "test_non_session_items_fetchable_by_any_worker", Func: testNonSessionItemsFetchableByAnyWorker},
	{Name: "test_session_item_claimable_when_no_session", Func: testSessionItemClaimableWhenNoSession},
	{Name: "test_session_affinity_same_worker", Func: testSessionAffinitySameWorker},
	{Name: "test_session_affinity_blocks_other_worker", Func: testSessionAffinityBlocksOtherWorker},
	{Name: "test_different_sessions_different_workers", Func: testDifferentSessionsDifferentWorkers},
	{Name: "test_mixed_session_and_non_session_items", Func: testMixedSessionAndNonSessionItems},
	{Name: "test_session_claimable_after_lock_expiry", Func: testSessionClaimableAfterLockExpiry},
	{Name: "test_none_session_skips_session_items", Func: testNoneSessionSkipsSessionItems},
	{Name: "test_some_session_returns_all_items", Func: testSomeSessionReturnsAllItems},
	{Name: "test_renew_session_lock_active", Func: testRenewSessionLockActive},
	{Name: "test_renew_session_lock_skips_idle", Func: testRenewSessionLockSkipsIdle},
	{Name: "test_renew_session_lock_no_sessions", Func: testRenewSessionLockNoSessions},
	{Name: "test_cleanup_removes_expired_no_items", Func: testCleanupRemovesExpiredNoItems},
	{Name: "test_cleanup_keeps_sessions_with_pending_items", Func: testCleanupKeepsSessionsWithPendingItems},
	{Name: "test_cleanup_keeps_active_sessions", Func: testCleanupKeepsActiveSessions},
	{Name: "test_ack_updates_session_last_activity", Func: testAckUpdatesSessionLastActivity},
	{Name: "test_renew_work_item_updates_session_last_activity", Func: testRenewWorkItemUpdatesSessionLastActivity},
	{Name: "test_session_items_processed_in_order", Func: testSessionItemsProcessedInOrder},
	{Name: "test_non_session_items_returned_with_session_config", Func: testNonSessionItemsReturnedWithSessionConfig},
	{Name: "test_shared_worker_id_any_caller_can_fetch_owned_session", Func: testSharedWorkerIDAnyCallerCanFetchOwnedSession},
	{Name: "test_concurrent_session_claim_only_one_wins", Func: testConcurrentSessionClaimOnlyOneWins},
	{Name: "test_session_takeover_after_lock_expiry", Func: testSessionTakeoverAfterLockExpiry},
	{Name: "test_cleanup_then_new_item_recreates_session", Func: testCleanupThenNewItemRecreatesSession},
	{Name: "test_abandoned_session_item_retryable", Func: testAbandonedSessionItemRetryable},
	{Name: "test_abandoned_session_item_ignore_attempt", Func: testAbandonedSessionItemIgnoreAttempt},
	{Name: "test_renew_session_lock_after_expiry_returns_zero", Func: testRenewSessionLockAfterExpiryReturnsZero},
	{Name: "test_original_worker_reclaims_expired_session", Func: testOriginalWorkerReclaimsExpiredSession},
	{Name: "test_activity_lock_expires_session_lock_valid_same_worker_refetches", Func: testActivityLockExpiresSessionLockValidSameWorkerRefetches},
	{Name: "test_session_lock_expires_new_owner_gets_redelivery", Func: testSessionLockExpiresNewOwnerGetsRedelivery},
	{Name: "test_session_lock_expires_same_worker_reacquires", Func: testSessionLockExpiresSameWorkerReacquires},
	{Name: "test_both_locks_expire_different_worker_claims", Func: testBothLocksExpireDifferentWorkerClaims},
	{Name: "test_session_lock_expires_activity_lock_valid_ack_succeeds", Func: testSessionLockExpiresActivityLockValidAckSucceeds},
	{Name: "test_session_lock_renewal_extends_past_original_timeout", Func: testSessionLockRenewalExtendsPastOriginalTimeout},
}

func sessActivity(instance string, id uint64, sessionID string) duroxide.WorkItem {
	return duroxide.ActivityExecuteItem{
		Instance: instance, ExecutionID: 1, ID: id,
		Name: "SessionActivity", Input: "{}", SessionID: &sessionID,
	}
}

func sessPlainActivity(instance string, id uint64) duroxide.WorkItem {
	return duroxide.ActivityExecuteItem{
		Instance: instance, ExecutionID: 1, ID: id,
		Name: "PlainActivity", Input: "{}",
	}
}

func sessConfig(owner string) *duroxide.SessionFetchConfig {
	return &duroxide.SessionFetchConfig{OwnerID: owner, LockTimeout: 30 * time.Second}
}

func sessConfigWithLock(owner string, lock time.Duration) *duroxide.SessionFetchConfig {
	return &duroxide.SessionFetchConfig{OwnerID: owner, LockTimeout: lock}
}

// sessFetch fetches a worker item with the given item lock and session config.
func sessFetch(t *testing.T, p duroxide.Provider, lock time.Duration, cfg *duroxide.SessionFetchConfig) *duroxide.LockedWorkItem {
	t.Helper()
	item, err := p.FetchWorkItem(t.Context(), lock, 0, cfg, duroxide.DefaultOnly())
	require.NoError(t, err)
	return item
}

// sessMustFetch is sessFetch that requires an item.
func sessMustFetch(t *testing.T, p duroxide.Provider, lock time.Duration, cfg *duroxide.SessionFetchConfig, msg string) *duroxide.LockedWorkItem {
	t.Helper()
	item := sessFetch(t, p, lock, cfg)
	require.NotNil(t, item, msg)
	return item
}

// sessExec returns the fetched item as an ActivityExecuteItem.
func sessExec(t *testing.T, item *duroxide.LockedWorkItem) duroxide.ActivityExecuteItem {
	t.Helper()
	require.NotNil(t, item)
	ae, ok := item.Item.(duroxide.ActivityExecuteItem)
	require.Truef(t, ok, "expected ActivityExecute, got %T", item.Item)
	return ae
}

func sessEnqueue(t *testing.T, p duroxide.Provider, item duroxide.WorkItem) {
	t.Helper()
	require.NoError(t, p.EnqueueForWorker(t.Context(), item))
}

func sessAck(t *testing.T, p duroxide.Provider, item *duroxide.LockedWorkItem) {
	t.Helper()
	require.NoError(t, p.AckWorkItem(t.Context(), item.LockToken, nil))
}

// sessClaim enqueues a session item, fetches it as owner (with cfg) and acks it.
func sessClaim(t *testing.T, p duroxide.Provider, item duroxide.WorkItem, cfg *duroxide.SessionFetchConfig) {
	t.Helper()
	sessEnqueue(t, p, item)
	got := sessMustFetch(t, p, 5*time.Second, cfg, "session item should be claimable")
	sessAck(t, p, got)
}

func sessionIDOf(ae duroxide.ActivityExecuteItem) string {
	if ae.SessionID == nil {
		return "<nil>"
	}
	return *ae.SessionID
}

const sessLock = 5 * time.Second

func testNonSessionItemsFetchableByAnyWorker(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessEnqueue(t, p, sessPlainActivity("inst-1", 1))
	got := sessFetch(t, p, sessLock, sessConfig("worker-A"))
	assert.NotNil(t, got, "non-session item should be fetchable by any worker")
}

func testSessionItemClaimableWhenNoSession(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessEnqueue(t, p, sessActivity("inst-1", 1, "session-1"))
	got := sessMustFetch(t, p, sessLock, sessConfig("worker-A"), "unclaimed session item should be fetchable")
	ae := sessExec(t, got)
	require.NotNil(t, ae.SessionID)
	assert.Equal(t, "session-1", *ae.SessionID)
}

func testSessionAffinitySameWorker(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessClaim(t, p, sessActivity("inst-1", 1, "session-1"), sessConfig("worker-A"))
	sessEnqueue(t, p, sessActivity("inst-1", 2, "session-1"))
	got := sessFetch(t, p, sessLock, sessConfig("worker-A"))
	assert.NotNil(t, got, "owned session item should be fetchable by the owning worker")
}

func testSessionAffinityBlocksOtherWorker(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessClaim(t, p, sessActivity("inst-1", 1, "session-1"), sessConfig("worker-A"))
	sessEnqueue(t, p, sessActivity("inst-1", 2, "session-1"))
	got := sessFetch(t, p, sessLock, sessConfig("worker-B"))
	assert.Nil(t, got, "non-owning worker must not fetch owned session items")
}

func testDifferentSessionsDifferentWorkers(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessClaim(t, p, sessActivity("inst-1", 1, "session-1"), sessConfig("worker-A"))
	sessClaim(t, p, sessActivity("inst-2", 1, "session-2"), sessConfig("worker-B"))
	sessEnqueue(t, p, sessActivity("inst-1", 2, "session-1"))
	sessEnqueue(t, p, sessActivity("inst-2", 2, "session-2"))

	a := sessMustFetch(t, p, sessLock, sessConfig("worker-A"), "worker-A should fetch its session-1 item")
	assert.Equal(t, "session-1", sessionIDOf(sessExec(t, a)))
	b := sessMustFetch(t, p, sessLock, sessConfig("worker-B"), "worker-B should fetch its session-2 item")
	assert.Equal(t, "session-2", sessionIDOf(sessExec(t, b)))
}

func testMixedSessionAndNonSessionItems(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessClaim(t, p, sessActivity("inst-1", 1, "session-1"), sessConfig("worker-A"))
	sessEnqueue(t, p, sessActivity("inst-1", 2, "session-1"))
	sessEnqueue(t, p, sessPlainActivity("inst-2", 1))
	got := sessMustFetch(t, p, sessLock, sessConfig("worker-B"), "worker-B should get the plain item")
	assert.Nil(t, sessExec(t, got).SessionID, "worker-B should get the non-session item")
}

func testSessionClaimableAfterLockExpiry(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessClaim(t, p, sessActivity("inst-1", 1, "session-1"), sessConfigWithLock("worker-A", 50*time.Millisecond))
	sleep(t, 100*time.Millisecond)
	sessEnqueue(t, p, sessActivity("inst-1", 2, "session-1"))
	got := sessFetch(t, p, sessLock, sessConfig("worker-B"))
	assert.NotNil(t, got, "worker-B should claim the expired session")
}

func testNoneSessionSkipsSessionItems(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessEnqueue(t, p, sessActivity("inst-1", 1, "session-1"))
	sessEnqueue(t, p, sessPlainActivity("inst-2", 2))

	got := sessMustFetch(t, p, sessLock, nil, "should fetch the non-session item with session=nil")
	ae := sessExec(t, got)
	assert.Nil(t, ae.SessionID, "should be a non-session item")
	assert.Equal(t, uint64(2), ae.ID, "should get the plain activity")
	sessAck(t, p, got)

	assert.Nil(t, sessFetch(t, p, sessLock, nil), "session item must be invisible to a session=nil fetch")

	got = sessMustFetch(t, p, sessLock, sessConfig("worker-A"), "session item should be visible with a session config")
	assert.Equal(t, "session-1", sessionIDOf(sessExec(t, got)))
}

func testSomeSessionReturnsAllItems(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessEnqueue(t, p, sessActivity("inst-1", 1, "sess-A"))
	sessEnqueue(t, p, sessActivity("inst-2", 2, "sess-B"))
	sessEnqueue(t, p, sessActivity("inst-3", 3, "sess-C"))
	sessEnqueue(t, p, sessPlainActivity("inst-4", 4))

	var ids []uint64
	for range 4 {
		got := sessMustFetch(t, p, sessLock, sessConfig("shared-proc"), "should fetch item")
		ids = append(ids, sessExec(t, got).ID)
		sessAck(t, p, got)
	}
	assert.Equal(t, []uint64{1, 2, 3, 4}, ids, "all items should be fetched in FIFO order")
	assert.Nil(t, sessFetch(t, p, sessLock, sessConfig("shared-proc")), "queue should be empty")
}

func testRenewSessionLockActive(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessClaim(t, p, sessActivity("inst-1", 1, "session-1"), sessConfigWithLock("worker-A", 5*time.Second))

	n, err := p.RenewSessionLock(t.Context(), []string{"worker-A"}, 30*time.Second, 300*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "should renew 1 active session")

	sessClaim(t, p, sessActivity("inst-2", 1, "session-2"), sessConfig("worker-A"))
	n, err = p.RenewSessionLock(t.Context(), []string{"worker-A"}, 30*time.Second, 300*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "should renew 2 active sessions")
}

func testRenewSessionLockSkipsIdle(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessClaim(t, p, sessActivity("inst-1", 1, "session-1"), sessConfig("worker-A"))
	n, err := p.RenewSessionLock(t.Context(), []string{"worker-A"}, 30*time.Second, 0)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "should skip the idle session")
}

func testRenewSessionLockNoSessions(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	n, err := p.RenewSessionLock(t.Context(), []string{"worker-A"}, 30*time.Second, 300*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "a worker with no sessions renews 0")
}

func testCleanupRemovesExpiredNoItems(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessClaim(t, p, sessActivity("inst-1", 1, "session-1"), sessConfigWithLock("worker-A", 50*time.Millisecond))
	sleep(t, 100*time.Millisecond)
	n, err := p.CleanupOrphanedSessions(t.Context(), 300*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "should clean up 1 expired session")
}

func testCleanupKeepsSessionsWithPendingItems(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessClaim(t, p, sessActivity("inst-1", 1, "session-1"), sessConfigWithLock("worker-A", 50*time.Millisecond))
	sessEnqueue(t, p, sessActivity("inst-1", 2, "session-1"))
	sleep(t, 100*time.Millisecond)
	n, err := p.CleanupOrphanedSessions(t.Context(), 300*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "must not clean up a session with pending items")
}

func testCleanupKeepsActiveSessions(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessClaim(t, p, sessActivity("inst-1", 1, "session-1"), sessConfigWithLock("worker-A", 300*time.Second))
	n, err := p.CleanupOrphanedSessions(t.Context(), 300*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "must not clean up an active session")
}

func testAckUpdatesSessionLastActivity(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	idle := 200 * time.Millisecond
	sessEnqueue(t, p, sessActivity("inst-1", 1, "session-1"))
	got := sessMustFetch(t, p, sessLock, sessConfig("worker-A"), "session item should be fetchable")
	sleep(t, idle+50*time.Millisecond)
	require.NoError(t, p.AckWorkItem(t.Context(), got.LockToken, duroxide.ActivityCompletedItem{
		Instance: "inst-1", ExecutionID: 1, ID: 1, Result: "ok",
	}))
	n, err := p.RenewSessionLock(t.Context(), []string{"worker-A"}, 30*time.Second, idle)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "session should be active: ack must update last_activity")
}

func testRenewWorkItemUpdatesSessionLastActivity(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	idle := 200 * time.Millisecond
	sessEnqueue(t, p, sessActivity("inst-1", 1, "session-1"))
	got := sessMustFetch(t, p, sessLock, sessConfig("worker-A"), "session item should be fetchable")
	sleep(t, idle+50*time.Millisecond)
	require.NoError(t, p.RenewWorkItemLock(t.Context(), got.LockToken, 30*time.Second))
	n, err := p.RenewSessionLock(t.Context(), []string{"worker-A"}, 30*time.Second, idle)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "session should be active: work item lock renewal must update last_activity")
}

func testSessionItemsProcessedInOrder(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	for id := uint64(1); id <= 3; id++ {
		sessEnqueue(t, p, sessActivity("inst-1", id, "session-1"))
	}
	for want := uint64(1); want <= 3; want++ {
		got := sessMustFetch(t, p, sessLock, sessConfig("worker-A"), "should fetch the session item")
		assert.Equal(t, want, sessExec(t, got).ID, "items should be fetched in FIFO order")
		sessAck(t, p, got)
	}
}

func testNonSessionItemsReturnedWithSessionConfig(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessClaim(t, p, sessActivity("inst-1", 1, "session-1"), sessConfig("worker-A"))
	sessEnqueue(t, p, sessPlainActivity("inst-2", 1))
	got := sessMustFetch(t, p, sessLock, sessConfig("worker-A"), "non-session items should be returned with a session config")
	assert.Nil(t, sessExec(t, got).SessionID, "should be a non-session item")
}

func testSharedWorkerIDAnyCallerCanFetchOwnedSession(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessEnqueue(t, p, sessActivity("inst-1", 1, "shared-sess"))
	sessEnqueue(t, p, sessActivity("inst-1", 2, "shared-sess"))

	got := sessMustFetch(t, p, sessLock, sessConfig("process-1"), "first fetch should claim the session")
	assert.Equal(t, uint64(1), sessExec(t, got).ID)
	sessAck(t, p, got)

	got = sessMustFetch(t, p, sessLock, sessConfig("process-1"), "same owner id should fetch the second item")
	assert.Equal(t, uint64(2), sessExec(t, got).ID)
	sessAck(t, p, got)

	sessEnqueue(t, p, sessActivity("inst-1", 3, "shared-sess"))
	assert.Nil(t, sessFetch(t, p, sessLock, sessConfig("process-2")),
		"a different owner must not get items of an owned session")
}

func testConcurrentSessionClaimOnlyOneWins(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessEnqueue(t, p, sessActivity("inst-1", 1, "contested-sess"))
	sessEnqueue(t, p, sessActivity("inst-1", 2, "contested-sess"))

	a := sessMustFetch(t, p, sessLock, sessConfig("worker-A"), "worker-A should claim the session")
	b := sessFetch(t, p, sessLock, sessConfig("worker-B"))
	assert.Nil(t, b, "worker-B must not get session items while A holds the session")
	sessAck(t, p, a)
}

func testSessionTakeoverAfterLockExpiry(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessClaim(t, p, sessActivity("inst-1", 1, "takeover-sess"), sessConfigWithLock("worker-A", 50*time.Millisecond))
	sessEnqueue(t, p, sessActivity("inst-1", 2, "takeover-sess"))
	sleep(t, 100*time.Millisecond)
	got := sessMustFetch(t, p, sessLock, sessConfig("worker-B"), "worker-B should take over the expired session")
	assert.Equal(t, "takeover-sess", sessionIDOf(sessExec(t, got)))
}

func testCleanupThenNewItemRecreatesSession(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessClaim(t, p, sessActivity("inst-1", 1, "ephemeral-sess"), sessConfigWithLock("worker-A", 50*time.Millisecond))
	sleep(t, 100*time.Millisecond)
	n, err := p.CleanupOrphanedSessions(t.Context(), 300*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "should clean up the expired session")

	sessEnqueue(t, p, sessActivity("inst-1", 2, "ephemeral-sess"))
	got := sessMustFetch(t, p, sessLock, sessConfig("worker-B"), "session should be re-creatable after cleanup")
	ae := sessExec(t, got)
	assert.Equal(t, "ephemeral-sess", sessionIDOf(ae))
	assert.Equal(t, uint64(2), ae.ID)
}

func testAbandonedSessionItemRetryable(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessEnqueue(t, p, sessActivity("inst-1", 1, "retry-sess"))

	got := sessMustFetch(t, p, sessLock, sessConfig("worker-A"), "session item should be fetchable")
	assert.Equal(t, uint32(1), got.AttemptCount)
	assert.Equal(t, uint64(1), sessExec(t, got).ID)
	require.NoError(t, p.AbandonWorkItem(t.Context(), got.LockToken, 0, false))

	got = sessMustFetch(t, p, sessLock, sessConfig("worker-A"), "abandoned item should be refetchable")
	assert.Equal(t, uint32(2), got.AttemptCount, "a retry increments the attempt count")
	assert.Equal(t, uint64(1), sessExec(t, got).ID, "should be the same item")
	sessAck(t, p, got)

	assert.Nil(t, sessFetch(t, p, sessLock, sessConfig("worker-A")), "no items should remain after ack")
}

func testAbandonedSessionItemIgnoreAttempt(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessEnqueue(t, p, sessActivity("inst-1", 1, "ignore-sess"))

	got := sessMustFetch(t, p, sessLock, sessConfig("worker-A"), "session item should be fetchable")
	assert.Equal(t, uint32(1), got.AttemptCount)
	require.NoError(t, p.AbandonWorkItem(t.Context(), got.LockToken, time.Millisecond, true))
	sleep(t, 10*time.Millisecond)

	got = sessMustFetch(t, p, sessLock, sessConfig("worker-A"), "abandoned item should be refetchable")
	assert.Equal(t, uint32(1), got.AttemptCount, "ignore_attempt must not inflate the attempt count")
	sessAck(t, p, got)
}

func testRenewSessionLockAfterExpiryReturnsZero(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessClaim(t, p, sessActivity("inst-1", 1, "expired-sess"), sessConfigWithLock("worker-A", 50*time.Millisecond))
	sleep(t, 100*time.Millisecond)
	n, err := p.RenewSessionLock(t.Context(), []string{"worker-A"}, 30*time.Second, 300*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "renewing an expired session returns 0")
}

func testOriginalWorkerReclaimsExpiredSession(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessClaim(t, p, sessActivity("inst-1", 1, "reclaim-sess"), sessConfigWithLock("worker-A", 50*time.Millisecond))
	sessEnqueue(t, p, sessActivity("inst-1", 2, "reclaim-sess"))
	sleep(t, 100*time.Millisecond)
	got := sessMustFetch(t, p, sessLock, sessConfig("worker-A"), "the original worker should re-claim its expired session")
	ae := sessExec(t, got)
	assert.Equal(t, uint64(2), ae.ID)
	assert.Equal(t, "reclaim-sess", sessionIDOf(ae))
}

func testActivityLockExpiresSessionLockValidSameWorkerRefetches(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessEnqueue(t, p, sessActivity("inst-1", 1, "sticky-sess"))
	shortLock := 500 * time.Millisecond
	sessMustFetch(t, p, shortLock, sessConfig("worker-A"), "worker-A should fetch the item")

	sleep(t, shortLock+100*time.Millisecond)

	assert.Nil(t, sessFetch(t, p, sessLock, sessConfig("worker-B")),
		"worker-B must not get the item: the session is still owned by A")

	got := sessMustFetch(t, p, sessLock, sessConfig("worker-A"), "worker-A should get the redelivered item")
	assert.Equal(t, uint64(1), sessExec(t, got).ID, "should be the same item")
	assert.Equal(t, uint32(2), got.AttemptCount, "the attempt count should have incremented")
	sessAck(t, p, got)
}

func testSessionLockExpiresNewOwnerGetsRedelivery(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessEnqueue(t, p, sessActivity("inst-1", 1, "takeover2-sess"))
	shortSession := 200 * time.Millisecond
	a := sessMustFetch(t, p, 5*time.Second, sessConfigWithLock("worker-A", shortSession), "worker-A should fetch the item")

	sleep(t, shortSession+100*time.Millisecond)

	sessEnqueue(t, p, sessActivity("inst-1", 2, "takeover2-sess"))
	cfgB := sessConfig("worker-B")
	b := sessMustFetch(t, p, sessLock, cfgB, "worker-B should claim the expired session and get item 2")
	ae := sessExec(t, b)
	assert.Equal(t, uint64(2), ae.ID, "worker-B should get the new item")
	assert.Equal(t, "takeover2-sess", sessionIDOf(ae))
	sessAck(t, p, b)

	// The outcome of A's abandon is not asserted, as in the Rust suite.
	_ = p.AbandonWorkItem(t.Context(), a.LockToken, 0, false)

	b2 := sessMustFetch(t, p, sessLock, cfgB, "worker-B should get redelivered item 1 as the new owner")
	assert.Equal(t, uint64(1), sessExec(t, b2).ID, "should be the original item")
	assert.Equal(t, uint32(2), b2.AttemptCount, "the attempt count should have incremented")
	sessAck(t, p, b2)
}

func testSessionLockExpiresSameWorkerReacquires(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	shortSession := 200 * time.Millisecond
	cfgA := sessConfigWithLock("worker-A", shortSession)
	sessClaim(t, p, sessActivity("inst-1", 1, "reacq-sess"), cfgA)
	sleep(t, shortSession+100*time.Millisecond)
	sessEnqueue(t, p, sessActivity("inst-1", 2, "reacq-sess"))
	got := sessMustFetch(t, p, sessLock, cfgA, "worker-A should reacquire its own expired session")
	ae := sessExec(t, got)
	assert.Equal(t, uint64(2), ae.ID)
	assert.Equal(t, "reacq-sess", sessionIDOf(ae))
	sessAck(t, p, got)
}

func testBothLocksExpireDifferentWorkerClaims(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessEnqueue(t, p, sessActivity("inst-1", 1, "both-expire-sess"))
	short := 200 * time.Millisecond
	sessMustFetch(t, p, short, sessConfigWithLock("worker-A", short), "worker-A should fetch the item")

	sleep(t, short+200*time.Millisecond)

	got := sessMustFetch(t, p, sessLock, sessConfig("worker-B"), "worker-B should claim the item after both locks expired")
	ae := sessExec(t, got)
	assert.Equal(t, uint64(1), ae.ID, "should be the same item")
	assert.Equal(t, "both-expire-sess", sessionIDOf(ae))
	assert.Equal(t, uint32(2), got.AttemptCount, "the attempt count should have incremented")
	sessAck(t, p, got)
}

func testSessionLockExpiresActivityLockValidAckSucceeds(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessEnqueue(t, p, sessActivity("inst-1", 1, "sess-expires"))
	shortSession := 200 * time.Millisecond
	got := sessMustFetch(t, p, 30*time.Second, sessConfigWithLock("worker-A", shortSession), "worker-A should fetch the item")

	sleep(t, shortSession+100*time.Millisecond)

	err := p.AckWorkItem(t.Context(), got.LockToken, duroxide.ActivityCompletedItem{
		Instance: "inst-1", ExecutionID: 1, ID: 1, Result: "done",
	})
	assert.NoError(t, err, "ack must succeed: the activity lock is valid although the session lock expired")
}

func testSessionLockRenewalExtendsPastOriginalTimeout(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	sessionLock := time.Second
	// The session lock is taken during the claim: live until at least
	// sessionLock after claimStart, expired sessionLock after claimEnd.
	claimStart := time.Now()
	sessClaim(t, p, sessActivity("inst-1", 1, "renew-ext-sess"), sessConfigWithLock("worker-A", sessionLock))
	claimEnd := time.Now()

	sleepUntil(t, claimStart.Add(600*time.Millisecond))
	renewStart := time.Now()
	n, err := p.RenewSessionLock(t.Context(), []string{"worker-A"}, 2*sessionLock, 300*time.Second)
	skipIfPast(t, claimStart.Add(sessionLock), "the renewal")
	require.NoError(t, err)
	assert.Equal(t, 1, n, "should renew the active session")

	// Past the original expiry, inside the renewed lock (2×, so the window
	// is wide even on a loaded machine).
	sleepUntil(t, claimEnd.Add(sessionLock+100*time.Millisecond))
	sessEnqueue(t, p, sessActivity("inst-1", 2, "renew-ext-sess"))
	other := sessFetch(t, p, sessLock, sessConfig("worker-B"))
	skipIfPast(t, renewStart.Add(2*sessionLock), "worker-B's fetch")
	assert.Nil(t, other, "the session must still be owned by A after renewal past the original timeout")
	assert.NotNil(t, sessFetch(t, p, sessLock, sessConfig("worker-A")),
		"worker-A should still own the session after renewal")
}
