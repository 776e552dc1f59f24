package cdb_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
)

// An Exclusive provider (embedded's in-process store) releases, at New,
// the locks and sessions a dead process left: an instance's messages, an
// activity and its session are fetched at once, not after the ten-minute
// locks they were taken with; a provider that is not Exclusive still
// sees them held.
func TestExclusiveProviderReleasesWhatADeadProcessLocked(t *testing.T) {
	// Without lag: a fresh process's query may miss the latest writes on
	// a lagging replica, and a lock it misses only lapses as usual; the
	// in-process store has no replicas.
	h := newHarness(t, cdb.Options{}, withoutLag())
	dead := h.open(cdb.Options{})
	ctx := h.ctx
	const lock = 10 * time.Minute
	session := "pinned"
	require.NoError(t, dead.EnqueueForOrchestrator(ctx, hStart("exclusive-orch"), 0))
	require.NoError(t, dead.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: "exclusive-work", ExecutionID: 1, ID: 2, Name: "A", Input: "in", SessionID: &session}))
	item, err := dead.FetchOrchestrationItem(ctx, lock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item, "the dead process's turn")
	work, err := dead.FetchWorkItem(ctx, lock, 0, &duroxide.SessionFetchConfig{OwnerID: "dead-worker", LockTimeout: lock}, duroxide.DefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, work, "the dead process's activity")
	// The process dies here: nothing is abandoned or released.

	other := h.open(cdb.Options{})
	item2, err := other.FetchOrchestrationItem(ctx, lock, 0, nil)
	require.NoError(t, err)
	require.Nil(t, item2, "a provider that is not Exclusive waits out the dead process's instance lock")

	next := h.open(cdb.Options{Exclusive: true})
	item3, err := next.FetchOrchestrationItem(ctx, lock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item3, "the Exclusive provider takes the dead process's turn at once")
	require.Equal(t, "exclusive-orch", item3.Instance)
	work2, err := next.FetchWorkItem(ctx, lock, 0, &duroxide.SessionFetchConfig{OwnerID: "next-worker", LockTimeout: lock}, duroxide.DefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, work2, "the Exclusive provider takes the dead process's activity and its session at once")
	require.Equal(t, "exclusive-work", work2.Item.InstanceID())
}
