package cdb_test

// An activity's ack that locks the next kept work item of its partition
// (workackfetch.go): a fan-out's second activity costs no request of its
// own, and a kept item that changed since is left out of the ack.

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
)

// enqueueFanOut enqueues n activities of instance inst, in order.
func enqueueFanOut(t *testing.T, p *cdb.Provider, inst string, n int) {
	t.Helper()
	for i := range n {
		require.NoError(t, p.EnqueueForWorker(t.Context(), duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: uint64(i + 2), Name: "A", Input: "x"}))
	}
}

func completed(item *duroxide.LockedWorkItem) duroxide.WorkItem {
	a := item.Item.(duroxide.ActivityExecuteItem)
	return duroxide.ActivityCompletedItem{Instance: a.Instance, ExecutionID: a.ExecutionID, ID: a.ID, Result: "r"}
}

// TestAckLocksTheNextItemOfItsPartition: three activities of one
// instance are one discovery query, one lock patch and three ack
// batches; each ack hands back the next activity, locked, and the last
// hands back none. Without the capability each activity would cost a
// patch of its own.
func TestAckLocksTheNextItemOfItsPartition(t *testing.T) {
	e := newHarness(t, cdb.Options{WorkCandidateTTL: keptTTL}, withoutLag())
	e.startInstance(t, "af-a") // a result for a missing instance would be dropped
	enqueueFanOut(t, e.p, "af-a", 3)
	item := e.fetchWork(t, nil)
	var ids []uint64
	before := e.p.RequestStats()
	for item != nil {
		ids = append(ids, item.Item.(duroxide.ActivityExecuteItem).ID)
		next, err := e.p.AckWorkItemAndFetch(t.Context(), item.LockToken, completed(item), costLock, duroxide.AnyTag())
		require.NoError(t, err)
		item = next
	}
	c := providerCost(before, e.p.RequestStats())
	require.Equal(t, []uint64{2, 3, 4}, ids, "every activity once, oldest first")
	require.Equal(t, int64(3), c.ByOp[cdb.OpBatch], "three acks (%s)", c.ops())
	require.Zero(t, c.ByOp[cdb.OpPatch], "no lock patch of their own (%s)", c.ops())
	require.Zero(t, c.ByOp[cdb.OpQuery], "no query (%s)", c.ops())
	orch := e.fetchOrch(t, "af-a")
	require.Len(t, orch.Messages, 3, "three completions delivered")
	left, err := e.p.FetchWorkItem(t.Context(), costLock, 0, nil, duroxide.AnyTag())
	require.NoError(t, err)
	require.Nil(t, left, "nothing left ready")
}

// TestAckLeavesOutANextItemTakenElsewhere: a kept item another process
// locked since fails the ack batch at its own operation; the ack is sent
// again alone, commits, and hands back nothing, and the other process's
// lock stands.
func TestAckLeavesOutANextItemTakenElsewhere(t *testing.T) {
	e := newHarness(t, cdb.Options{WorkCandidateTTL: keptTTL}, withoutLag())
	other := secondProvider(t, e, cdb.Options{WorkCandidateTTL: -1})
	e.startInstance(t, "af-b")
	enqueueFanOut(t, e.p, "af-b", 2)
	item := e.fetchWork(t, nil)
	taken, err := other.FetchWorkItem(t.Context(), costLock, 0, nil, duroxide.AnyTag())
	require.NoError(t, err)
	require.NotNil(t, taken, "the other process takes the item e.p kept")
	before := e.p.RequestStats()
	next, err := e.p.AckWorkItemAndFetch(t.Context(), item.LockToken, completed(item), costLock, duroxide.AnyTag())
	require.NoError(t, err)
	require.Nil(t, next)
	c := providerCost(before, e.p.RequestStats())
	require.Equal(t, int64(2), c.ByOp[cdb.OpBatch], "the refused batch and the ack alone (%s)", c.ops())
	require.NoError(t, other.AckWorkItem(t.Context(), taken.LockToken, completed(taken)), "the other process's lock stands")
	orch := e.fetchOrch(t, "af-b")
	require.Len(t, orch.Messages, 2)
}
