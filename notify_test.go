package cdb_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
)

// The Cosmos provider notifies every enqueue it makes with its queue —
// a client's write, each ack's — and nothing after the subscription is
// cancelled; another Provider on the same container is not this one.
func TestCosmosEnqueuesAreNotifiedUntilCancelled(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	var (
		mu sync.Mutex
		qs []duroxide.Queue
	)
	take := func() []duroxide.Queue {
		mu.Lock()
		defer mu.Unlock()
		got := qs
		qs = nil
		return got
	}
	cancel := h.p.NotifyEnqueues(func(q duroxide.Queue, _ string) { mu.Lock(); qs = append(qs, q); mu.Unlock() })
	const inst = "notified-1"

	require.NoError(t, h.open(cdb.Options{}).EnqueueForOrchestrator(ctx, hStart(inst), 0))
	require.Empty(t, take(), "another provider's enqueue")
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart("notified-2"), 0))
	require.Equal(t, []duroxide.Queue{duroxide.OrchestratorQueue}, take())

	item := mustFetchOrch(t, h.p, inst)
	act := duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: "A", Input: "x"}
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1, HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch")}, Metadata: hRunning("HOrch"),
		WorkerItems: []duroxide.WorkItem{act}}))
	require.Equal(t, []duroxide.Queue{duroxide.WorkerQueue}, take(), "the ack enqueued an activity")

	w, err := h.p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.DefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w)
	require.NoError(t, h.p.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "r"}))
	require.Equal(t, []duroxide.Queue{duroxide.OrchestratorQueue}, take(), "the completion")

	cancel()
	require.NoError(t, h.p.EnqueueForWorker(ctx, act))
	require.Empty(t, take(), "no notification after cancel")
}

// The Cosmos provider tells an instance's end subscribers of the turn it
// commits that ends the execution, and of no running turn; an end that
// another Provider on the same container commits is not notified.
func TestCosmosInstanceEndsAreNotified(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	var mine, elsewhere atomic.Int32
	defer h.p.NotifyInstanceEnd("ended-1", func() { mine.Add(1) })()
	defer h.p.NotifyInstanceEnd("ended-2", func() { elsewhere.Add(1) })()

	const inst = "ended-1"
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(inst), 0))
	item := mustFetchOrch(t, h.p, inst)
	act := duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: "A", Input: "x"}
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1, HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch")}, Metadata: hRunning("HOrch"),
		WorkerItems: []duroxide.WorkItem{act}}))
	require.Zero(t, mine.Load(), "a turn that leaves the execution running")
	w, err := h.p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.DefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w)
	require.NoError(t, h.p.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "r"}))
	item = mustFetchOrch(t, h.p, inst)
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1, HistoryDelta: []duroxide.Event{hEvent(inst, 1, 3, duroxide.OrchestrationCompleted{Output: "r"})},
		Metadata: hStatus("HOrch", duroxide.StatusCompleted, "r")}))
	require.Equal(t, int32(1), mine.Load(), "the completing turn")

	other := h.open(cdb.Options{})
	require.NoError(t, other.EnqueueForOrchestrator(ctx, hStart("ended-2"), 0))
	item = mustFetchOrch(t, other, "ended-2")
	require.NoError(t, other.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1, HistoryDelta: []duroxide.Event{hStarted("ended-2", "HOrch"), hEvent("ended-2", 1, 2, duroxide.OrchestrationCompleted{Output: "o"})},
		Metadata: hStatus("HOrch", duroxide.StatusCompleted, "o")}))
	require.Zero(t, elsewhere.Load(), "another provider's commit")
}
