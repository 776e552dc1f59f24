package cdb_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
)

// TestHeartbeatCostsNoRequest: a renewal that records heartbeat details
// is the one patch a plain renewal is (the details ride on it), and the
// next fetch returns them from its lock patch without a read of its own.
func TestHeartbeatCostsNoRequest(t *testing.T) {
	e := newHarness(t, cdb.Options{}, withoutLag())
	ctx := t.Context()
	enqueueActivities(t, e.p, nil, "hb-cost")
	w, err := e.p.FetchWorkItem(ctx, costLock, 0, nil, duroxide.AnyTag())
	require.NoError(t, err)
	require.NotNil(t, w)

	before := e.p.RequestStats()
	require.NoError(t, e.p.RenewWorkItemLock(ctx, w.LockToken, costLock))
	plain := providerCost(before, e.p.RequestStats())
	require.Equal(t, map[cdb.Op]int64{cdb.OpPatch: 1}, plain.ByOp, "a plain renewal")

	before = e.p.RequestStats()
	require.NoError(t, e.p.RenewWorkItemLockWithDetails(ctx, w.LockToken, costLock, `{"offset":4096}`))
	with := providerCost(before, e.p.RequestStats())
	require.Equal(t, plain.ByOp, with.ByOp, "a renewal with heartbeat details costs what a plain one does")

	require.NoError(t, e.p.AbandonWorkItem(ctx, w.LockToken, 0, false))
	before = e.p.RequestStats()
	again, err := e.p.FetchWorkItem(ctx, costLock, 0, nil, duroxide.AnyTag())
	require.NoError(t, err)
	refetch := providerCost(before, e.p.RequestStats())
	require.NotNil(t, again.Heartbeat)
	require.Equal(t, `{"offset":4096}`, again.Heartbeat.Details)
	require.Equal(t, int64(1), refetch.ByOp[cdb.OpPatch], "the lock patch returns the details")
	require.Zero(t, refetch.ByOp[cdb.OpRead], "no read for the details")
}
