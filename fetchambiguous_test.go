package cdb_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// A fetch locks a work item with one patch that also counts the attempt.
// When the service applies that patch but the answer is lost (a 503 or
// 408 after the write, a connection reset), the fetch must not walk away:
// the item would stay locked under a token nobody holds until the lock
// and the clock-skew margin pass, and the attempt would count although
// the activity never ran — under repeated faults, a healthy activity is
// poisoned. The fetch confirms its lock by reading the item back and
// returns it.
func TestFetchWorkItemLockAppliedButAnswerLost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault cosmostest.Fault
	}{
		{"applied_then_503", cosmostest.Fault{Op: cosmostest.OpPatchItem, Status: http.StatusServiceUnavailable, ApplyFirst: true, Times: 1}},
		{"applied_then_408", cosmostest.Fault{Op: cosmostest.OpPatchItem, Status: http.StatusRequestTimeout, ApplyFirst: true, Times: 1}},
		{"reset_after_apply", cosmostest.Fault{Op: cosmostest.OpPatchItem, Drop: cosmostest.DropAfterApply, Times: 1}},
		{"applied_then_503_while_reads_fail", cosmostest.Fault{Op: cosmostest.OpPatchItem, Status: http.StatusServiceUnavailable, ApplyFirst: true, Times: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, cdb.Options{}, withoutLag())
			ctx := t.Context()
			inst := "fetch-ambiguous-" + tc.name
			require.NoError(t, h.p.EnqueueForWorker(ctx, hActivity(inst, 2, nil)))

			h.srv.InjectFault(tc.fault)
			if strings.HasSuffix(tc.name, "_while_reads_fail") {
				injectReadBurst(h.srv)
			}
			w, err := h.p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.AnyTag())
			require.NoError(t, err, "the lock was applied: the fetch confirms it and returns the item")
			require.NotNil(t, w, "the item this fetch locked")
			require.Equal(t, uint32(1), w.AttemptCount, "one fetch, one attempt")

			require.NoError(t, h.p.RenewWorkItemLock(ctx, w.LockToken, hLock), "the lock is ours")
			require.NoError(t, h.p.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "r"}))
			require.Len(t, h.docsWhere("orch_queue", inst), 1, "the completion is enqueued once")
		})
	}
}

// A lock patch refused before it applied leaves the item as it was: the
// fetch's confirming read finds no lock of its own and reports the
// retryable error; the next fetch locks the item as its first attempt.
func TestFetchWorkItemLockNotAppliedStaysUnlocked(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{}, withoutLag())
	ctx := t.Context()
	const inst = "fetch-not-applied"
	require.NoError(t, h.p.EnqueueForWorker(ctx, hActivity(inst, 2, nil)))

	h.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpPatchItem, Status: http.StatusServiceUnavailable, Times: 1})
	w, err := h.p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.AnyTag())
	require.Error(t, err)
	require.True(t, duroxide.IsRetryable(err), "a 503 is retryable: %v", err)
	require.Nil(t, w)

	w, err = h.p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.AnyTag())
	require.NoError(t, err)
	require.NotNil(t, w, "the item was never locked")
	require.Equal(t, uint32(1), w.AttemptCount, "the refused patch counted nothing")
}

// The same for an orchestration fetch: its lock is one batch (the
// instance document, created or patched, and every message it takes, each
// attempt counted). Applied but answered with a fault, the fetch confirms
// the lock at the primary and returns the item, for a new instance (the
// batch creates its document) and for a running one (it patches it).
func TestFetchOrchestrationLockAppliedButAnswerLost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault cosmostest.Fault
	}{
		{"applied_then_503", cosmostest.Fault{Op: cosmostest.OpBatch, Status: http.StatusServiceUnavailable, ApplyFirst: true, Times: 1}},
		{"reset_after_apply", cosmostest.Fault{Op: cosmostest.OpBatch, Drop: cosmostest.DropAfterApply, Times: 1}},
		{"applied_then_503_while_reads_fail", cosmostest.Fault{Op: cosmostest.OpBatch, Status: http.StatusServiceUnavailable, ApplyFirst: true, Times: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, cdb.Options{}, withoutLag())
			ctx := t.Context()
			inst := "orch-ambiguous-" + tc.name
			require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(inst), 0))

			h.srv.InjectFault(tc.fault)
			if strings.HasSuffix(tc.name, "_while_reads_fail") {
				injectReadBurst(h.srv)
			}
			item, err := h.p.FetchOrchestrationItem(ctx, hLock, 0, nil)
			require.NoError(t, err, "the new instance's lock was applied: the fetch confirms it")
			require.NotNil(t, item)
			require.Equal(t, uint32(1), item.AttemptCount)
			require.Len(t, item.Messages, 1)
			require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
				ExecutionID: 1, HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch")}, Metadata: hRunning("HOrch")}))

			require.NoError(t, h.p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "go", Data: "1"}, 0))
			h.srv.InjectFault(tc.fault)
			if strings.HasSuffix(tc.name, "_while_reads_fail") {
				injectReadBurst(h.srv)
			}
			item, err = h.p.FetchOrchestrationItem(ctx, hLock, 0, nil)
			require.NoError(t, err, "the running instance's lock was applied: the fetch confirms it")
			require.NotNil(t, item)
			require.Equal(t, uint32(1), item.AttemptCount)
			require.Len(t, item.Messages, 1)
			require.Len(t, item.History, 1, "the history is loaded as for any fetch")
			require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
				ExecutionID: 1, HistoryDelta: []duroxide.Event{hEvent(inst, 1, 2, duroxide.ExternalEvent{Name: "go", Data: "1"})}, Metadata: hRunning("HOrch")}))
		})
	}
}

// injectReadBurst makes the next six batches and six point reads answer
// 503: the fault that lost a lock write's answer often lasts a while, and
// the fetch's confirming reads (a batch read at the primary, then a point
// read) meet it too before one gets through.
func injectReadBurst(srv *cosmostest.Server) {
	srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpBatch, Status: http.StatusServiceUnavailable, Times: 6})
	srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpReadItem, Status: http.StatusServiceUnavailable, Times: 6})
}

// A renewal the service applied but answered with a 503 moves the item's
// ETag without the holder learning it. The holder then gives the item up
// (its lease lapsed while renewals kept failing): the abandon meets 412,
// yet the item is still locked with the holder's token — nobody else has
// taken it. The abandon must re-read and release it, not report the lock
// lost and leave the item locked, its attempt counted, until the lock and
// the clock-skew margin pass.
func TestAbandonWorkItemAfterRenewalAppliedButAnswerLost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{}, withoutLag())
	ctx := t.Context()
	const inst = "abandon-after-ambiguous-renewal"
	require.NoError(t, h.p.EnqueueForWorker(ctx, hActivity(inst, 2, nil)))
	w, err := h.p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.AnyTag())
	require.NoError(t, err)
	require.NotNil(t, w)

	h.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpPatchItem, Status: http.StatusServiceUnavailable, ApplyFirst: true, Times: 1})
	requireTransient(t, h.p.RenewWorkItemLock(ctx, w.LockToken, hLock), "renewal applied, answered 503")

	require.NoError(t, h.p.AbandonWorkItem(ctx, w.LockToken, 0, true), "the lock is still ours: the abandon releases it")
	again, err := h.p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.AnyTag())
	require.NoError(t, err)
	require.NotNil(t, again, "the abandoned item is visible at once")
	require.Equal(t, uint32(1), again.AttemptCount, "the abandon gave the attempt back")
}

// A fetch that locked an instance and then failed before handing the item
// over (here the history query meets a 503) releases the lock; it must
// give the attempt back too, since nothing ran: otherwise a run of such
// faults poisons a healthy instance on the fetch that finally succeeds.
func TestFailedOrchestrationFetchGivesTheAttemptBack(t *testing.T) {
	t.Parallel()
	g := newGate(t)
	h := newHarness(t, cdb.Options{TurnCacheBytes: -1}, withSeam(testhooks.Seam{Cosmos: g.hooks()}), withoutLag())
	ctx := t.Context()
	const inst = "failed-fetch-attempt"
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(inst), 0))
	item := mustFetchOrch(t, h.p, inst)
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1, HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch")}, Metadata: hRunning("HOrch")}))
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "go", Data: "1"}, 0))

	var armed atomic.Int32
	armed.Store(3)
	g.setFail(func(c testhooks.Call) error {
		if c.Op == cdb.OpQuery && c.PartitionKey == inst && armed.Add(-1) >= 0 {
			return &cdb.RequestError{Call: c, StatusCode: http.StatusServiceUnavailable}
		}
		return nil
	})
	for range 3 {
		_, err := h.p.FetchOrchestrationItem(ctx, hLock, 0, nil)
		require.Error(t, err, "the history query fails after the lock")
		require.True(t, duroxide.IsRetryable(err), "%v", err)
	}
	item, err := h.p.FetchOrchestrationItem(ctx, hLock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item)
	require.Equal(t, uint32(1), item.AttemptCount, "three failed fetches ran nothing: the first delivery is the first attempt")
}
