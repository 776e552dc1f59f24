package memprovider_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

// TestOrphanLifetime: an event for an instance that never starts waits
// for its start for the orphan lifetime, then is dropped and counted (it
// used to wait for ever, keeping the queue depth above zero).
func TestOrphanLifetime(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	p := memprovider.New(memprovider.WithClock(clock), memprovider.WithOrphanLifetime(time.Hour))
	ctx := t.Context()
	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: "never", Name: "e", Data: "x"}, 0))
	item, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.Nil(t, item)
	depths, err := p.Admin().QueueDepths(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, depths.OrchestratorQueue, "a young orphan waits for its start")

	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	item, err = p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.Nil(t, item)
	depths, err = p.Admin().QueueDepths(ctx)
	require.NoError(t, err)
	require.Zero(t, depths.OrchestratorQueue)
	require.Equal(t, int64(1), p.OrphansDropped())
}
