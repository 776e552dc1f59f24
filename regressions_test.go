package cdb_test

// Tests in this file FAIL against the current provider: each one pins a
// bug reported to the provider's owners. They are kept out of the commits
// until the bugs are fixed.

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"context"
	"github.com/duroxide-go/cdb/cosmostest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
)

// sdkHostileIDs are instance ids azcosmos cannot put in the partition key
// header as they are: it encodes the value with strconv.QuoteToASCII,
// which writes Go escapes (\U0001f389, \x00, \a) that are not JSON.
var sdkHostileIDs = []struct{ name, id string }{
	{"emoji", "emoji-🎉🚀"},
	{"nul", "nul\x00byte"},
	{"control-01", "ctl\x01x"},
	{"escape", "esc\x1b[0m"},
	{"bell", "bell\a"},
	{"del", "del\x7f"},
	{"long-1000-emoji", hostileLong("/🎉")},
}

// TestSDKUnsafeInstanceIDsRejected: instance ids with characters outside
// the Basic Multilingual Plane or control characters cannot be carried in
// azcosmos v1.5.0's partition key header (it writes Go escapes, not JSON),
// so they are refused up front with a permanent error and nothing written.
func TestSDKUnsafeInstanceIDsRejected(t *testing.T) {
	h := newHarness(t, cdb.Options{})
	ctx := context.Background()
	for _, c := range sdkHostileIDs {
		t.Run(c.name, func(t *testing.T) {
			before := h.snapshot()
			err := h.p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: c.id, Orchestration: "O", Input: "{}", ExecutionID: 1}, 0)
			require.Error(t, err)
			require.False(t, duroxide.IsRetryable(err), "%v", err)
			require.Equal(t, before, h.snapshot(), "nothing written")
		})
	}
}

// TestInvalidKeysAndSessionsRejected: a KV key or a session id that
// is not valid UTF-8 cannot be stored (JSON would silently turn it into
// U+FFFD, so it would not round-trip); the turn is refused permanently,
// nothing is written and the lock is kept.
func TestInvalidKeysAndSessionsRejected(t *testing.T) {
	h := newHarness(t, cdb.Options{})
	ctx := context.Background()
	p := h.p
	other := h.open(cdb.Options{})
	bad := "bad\xff\xfekey"
	cases := []struct {
		name   string
		commit func(inst string, ev duroxide.Event) duroxide.OrchestrationCommit
	}{
		{"kv_set", func(inst string, ev duroxide.Event) duroxide.OrchestrationCommit {
			return duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: hRunning("HOrch"), HistoryDelta: []duroxide.Event{ev,
				hEvent(inst, 1, 3, duroxide.KeyValueSet{Key: bad, Value: "v", LastUpdatedAtMs: hNowMs()})}}
		}},
		{"kv_cleared", func(inst string, ev duroxide.Event) duroxide.OrchestrationCommit {
			return duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: hRunning("HOrch"), HistoryDelta: []duroxide.Event{ev,
				hEvent(inst, 1, 3, duroxide.KeyValueCleared{Key: bad})}}
		}},
		{"activity_session", func(inst string, ev duroxide.Event) duroxide.OrchestrationCommit {
			return duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: hRunning("HOrch"), HistoryDelta: []duroxide.Event{ev,
				hEvent(inst, 1, 3, duroxide.ActivityScheduled{Name: "A", SessionID: hptr(bad)})},
				WorkerItems: []duroxide.WorkItem{duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 3, Name: "A", SessionID: hptr(bad)}}}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inst := "kv-" + c.name
			createHInstance(t, p, inst)
			require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "go", Data: "1"}, 0))
			item := mustFetchOrch(t, p, inst)
			ev := hEvent(inst, 1, 2, duroxide.ExternalEvent{Name: "go", Data: "1"})
			before := h.snapshot()
			requirePermanentErr(t, p.AckOrchestrationItem(ctx, item.LockToken, c.commit(inst, ev)))
			h.requireUnchanged(before)
			requireNoOrch(t, other, "the lock must still be held after a refused ack")
			require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
				ExecutionID: 1, HistoryDelta: []duroxide.Event{ev}, Metadata: hRunning("HOrch"),
			}))
		})
	}
	t.Run("enqueue_session", func(t *testing.T) {
		before := h.snapshot()
		requirePermanentErr(t, p.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: "kv-enqueue", ExecutionID: 1, ID: 9, Name: "A", SessionID: hptr(bad)}))
		h.requireUnchanged(before)
	})
}

// TestInvalidCompletionTargetRejected: AckWorkItem with a
// completion addressed to an instance id that cannot be stored is refused
// permanently before anything is written, and the item stays locked.
func TestInvalidCompletionTargetRejected(t *testing.T) {
	h := newHarness(t, cdb.Options{})
	ctx := context.Background()
	p := h.p
	other := h.open(cdb.Options{})
	for _, c := range invalidIDs {
		t.Run(c.name, func(t *testing.T) {
			inst := "worker-" + c.name
			require.NoError(t, p.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: "A"}))
			w, err := p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.DefaultOnly())
			require.NoError(t, err)
			require.NotNil(t, w)
			before := h.snapshot()
			err = p.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: c.id, ExecutionID: 1, ID: 2, Result: "r"})
			requirePermanentErr(t, err)
			h.requireUnchanged(before)
			w2, err := other.FetchWorkItem(ctx, hLock, 0, nil, duroxide.DefaultOnly())
			require.NoError(t, err)
			require.Nil(t, w2, "the work item must still be locked")
			require.NoError(t, p.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "r"}))
		})
	}
}

// TestProviderErrorFollowsClassification: a Cosmos failure that
// reaches the caller as a ProviderError keeps the classification of the
// *CosmosError it wraps (CosmosError.Retryable): 400, 401, 403/5300, 404
// and 413 are permanent, 408, 410, 429, 449, 500 and 503 retryable.
func TestProviderErrorFollowsClassification(t *testing.T) {
	h := newHarness(t, cdb.Options{Retry: cdb.RetryOptions{MaxThrottleRetries: -1}})
	ctx := context.Background()
	cases := []struct {
		status, sub int
		retryable   bool
	}{
		{400, 0, false}, {401, 0, false}, {403, 5300, false}, {404, 0, false}, {413, 0, false},
		{408, 0, true}, {410, 0, true}, {429, 0, true}, {449, 0, true}, {500, 0, true}, {503, 0, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d/%d", c.status, c.sub), func(t *testing.T) {
			h.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Status: c.status, SubStatus: c.sub, Times: 1})
			err := h.p.EnqueueForOrchestrator(ctx, hStart(fmt.Sprintf("cls-%d-%d", c.status, c.sub)), 0)
			require.Error(t, err)
			var ce *cdb.CosmosError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, c.retryable, ce.Retryable())
			require.Equal(t, c.retryable, duroxide.IsRetryable(err), "ProviderError retryability disagrees with the CosmosError it wraps: %v", err)
		})
	}
}

// TestOutboxActivityNotRedeliveredAfterConsumption: an activity for another
// instance goes through the outbox like any cross-partition item. When its
// intent survives delivery (the intent delete failed) and the activity is
// executed and acked before the reconciler redelivers the intent, the
// redelivery must not enqueue the activity a second time (for orchestrator
// messages a received marker prevents this; worker items get none).
func TestOutboxActivityNotRedeliveredAfterConsumption(t *testing.T) {
	h := newHarness(t, cdb.Options{})
	ctx := context.Background()
	createHInstance(t, h.p, "fa-parent")
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: "fa-parent", Name: "go"}, 0))
	item := mustFetchOrch(t, h.p, "fa-parent")
	var batches atomic.Int32
	h.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpBatch, Drop: cosmostest.DropBeforeApply, Times: 1,
		Match: func(r *http.Request) bool { return pkMatch("fa-parent")(r) && batches.Add(1) == 2 }})
	act := duroxide.ActivityExecuteItem{Instance: "fa-other", ExecutionID: 1, ID: 7, Name: "A", Input: "once"}
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: hRunning("HOrch"),
		HistoryDelta: []duroxide.Event{hEvent("fa-parent", 1, 2, duroxide.ExternalEvent{Name: "go"})},
		WorkerItems:  []duroxide.WorkItem{act}}))
	require.Len(t, h.docsWhere("outbox_intent", "fa-parent"), 1)
	require.Len(t, h.docsWhere("worker_queue", "fa-other"), 1)

	w, err := h.p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.DefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w)
	require.NoError(t, h.p.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: "fa-other", ExecutionID: 1, ID: 7, Result: "r"}))

	require.Equal(t, 1, reconcileFirst(t, h.open(cdb.Options{Test: cdb.TestOptions{Now: skewedClock(time.Minute)}})))
	require.Empty(t, h.docsWhere("worker_queue", "fa-other"), "the executed activity was enqueued again by a redelivered intent")
}

// TestForeignCompletionSurvivesFailedDelivery: AckWorkItem with a
// completion for another instance deletes the work item in one request and
// creates the completion in another. If the second fails the ack returns a
// retryable error, but the item is already gone: the retry fails with an
// invalid lock token and the completion is lost. The contract says delete
// and enqueue are atomic.
func TestForeignCompletionSurvivesFailedDelivery(t *testing.T) {
	h := newHarness(t, cdb.Options{OutboxMinAge: time.Nanosecond})
	ctx := context.Background()
	require.NoError(t, h.p.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: "fc-worker", ExecutionID: 1, ID: 2, Name: "A"}))
	w, err := h.p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.DefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w)
	done := duroxide.ActivityCompletedItem{Instance: "fc-orch", ExecutionID: 1, ID: 2, Result: "r"}
	h.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Match: pkMatch("fc-orch"), Status: http.StatusServiceUnavailable, Times: 1})
	err = h.p.AckWorkItem(ctx, w.LockToken, done)
	if err != nil {
		require.True(t, duroxide.IsRetryable(err), "%v", err)
		require.NoError(t, h.p.AckWorkItem(ctx, w.LockToken, done), "retrying a retryable ack must succeed")
	}
	// The failed delivery is left to the reconciler, never lost.
	_, err = h.p.RunMaintenance(ctx)
	require.NoError(t, err)
	require.Len(t, h.docsWhere("orch_queue", "fc-orch"), 1, "the completion was lost")
	require.Empty(t, h.docsWhere("orch_queue", "fc-worker"))
}
