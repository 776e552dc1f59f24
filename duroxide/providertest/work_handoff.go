package providertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// work_handoff: not in duroxide. A provider that is a
// duroxide.WorkHandOff commits a turn exactly as AckOrchestrationItem
// and writes up to Max of its eligible activities locked for the caller:
// returned with a token that renews and acks as a fetched item's does,
// invisible to fetches until the lock expires, and then fetched as any
// item whose lock lapsed (its second attempt). Activities it may not lock
// (beyond Max, of a session, of tags or names the caller refuses) are
// written for any worker to fetch. A provider without the capability
// skips the module.
var workHandOffTests = []Test{
	{Name: "handed_off_activities_are_locked_for_the_acker_and_ack_like_fetched_ones", Func: testHandOffLockedAndAcked},
	{Name: "activities_a_hand_off_may_not_lock_are_left_for_any_worker", Func: testHandOffLeavesIneligible},
	{Name: "a_handed_off_lock_that_lapses_is_fetched_as_a_second_attempt", Func: testHandOffLockLapses},
}

// handOff returns p as a WorkHandOff, or skips the test.
func handOff(t *testing.T, p duroxide.Provider) duroxide.WorkHandOff {
	t.Helper()
	h, ok := p.(duroxide.WorkHandOff)
	if !ok {
		t.Skip("not applicable in Go: this provider does not implement the optional duroxide.WorkHandOff, so every activity is fetched")
	}
	return h
}

// ackHandingOff runs one turn of instance that schedules activities, acked
// with want, and returns what the ack locked.
func ackHandingOff(t *testing.T, p duroxide.Provider, instance string, want duroxide.LocalWork, activities ...duroxide.ActivityExecuteItem) []*duroxide.LockedWorkItem {
	t.Helper()
	h := handOff(t, p)
	createInstance(t, p, instance)
	poke(t, p, instance)
	item := mustFetchInstance(t, p, testLock, instance)
	workers := make([]duroxide.WorkItem, len(activities))
	for i, a := range activities {
		workers[i] = a
	}
	locked, err := h.AckOrchestrationItemAndLock(t.Context(), item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1, WorkerItems: workers, Metadata: runningMetadata()}, want)
	require.NoError(t, err, "ack_orchestration_item with a hand-off")
	return locked
}

// handedIDs are the activity ids of locked, in order.
func handedIDs(t *testing.T, locked []*duroxide.LockedWorkItem) []uint64 {
	t.Helper()
	var ids []uint64
	for _, w := range locked {
		ids = append(ids, activityOf(t, w).ID)
	}
	return ids
}

func testHandOffLockedAndAcked(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	const inst = "handoff-acked"
	locked := ackHandingOff(t, p, inst, duroxide.LocalWork{Max: 2, LockTimeout: testLock},
		activityExecute(inst, 1, 1, "A", "1"), activityExecute(inst, 1, 2, "A", "2"), activityExecute(inst, 1, 3, "A", "3"))
	require.Equal(t, []uint64{1, 2}, handedIDs(t, locked), "the first Max activities, in order")
	for _, w := range locked {
		require.Equal(t, uint32(1), w.AttemptCount, "locked as a first fetch would")
		require.NotEmpty(t, w.LockToken)
	}
	require.Equal(t, uint64(3), activityOf(t, mustFetchWork(t, p, testLock)).ID, "the third is left for the queue")
	requireNoWork(t, p, "the handed ones are locked")
	require.NoError(t, p.RenewWorkItemLock(ctx, locked[0].LockToken, testLock), "a handed token renews")
	require.NoError(t, p.AckWorkItem(ctx, locked[0].LockToken, activityCompleted(inst, 1, 1, "r1")))
	require.NoError(t, p.AckWorkItem(ctx, locked[1].LockToken, activityCompleted(inst, 1, 2, "r2")))
	item := mustFetchInstance(t, p, testLock, inst)
	var results []string
	for _, m := range item.Messages {
		results = append(results, m.(duroxide.ActivityCompletedItem).Result)
	}
	require.Equal(t, []string{"r1", "r2"}, results, "the acks enqueued the completions")
}

func testHandOffLeavesIneligible(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "handoff-ineligible"
	session := activityExecute(inst, 1, 1, "A", "s")
	session.SessionID = ptr("s1")
	tagged := activityExecute(inst, 1, 2, "A", "t")
	tagged.Tag = ptr("gpu")
	refused := activityExecute(inst, 1, 3, "Unknown", "u")
	plain := activityExecute(inst, 1, 4, "A", "p")
	want := duroxide.LocalWork{Max: 10, LockTimeout: testLock, Accept: func(name string) bool { return name == "A" }}
	locked := ackHandingOff(t, p, inst, want, session, tagged, refused, plain)
	require.Equal(t, []uint64{4}, handedIDs(t, locked), "only the plain activity of a known name")
	w := tryFetchWork(t, p, testLock, duroxide.AnyTag())
	require.NotNil(t, w, "the others are in the queue")
	var left []uint64
	for w != nil {
		left = append(left, activityOf(t, w).ID)
		w = tryFetchWork(t, p, testLock, duroxide.AnyTag())
	}
	sess, err := p.FetchWorkItem(t.Context(), testLock, 0, &duroxide.SessionFetchConfig{OwnerID: "o", LockTimeout: testLock}, duroxide.AnyTag())
	require.NoError(t, err)
	require.NotNil(t, sess, "the session's activity is in the queue")
	left = append(left, activityOf(t, sess).ID)
	require.ElementsMatch(t, []uint64{1, 2, 3}, left)
}

func testHandOffLockLapses(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "handoff-lapses"
	lock := time.Second
	locked := ackHandingOff(t, p, inst, duroxide.LocalWork{Max: 1, LockTimeout: lock}, activityExecute(inst, 1, 1, "A", "1"))
	require.Len(t, locked, 1)
	requireNoWork(t, p, "locked while its lock holds")
	var w *duroxide.LockedWorkItem
	require.Eventually(t, func() bool {
		w = tryFetchWork(t, p, testLock, duroxide.DefaultOnly())
		return w != nil
	}, 30*time.Second, 50*time.Millisecond, "fetchable once the lock lapsed")
	require.Equal(t, uint64(1), activityOf(t, w).ID)
	require.Equal(t, uint32(2), w.AttemptCount, "the handed lock was the first attempt")
	require.ErrorIs(t, p.AckWorkItem(t.Context(), locked[0].LockToken, activityCompleted(inst, 1, 1, "late")), duroxide.ErrLockLost,
		"the lapsed token acks nothing")
}
