package cdb_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// TestConcurrentFetchesDoNotRaceForOneCandidate: two fetches of one process
// see the same discovery list; while the first is locking the oldest work
// item, the second must lock the next one instead of sending a lock
// request for the same item and losing the race (a wasted round trip per
// lost race, which made throughput fall as slots were added).
func TestConcurrentFetchesDoNotRaceForOneCandidate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var (
		patches   atomic.Int32
		first     sync.Once
		inPatch   = make(chan struct{})
		releaseA  = make(chan struct{})
		blockOnce atomic.Bool
	)
	blockOnce.Store(true)
	hooks := &testhooks.Hooks{Before: func(_ context.Context, c testhooks.Call) error {
		if c.Op != cdb.OpPatch {
			return nil
		}
		patches.Add(1)
		if blockOnce.CompareAndSwap(true, false) {
			first.Do(func() { close(inPatch) })
			<-releaseA // hold the first lock request until the second fetch is done
		}
		return nil
	}}
	h := newHarness(t, cdb.Options{}, withSeam(testhooks.Seam{Cosmos: hooks}))
	for _, inst := range []string{"claim-a", "claim-b"} {
		require.NoError(t, h.p.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 1, Name: "A", Input: "x"}))
		time.Sleep(2 * time.Millisecond) // distinct enqueue times: claim-a is the oldest
	}
	patches.Store(0)

	type got struct {
		item *duroxide.LockedWorkItem
		err  error
	}
	aDone := make(chan got, 1)
	go func() {
		it, err := h.p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.TagFilter{Mode: duroxide.TagDefaultOnly})
		aDone <- got{it, err}
	}()
	<-inPatch
	b, err := h.p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.TagFilter{Mode: duroxide.TagDefaultOnly})
	close(releaseA)
	a := <-aDone
	require.NoError(t, err)
	require.NoError(t, a.err)
	require.NotNil(t, a.item, "first fetch")
	require.NotNil(t, b, "second fetch")
	ia, ib := a.item.Item.(duroxide.ActivityExecuteItem), b.Item.(duroxide.ActivityExecuteItem)
	require.Equal(t, "claim-a", ia.Instance)
	require.Equal(t, "claim-b", ib.Instance)
	require.EqualValues(t, 2, patches.Load(), "one lock request per fetch, none lost to a sibling")
}
