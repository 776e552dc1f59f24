package cdb_test

import (
	"context"
	"net/http"
	"strings"
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

// TestClientWriteRetriedAfterLostResponse: a client write whose response
// is lost after the server applied it (the connection drops) is retried
// by the provider under the same id and lands once; a caller's own retry
// with the same idempotency key is a no-op, also after the message was
// consumed. Issue 19's case: EnqueueEvent("a") retried, then "b": the
// orchestration dequeues a, b (it used to dequeue a, a).
func TestClientWriteRetriedAfterLostResponse(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := newHarness(t, cdb.Options{})
	c := durable.NewClient(h.p)
	const inst = "lost-response"
	dropNext := func(op cosmostest.Op) {
		h.srv.InjectFault(cosmostest.Fault{Op: op, Match: pkMatch(inst), Drop: cosmostest.DropAfterApply, Times: 1})
	}

	// The start reads the instance document (a one-read batch), then
	// writes its batch: lose the write's response.
	var batches atomic.Int32
	h.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpBatch, Drop: cosmostest.DropAfterApply, Times: 1,
		Match: func(r *http.Request) bool { return pkMatch(inst)(r) && batches.Add(1) == 2 }})
	require.NoError(t, c.StartOrchestration(ctx, inst, "Four", ""), "the provider settles the lost response")
	require.Equal(t, int32(2), batches.Load(), "the fault met the write batch")
	require.NoError(t, c.StartOrchestration(ctx, inst, "Four", ""), "the caller's identical retry is accepted")
	require.Len(t, h.docsWhere("orch_queue", inst), 1, "one start message")

	dropNext(cosmostest.OpCreateItem)
	require.NoError(t, c.EnqueueEvent(ctx, inst, "q", "a"))
	kb := durable.EventOptions{IdempotencyKey: "write-b"}
	dropNext(cosmostest.OpCreateItem)
	require.NoError(t, c.EnqueueEvent(ctx, inst, "q", "b", kb))
	require.NoError(t, c.EnqueueEvent(ctx, inst, "q", "b", kb), "the caller's retry")
	require.NoError(t, c.EnqueueEvent(ctx, inst, "q", "c"))
	require.Len(t, h.docsWhere("orch_queue", inst), 4, "start, a, b, c")

	reg := durable.NewRegistry()
	require.NoError(t, reg.AddOrchestration("Four", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		var got []string
		for len(got) < 4 {
			v, err := durable.DequeueEvent[string](ctx, "q").Await()
			if err != nil {
				return "", err
			}
			got = append(got, v)
			ctx.SetCustomStatus(strings.Join(got, ","))
		}
		return strings.Join(got, ","), nil
	}))
	rt, err := durable.Start(ctx, h.p, reg, &durable.Options{MinPollInterval: 10 * time.Millisecond, MaxIdlePollInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = rt.Shutdown(sctx)
	})
	eventually(t, time.Minute, func() bool {
		cs, err := c.CustomStatus(ctx, inst, 0)
		return err == nil && cs != nil && cs.Status != nil && *cs.Status == "a,b,c"
	}, "a, b, c consumed")
	// After consumption the key still holds: a late retry enqueues nothing.
	require.NoError(t, c.EnqueueEvent(ctx, inst, "q", "b", kb))
	require.NoError(t, c.EnqueueEvent(ctx, inst, "q", "d"))
	st, err := c.WaitForOrchestration(ctx, inst, durable.WaitOptions{Timeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, "a,b,c,d", st.Output)
}

// TestOrphanMessagesHaveABoundedLifetime: an event for an instance that
// never starts (enqueued past the client's check, straight to the
// provider) waits for its start for OrphanLifetime, then is deleted and
// counted, so the orchestrator queue drains. One enqueued shortly before
// the start is still delivered.
func TestOrphanMessagesHaveABoundedLifetime(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := newHarness(t, cdb.Options{OrphanLifetime: time.Hour})
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: "never", Name: "e", Data: "x"}, 0))
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, duroxide.CancelInstanceItem{Instance: "never", Reason: "r"}, 0))
	item, err := h.p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.Nil(t, item, "nothing to run yet")
	require.Len(t, h.docsWhere("orch_queue", "never"), 2, "young orphans wait for their start")

	// Providers whose clocks are on by 50 and 70 minutes: each fetch
	// releases the orphans again, which must not renew their lifetime.
	at := func(d time.Duration) *cdb.Provider {
		return h.openWith(testhooks.Seam{Now: func() time.Time { return time.Now().Add(d) }}, cdb.Options{OrphanLifetime: time.Hour})
	}
	item, err = at(50*time.Minute).FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.Nil(t, item)
	require.Len(t, h.docsWhere("orch_queue", "never"), 2, "still within their lifetime")
	h2 := at(70 * time.Minute)
	item, err = h2.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.Nil(t, item)
	require.Empty(t, h.docsWhere("orch_queue", "never"), "expired orphans are deleted")
	depths, err := h2.Admin().QueueDepths(ctx)
	require.NoError(t, err)
	require.Zero(t, depths.OrchestratorQueue)
	require.Equal(t, int64(2), h2.OrphansDropped())
}

// TestInvalidInputIsKinded: size and id refusals match ErrInvalidInput
// (they used to be ErrPermanent only), from the provider and through the
// client.
func TestInvalidInputIsKinded(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := newHarness(t, cdb.Options{})
	c := durable.NewClient(h.p)
	require.ErrorIs(t, h.p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: "", Name: "e"}, 0), duroxide.ErrInvalidInput, "empty id")
	require.ErrorIs(t, h.p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: "big", Name: "e", Data: big}, 0), duroxide.ErrInvalidInput, "2.1 MB event")
	require.ErrorIs(t, c.StartOrchestration(ctx, "big", "O", big), durable.ErrInvalidInput, "2.1 MB start input")
	require.ErrorIs(t, c.StartOrchestration(ctx, "", "O", ""), durable.ErrInvalidInput, "empty id through the client")
	require.ErrorIs(t, c.RaiseEvent(ctx, "a\x00b", "e", ""), durable.ErrInvalidInput, "an id Cosmos cannot hold")
	// An ack whose document would exceed 2 MB.
	require.NoError(t, h.p.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: "big-ack", ExecutionID: 1, ID: 1, Name: "A"}))
	w, err := h.p.FetchWorkItem(ctx, time.Minute, 0, nil, duroxide.DefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w)
	require.ErrorIs(t, h.p.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: "big-ack", ExecutionID: 1, ID: 1, Result: big}),
		duroxide.ErrInvalidInput, "2.1 MB activity result")
}

// TestExistenceSeenByAnotherProcess: a client in another process (its own
// provider, no session token from the start) raises right after a start,
// on lagging replicas: the instance must be found.
func TestExistenceSeenByAnotherProcess(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := newHarness(t, cdb.Options{})
	for i := range 20 {
		inst := "xproc-" + strings.Repeat("i", i+1)
		require.NoError(t, durable.NewClient(h.p).StartOrchestration(ctx, inst, "O", ""))
		other := durable.NewClient(h.open(cdb.Options{}))
		require.NoError(t, other.RaiseEvent(ctx, inst, "e", "x"), "attempt %d", i)
	}
}
