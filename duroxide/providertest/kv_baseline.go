package providertest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// The lifecycle behaviours of OrchestrationItem.KVBaseline and
// OrchestrationCommit.RestoreKV, which a rewind needs: the execution it
// starts replays the failed one's prefix, which read the KV the failed
// execution started with, not the KV it left.

// kvBaselineInstance makes instance's execution 2 fail after changing
// the KV its execution 1 left ({keep: 0, old: 1, gone: 1}): it overwrites
// old, clears gone and adds new (one change in a turn of its own, the
// others in the Failed ack).
func kvBaselineInstance(t *testing.T, p duroxide.Provider, instance string) {
	t.Helper()
	createInstance(t, p, instance)
	kvAckWithDelta(t, p, instance, 1, kvSet(instance, 1, 100, "keep", "0", 1), kvSet(instance, 1, 101, "old", "1", 1),
		kvSet(instance, 1, 102, "gone", "1", 1))
	kvContinueAsNew(t, p, instance, 2)
	kvAckWithDelta(t, p, instance, 2, kvSet(instance, 2, 200, "old", "2", 2))
	admPokeAck(t, p, instance, 2, []duroxide.Event{kvCleared(instance, 2, 201, "gone"), kvSet(instance, 2, 202, "new", "2", 2),
		orchestrationFailedEvent(instance, 2, 203, "boom")}, statusMetadata(duroxide.StatusFailed, "boom"))
}

// kvBaselineOfExecution1 is the KV kvBaselineInstance's execution 2
// started with, and its KV after the failure.
var (
	kvBaselineOfExecution1 = map[string]string{"keep": "0", "old": "1", "gone": "1"}
	kvAfterFailure         = map[string]string{"keep": "0", "old": "2", "new": "2"}
)

// testFailedExecutionHandsItsStartingKV: the fetch of a failed
// execution hands the KV it started with as KVBaseline beside the
// snapshot of what it left, on every fetch until it is rewound (a turn
// that drains a late message keeps it); a running execution has none.
func testFailedExecutionHandsItsStartingKV(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const instance = "kv-baseline-failed"
	createInstance(t, p, instance)
	poke(t, p, instance)
	item := mustFetchInstance(t, p, testLock, instance)
	require.Nil(t, item.KVBaseline, "a running execution has no baseline")
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1})

	const failed = "kv-baseline-failed-2"
	kvBaselineInstance(t, p, failed)
	for turn := range 2 {
		poke(t, p, failed)
		item = mustFetchInstance(t, p, testLock, failed)
		require.Equal(t, kvAfterFailure, kvSnapshotValues(item.KVSnapshot), "turn %d: the snapshot is the KV the failure left", turn)
		require.Equal(t, kvBaselineOfExecution1, kvSnapshotValues(item.KVBaseline), "turn %d: the baseline is the KV execution 2 started with", turn)
		mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 2}) // drains the poke
	}
}

// testRewindCommitRestoresTheBaseline: the commit of execution 3 with
// RestoreKV puts the KV back to execution 2's start and then applies its
// own KV events as the running execution's changes.
func testRewindCommitRestoresTheBaseline(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const instance = "kv-baseline-rewind"
	kvBaselineInstance(t, p, instance)
	enqueueOrch(t, p, duroxide.RewindInstanceItem{Instance: instance, ExecutionID: 2})
	item := mustFetchInstance(t, p, testLock, instance)
	require.Equal(t, kvBaselineOfExecution1, kvSnapshotValues(item.KVBaseline))
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 3, RestoreKV: true,
		HistoryDelta: []duroxide.Event{startedEvent(instance, 3), kvSet(instance, 3, 2, "old", "3", 3)},
		Metadata:     statusMetadata(duroxide.StatusRunning, "")})
	for key, want := range map[string]*string{"keep": ptr("0"), "old": ptr("3"), "gone": ptr("1"), "new": nil} {
		require.Equal(t, want, kvGet(t, p, instance, key), "key %q after the rewind", key)
	}
	snapshot := kvSnapshotTurn(t, p, instance, 3)
	require.Equal(t, kvBaselineOfExecution1, kvSnapshotValues(snapshot), "the rewound execution's snapshot is the baseline")
	kvCompleteInstance(t, p, instance, 3)
	poke(t, p, instance)
	item = mustFetchInstance(t, p, testLock, instance)
	require.Nil(t, item.KVBaseline, "a completed execution has no baseline")
	require.Equal(t, map[string]string{"keep": "0", "old": "3", "gone": "1"}, kvSnapshotValues(item.KVSnapshot))
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 3})
}

// testRestartDropsTheBaseline: a restart of the failed execution (the
// next execution, committed without RestoreKV) keeps the KV the failure
// left and drops the baseline: when the restarted execution fails too,
// its baseline is the KV it started with, not execution 2's, and a
// rewind of it restores that.
func testRestartDropsTheBaseline(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const instance = "kv-baseline-restart"
	kvBaselineInstance(t, p, instance)
	enqueueOrch(t, p, duroxide.ContinueAsNewItem{Instance: instance, Orchestration: testOrchName, Input: testInput,
		Version: ptr(testOrchVersion), CarryForwardEvents: []duroxide.CarryForwardEvent{}})
	item := mustFetchInstance(t, p, testLock, instance)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 3,
		HistoryDelta: []duroxide.Event{startedEvent(instance, 3)}, Metadata: runningMetadata()})
	poke(t, p, instance)
	item = mustFetchInstance(t, p, testLock, instance)
	require.Nil(t, item.KVBaseline, "the restarted execution runs")
	require.Equal(t, kvAfterFailure, kvSnapshotValues(item.KVSnapshot), "a restart keeps the KV the failure left")
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 3,
		HistoryDelta: []duroxide.Event{orchestrationFailedEvent(instance, 3, 2, "again")}, Metadata: statusMetadata(duroxide.StatusFailed, "again")})

	enqueueOrch(t, p, duroxide.RewindInstanceItem{Instance: instance, ExecutionID: 3})
	item = mustFetchInstance(t, p, testLock, instance)
	require.Equal(t, kvAfterFailure, kvSnapshotValues(item.KVBaseline), "execution 3 changed nothing: its baseline is what it started with")
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 4, RestoreKV: true,
		HistoryDelta: []duroxide.Event{startedEvent(instance, 4)}, Metadata: statusMetadata(duroxide.StatusRunning, "")})
	for key, want := range map[string]*string{"keep": ptr("0"), "old": ptr("2"), "new": ptr("2"), "gone": nil} {
		require.Equal(t, want, kvGet(t, p, instance, key), "key %q: execution 2's baseline was dropped by the restart", key)
	}
}
