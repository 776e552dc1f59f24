package cdb_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// A transient fault (a throttle, a 503, a 408 or a reset) on a lock's
// renewal, ack or abandon says nothing about the lock: the provider must
// report it retryable, never as ErrLockLost, and the lock must still work
// afterwards. Only a lock that is really gone (412 with the token no
// longer ours, 404) is ErrLockLost.

// requireTransient requires a retryable error that is not a lost lock.
func requireTransient(t *testing.T, err error, what string) {
	t.Helper()
	require.Error(t, err, what)
	require.True(t, duroxide.IsRetryable(err), "%s: a transient fault must be retryable, got %v", what, err)
	require.NotErrorIs(t, err, duroxide.ErrLockLost, "%s: a transient fault is not a lost lock", what)
}

// failBatchOnce makes the gate fail the next transactional batch with a
// rolled-back batch whose operation index failed with status.
func failBatchOnce(g *gate, partition string, index, status int) {
	var armed atomic.Bool
	armed.Store(true)
	g.setFail(func(c testhooks.Call) error {
		if c.Op == cdb.OpBatch && armed.CompareAndSwap(true, false) {
			return &cdb.BatchError{Partition: partition, Index: index, StatusCode: status, ID: "x"}
		}
		return nil
	})
}

// TestWorkRenewalTransientFaultIsNotALostLock: a 503 on the renewal's
// patch, a renewal that applied but answered 503, and then a 503 on the
// re-read that follows the resulting 412 are all retryable; the lock still
// renews and acks.
func TestWorkRenewalTransientFaultIsNotALostLock(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{}, withoutLag())
	ctx := t.Context()
	const inst = "renew-transient"
	require.NoError(t, h.p.EnqueueForWorker(ctx, hActivity(inst, 2, nil)))
	w, err := h.p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.AnyTag())
	require.NoError(t, err)
	require.NotNil(t, w)

	h.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpPatchItem, Status: http.StatusServiceUnavailable, Times: 1})
	requireTransient(t, h.p.RenewWorkItemLock(ctx, w.LockToken, hLock), "503 on the renewal")

	// Applied, but the client saw a 503: the item's ETag moved on.
	h.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpPatchItem, Status: http.StatusServiceUnavailable, ApplyFirst: true, Times: 1})
	requireTransient(t, h.p.RenewWorkItemLock(ctx, w.LockToken, hLock), "renewal applied, answered 503")
	// The next renewal meets 412 and re-reads the item; that read fails.
	h.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpReadItem, Status: http.StatusServiceUnavailable, Times: 1})
	requireTransient(t, h.p.RenewWorkItemLock(ctx, w.LockToken, hLock), "412, then a 503 on the re-read")

	require.NoError(t, h.p.RenewWorkItemLock(ctx, w.LockToken, hLock), "the lock is still ours")
	require.NoError(t, h.p.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "r"}))
	require.Len(t, h.docsWhere("orch_queue", inst), 1, "the completion is enqueued once")
	require.ErrorIs(t, h.p.RenewWorkItemLock(ctx, w.LockToken, hLock), duroxide.ErrLockLost, "an acked item's lock is really gone")
}

// TestWorkAckRolledBackBatchIsNotALostLock: a batch rolled back because
// its first operation timed out (503) is retryable; the retried ack
// delivers the completion once. (The hook cannot stand for a throttled
// operation: the store would retry it as a throttled request.)
func TestWorkAckRolledBackBatchIsNotALostLock(t *testing.T) {
	t.Parallel()
	g := newGate(t)
	h := newHarness(t, cdb.Options{}, withSeam(testhooks.Seam{Cosmos: g.hooks()}), withoutLag())
	ctx := t.Context()
	const inst = "ack-throttled"
	require.NoError(t, h.p.EnqueueForWorker(ctx, hActivity(inst, 2, nil)))
	w, err := h.p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.AnyTag())
	require.NoError(t, err)
	require.NotNil(t, w)
	done := duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "r"}
	failBatchOnce(g, inst, 0, http.StatusServiceUnavailable)
	requireTransient(t, h.p.AckWorkItem(ctx, w.LockToken, done), "ack batch rolled back by a 503")
	require.NoError(t, h.p.AckWorkItem(ctx, w.LockToken, done))
	require.Len(t, h.docsWhere("orch_queue", inst), 1, "the completion is enqueued once")
}

// TestOrchestrationLockTransientBatchFaults: a renewal and an abandon
// whose batch was rolled back by a timeout (503, 408) are retryable, not
// a lost lock, and the lock still works afterwards.
func TestOrchestrationLockTransientBatchFaults(t *testing.T) {
	t.Parallel()
	g := newGate(t)
	h := newHarness(t, cdb.Options{}, withSeam(testhooks.Seam{Cosmos: g.hooks()}), withoutLag())
	ctx := t.Context()
	const inst = "orch-transient"
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(inst), 0))
	item := mustFetchOrch(t, h.p, inst)

	failBatchOnce(g, inst, 0, http.StatusServiceUnavailable)
	requireTransient(t, h.p.RenewOrchestrationItemLock(ctx, item.LockToken, hLock), "renewal batch rolled back by a 503")
	require.NoError(t, h.p.RenewOrchestrationItemLock(ctx, item.LockToken, hLock))

	failBatchOnce(g, inst, 0, http.StatusRequestTimeout)
	requireTransient(t, h.p.AbandonOrchestrationItem(ctx, item.LockToken, 0, false), "abandon batch rolled back by a 408")
	require.NoError(t, h.p.AbandonOrchestrationItem(ctx, item.LockToken, 0, false))
}

// TestOrchestrationAckRolledBackBatchIsRetryable: an ack whose batch was
// rolled back by a 503 on one of its operations is retryable (it was
// reported permanent, and the runtime failed the instance for it); the
// retried ack commits.
func TestOrchestrationAckRolledBackBatchIsRetryable(t *testing.T) {
	t.Parallel()
	g := newGate(t)
	h := newHarness(t, cdb.Options{}, withSeam(testhooks.Seam{Cosmos: g.hooks()}), withoutLag())
	ctx := t.Context()
	const inst = "orch-ack-transient"
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(inst), 0))
	item := mustFetchOrch(t, h.p, inst)
	commit := duroxide.OrchestrationCommit{ExecutionID: 1, HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch")}, Metadata: hRunning("HOrch")}
	failBatchOnce(g, inst, 1, http.StatusServiceUnavailable)
	requireTransient(t, h.p.AckOrchestrationItem(ctx, item.LockToken, commit), "ack batch rolled back by a 503 on an operation")
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, commit))
	require.ErrorIs(t, h.p.RenewOrchestrationItemLock(ctx, item.LockToken, time.Second), duroxide.ErrLockLost, "an acked turn's lock is really gone")
}

// TestRuntimeRidesOutTransientCosmosFaults: the runtime on Cosmos with the
// service answering 503 to an activity's lock renewals and then to its
// ack: the activity runs once, its result is delivered once, and the
// orchestration completes.
func TestRuntimeRidesOutTransientCosmosFaults(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	const inst = "rt-transient"
	started := make(chan struct{}, 1)
	var runs atomic.Int32
	reg := durable.NewRegistry()
	require.NoError(t, reg.AddActivity("Slow", func(ctx durable.ActivityContext, in string) (string, error) {
		runs.Add(1)
		started <- struct{}{}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(2500 * time.Millisecond): // past two renewals of a 2 s lock
		}
		return "slow:" + in, nil
	}))
	require.NoError(t, reg.AddOrchestration("CallSlow", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallActivity[string](ctx, "Slow", in).Await()
	}))
	c := startFaultRuntime(t, h.p, reg, &durable.Options{WorkerLockTimeout: 2 * time.Second, WorkerLockRenewalBuffer: time.Second})
	require.NoError(t, c.StartOrchestration(t.Context(), inst, "CallSlow", "x"))
	<-started
	// The activity holds its lock: its renewals (patches) and then its ack
	// (the next batch in the instance's partition) meet 503s.
	h.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpPatchItem, Match: pkMatch(inst), Status: http.StatusServiceUnavailable, Times: 3})
	h.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpBatch, Match: pkMatch(inst), Status: http.StatusServiceUnavailable, Times: 4})
	require.Equal(t, "slow:x", waitCompleted(t, c, inst))
	require.Equal(t, int32(1), runs.Load(), "the activity runs once")
	hist, err := h.p.Read(t.Context(), inst)
	require.NoError(t, err)
	completions := 0
	for _, e := range hist {
		if _, ok := e.Kind.(duroxide.ActivityCompleted); ok {
			completions++
		}
	}
	require.Equal(t, 1, completions, "the result is delivered once")
}

// TestOrchestrationAckBurstOnCosmosDoesNotFailTheInstance: eight turn
// commits in a row fail with a 503 (more than the five retries that used
// to fail the instance); the instance completes.
func TestOrchestrationAckBurstOnCosmosDoesNotFailTheInstance(t *testing.T) {
	t.Parallel()
	g := newGate(t)
	h := newHarness(t, cdb.Options{}, withSeam(testhooks.Seam{Cosmos: g.hooks()}))
	const inst = "ack-burst"
	var left atomic.Int32
	left.Store(8)
	g.setFail(func(c testhooks.Call) error {
		// A turn's commit: the instance, its events and its messages (a
		// fetch's lock batch has two operations).
		if c.Op == cdb.OpBatch && c.PartitionKey == inst && c.Operations >= 4 && left.Add(-1) >= 0 {
			return &cdb.RequestError{Call: c, StatusCode: http.StatusServiceUnavailable}
		}
		return nil
	})
	reg := durable.NewRegistry()
	require.NoError(t, reg.AddOrchestration("Plain", func(*durable.OrchestrationContext, string) (string, error) { return "ok", nil }))
	c := startFaultRuntime(t, h.p, reg, &durable.Options{})
	require.NoError(t, c.StartOrchestration(t.Context(), inst, "Plain", ""))
	require.Equal(t, "ok", waitCompleted(t, c, inst))
	require.Negative(t, left.Load(), "the commits must have met all eight faults")
}

// startFaultRuntime starts a runtime on p, shut down when t ends.
func startFaultRuntime(t *testing.T, p *cdb.Provider, reg *durable.Registry, o *durable.Options) *durable.Client {
	t.Helper()
	o.MinPollInterval = 10 * time.Millisecond
	rt, err := durable.Start(t.Context(), p, reg, o)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx))
	})
	return durable.NewClient(p)
}

// waitCompleted waits for instance and requires it completed.
func waitCompleted(t *testing.T, c *durable.Client, instance string) string {
	t.Helper()
	st, err := c.WaitForOrchestration(t.Context(), instance, durable.WaitOptions{Timeout: 2 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, durable.StateCompleted, st.State, st.FailureMessage())
	return st.Output
}
