package providertest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// heartbeats: not in duroxide. A provider that is a
// duroxide.HeartbeatRecorder keeps an activity's heartbeat details on its
// work item: a renewal with details replaces them and extends the lock
// as a plain renewal does; abandons, lock expiries and plain renewals
// keep them; the next fetch of the item returns them; the ack removes
// them with the item. Details over duroxide.MaxHeartbeatDetailsBytes are
// refused with ErrTooLarge, the lock untouched. A provider without the
// capability skips the module.
var heartbeatsTests = []Test{
	{Name: "heartbeat_details_come_back_on_the_next_fetch", Func: testHeartbeatDetailsComeBack},
	{Name: "heartbeat_details_survive_lock_expiry", Func: testHeartbeatDetailsSurviveExpiry},
	{Name: "heartbeat_renewal_refuses_a_lost_lock", Func: testHeartbeatRenewalRefusesLostLock},
	{Name: "heartbeat_details_over_the_limit_are_refused", Func: testHeartbeatDetailsTooLarge},
}

// recorder returns p as a HeartbeatRecorder, or skips the test.
func recorder(t *testing.T, p duroxide.Provider) duroxide.HeartbeatRecorder {
	t.Helper()
	r, ok := p.(duroxide.HeartbeatRecorder)
	if !ok {
		t.Skip("not applicable in Go: this provider does not implement the optional duroxide.HeartbeatRecorder, so heartbeat details stay with the attempt")
	}
	return r
}

func testHeartbeatDetailsComeBack(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	r := recorder(t, p)
	createInstanceWithActivities(t, p, "hb-a", activityExecute("hb-a", 1, 2, "Act", "in"))
	w := mustFetchWork(t, p, testLock)
	require.Nil(t, w.Heartbeat, "a first fetch carries no heartbeat")
	before := nowMs()
	require.NoError(t, r.RenewWorkItemLockWithDetails(ctx, w.LockToken, testLock, `{"page":1}`))
	require.NoError(t, r.RenewWorkItemLockWithDetails(ctx, w.LockToken, testLock, `{"page":2}`))
	requireNoWork(t, p, "the renewal with details keeps the item locked")
	require.NoError(t, p.RenewWorkItemLock(ctx, w.LockToken, testLock), "a plain renewal keeps the details")
	require.NoError(t, p.AbandonWorkItem(ctx, w.LockToken, 0, false))

	again := mustFetchWork(t, p, testLock)
	require.Equal(t, uint32(2), again.AttemptCount)
	require.NotNil(t, again.Heartbeat, "the next fetch returns the last details")
	require.Equal(t, `{"page":2}`, again.Heartbeat.Details)
	// Milliseconds, within a generous window of the store's clock.
	require.InDelta(t, float64(before), float64(again.Heartbeat.AtMs), 60_000)

	// The ack removes the item with its details: a new item of the same
	// activity id starts without them.
	require.NoError(t, p.AckWorkItem(ctx, again.LockToken, activityCompleted("hb-a", 1, 2, "done")))
	require.ErrorIs(t, r.RenewWorkItemLockWithDetails(ctx, again.LockToken, testLock, `"x"`), duroxide.ErrLockLost,
		"an acked item cannot be renewed with details")
}

func testHeartbeatDetailsSurviveExpiry(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	r := recorder(t, p)
	lock := f.LockTimeout()
	createInstanceWithActivities(t, p, "hb-b", activityExecute("hb-b", 1, 2, "Act", "in"))
	w := mustFetchWork(t, p, lock)
	require.NoError(t, r.RenewWorkItemLockWithDetails(ctx, w.LockToken, lock, "raw text, not JSON"))
	sleep(t, lock+200*time.Millisecond)
	again := mustFetchWork(t, p, testLock)
	require.NotNil(t, again.Heartbeat, "an expired lock's item comes back with its details")
	require.Equal(t, "raw text, not JSON", again.Heartbeat.Details)
	require.ErrorIs(t, r.RenewWorkItemLockWithDetails(ctx, w.LockToken, lock, "late"), duroxide.ErrLockLost,
		"the expired lock cannot record details")
	requirePermanent(t, r.RenewWorkItemLockWithDetails(ctx, w.LockToken, lock, "late"))
	require.NoError(t, p.AbandonWorkItem(ctx, again.LockToken, 0, false))
	third := mustFetchWork(t, p, testLock)
	require.Equal(t, "raw text, not JSON", third.Heartbeat.Details, "the stale lock's refused details changed nothing")
}

func testHeartbeatRenewalRefusesLostLock(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	r := recorder(t, p)
	require.ErrorIs(t, r.RenewWorkItemLockWithDetails(ctx, "invalid-token-123", testLock, "x"), duroxide.ErrLockLost)
}

func testHeartbeatDetailsTooLarge(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	r := recorder(t, p)
	createInstanceWithActivities(t, p, "hb-c", activityExecute("hb-c", 1, 2, "Act", "in"))
	w := mustFetchWork(t, p, testLock)
	require.NoError(t, r.RenewWorkItemLockWithDetails(ctx, w.LockToken, testLock, "kept"))
	// At the limit as stored: the quotes count.
	atLimit := strings.Repeat("a", duroxide.MaxHeartbeatDetailsBytes-2)
	require.NoError(t, r.RenewWorkItemLockWithDetails(ctx, w.LockToken, testLock, atLimit))
	err := r.RenewWorkItemLockWithDetails(ctx, w.LockToken, testLock, atLimit+"a")
	require.ErrorIs(t, err, duroxide.ErrTooLarge)
	requirePermanent(t, err)
	var tl *duroxide.TooLargeError
	require.ErrorAs(t, err, &tl)
	require.Equal(t, duroxide.MaxHeartbeatDetailsBytes, tl.Limit)
	require.NoError(t, p.AbandonWorkItem(ctx, w.LockToken, 0, false), "the refusal left the lock ours")
	again := mustFetchWork(t, p, testLock)
	require.Equal(t, atLimit, again.Heartbeat.Details, "the refused details replaced nothing")
}
