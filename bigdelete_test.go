package cdb_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// completeWithKeys creates an instance whose completed first execution
// wrote n KV keys (merged into kv documents) and n history events.
func completeWithKeys(t *testing.T, p *cdb.Provider, inst string, n int) {
	ctx := t.Context()
	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: inst, Orchestration: "Big", Input: "{}", Version: str("1.0.0"), ExecutionID: 1}, 0))
	it, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, it)
	c := duroxide.OrchestrationCommit{ExecutionID: 1, HistoryDelta: []duroxide.Event{started(inst)},
		Metadata: duroxide.ExecutionMetadata{OrchestrationName: str("Big"), OrchestrationVersion: str("1.0.0"), Status: str(duroxide.StatusContinuedAsNew)}}
	for i := 0; i < n; i++ {
		c.HistoryDelta = append(c.HistoryDelta, duroxide.Event{EventID: uint64(2 + i), InstanceID: inst, ExecutionID: 1, DuroxideVersion: "0.1.29",
			Kind: duroxide.KeyValueSet{Key: fmt.Sprintf("key/%03d", i), Value: "value", LastUpdatedAtMs: 1}})
	}
	c.OrchestratorItems = []duroxide.WorkItem{duroxide.ContinueAsNewItem{Instance: inst, Orchestration: "Big", Input: "next", Version: str("1.0.0")}}
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, c))
	kv, err := p.KVValues(ctx, inst)
	require.NoError(t, err)
	require.Len(t, kv, n)
}

// TestClearAllOverManyKeysIsAtomic: clearing 150 keys (more operations
// than one batch holds) in a turn that also completes the instance commits
// as one large turn: every key is gone, the history and status moved, and
// nothing is left staged.
func TestClearAllOverManyKeysIsAtomic(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, nil)
	ctx := t.Context()
	p := newFaultyProvider(t, srv, "kv", nil)
	const keys = 150
	completeWithKeys(t, p, "many", keys)

	it, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, it)
	require.Len(t, it.KVSnapshot, keys, "the merged store is the next execution's snapshot")
	ev := func(id uint64, k duroxide.EventKind) duroxide.Event {
		return duroxide.Event{EventID: id, InstanceID: "many", ExecutionID: 2, DuroxideVersion: "0.1.29", Kind: k}
	}
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 2,
		HistoryDelta: []duroxide.Event{ev(1, duroxide.OrchestrationStarted{Name: "Big", Version: "1.0.0", Input: "next"}), ev(2, duroxide.KeyValuesCleared{}),
			ev(3, duroxide.KeyValueSet{Key: "survivor", Value: "x", LastUpdatedAtMs: 2}), ev(4, duroxide.OrchestrationCompleted{Output: "done"})},
		Metadata: duroxide.ExecutionMetadata{Status: str(duroxide.StatusCompleted), Output: str("done")}}))

	kv, err := p.KVValues(ctx, "many")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"survivor": "x"}, kv)
	info, err := p.InstanceInfo(ctx, "many")
	require.NoError(t, err)
	require.Equal(t, duroxide.StatusCompleted, info.Status)
	docs, err := srv.Documents("db", "kv")
	require.NoError(t, err)
	for _, d := range docs {
		require.Nil(t, d["staged"], "%v", d["id"])
		require.NotEqual(t, "turn_journal", d["type"])
		require.NotEqual(t, "kv_delta", d["type"], "the delta was merged")
	}
}

// TestDeleteLargeInstanceNeverLooksHalfAlive deletes an instance with more
// documents than one batch holds while the second sweep batch fails: the
// instance is already gone for every reader, and the reconciler finishes
// the sweep.
func TestDeleteLargeInstanceNeverLooksHalfAlive(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, nil)
	ctx := t.Context()
	var armed atomic.Bool
	var batches atomic.Int32
	hooks := &testhooks.Hooks{Before: func(_ context.Context, c testhooks.Call) error {
		if armed.Load() && c.Op == cdb.OpBatch && batches.Add(1) == 2 {
			return errInjected
		}
		return nil
	}}
	p := newFaultyProvider(t, srv, "del", hooks)
	completeWithKeys(t, p, "huge", 220) // ~440 documents
	it, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 2,
		HistoryDelta: []duroxide.Event{{EventID: 1, InstanceID: "huge", ExecutionID: 2, DuroxideVersion: "0.1.29", Kind: duroxide.OrchestrationCompleted{Output: "x"}}},
		Metadata:     duroxide.ExecutionMetadata{Status: str(duroxide.StatusCompleted)}}))

	armed.Store(true)
	_, err = p.DeleteInstance(ctx, "huge", false)
	require.Error(t, err, "the injected fault interrupts the sweep")
	armed.Store(false)

	// Gone for every reader although documents remain.
	_, err = p.InstanceInfo(ctx, "huge")
	require.Error(t, err)
	h, err := p.Read(ctx, "huge")
	require.NoError(t, err)
	require.Empty(t, h)
	ids, err := p.ListInstances(ctx)
	require.NoError(t, err)
	require.NotContains(t, ids, "huge")
	st, err := p.InstanceStats(ctx, "huge")
	require.NoError(t, err)
	require.Nil(t, st)
	docs, err := srv.Documents("db", "del")
	require.NoError(t, err)
	require.Greater(t, len(docs), 100, "the sweep really was interrupted")

	_, err = p.RunMaintenance(ctx)
	require.NoError(t, err)
	docs, err = srv.Documents("db", "del")
	require.NoError(t, err)
	require.Empty(t, withoutRetired(docs), "the reconciler finished the deletion")
}
