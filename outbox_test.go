package cdb_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// The transactional outbox: a turn that starts a child (or messages any
// other instance) writes an intent in its own partition, atomically with
// the turn; the acking process then creates the message in the target's
// partition and deletes the intent, and a reconciler delivers whatever
// that did not finish. Faults are injected at each step; in every case the
// child ends up with exactly one start message, also when the intent is
// delivered twice or after the child already consumed the message.

// skewedClock is a clock ahead of the wall clock: a provider using it sees
// every intent as older than OutboxMinAge, so its RunMaintenance delivers
// at once, deterministically, without waiting.
func skewedClock(d time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(d) }
}

// startParentWithChild creates parent and fetches its first turn,
// returning the lock and the commit that starts child.
func startParentWithChild(t *testing.T, p *cdb.Provider, parent, child string) (*duroxide.OrchestrationItem, duroxide.OrchestrationCommit) {
	t.Helper()
	require.NoError(t, p.EnqueueForOrchestrator(t.Context(), hStart(parent), 0))
	item := mustFetchOrch(t, p, parent)
	return item, duroxide.OrchestrationCommit{
		ExecutionID: 1,
		HistoryDelta: []duroxide.Event{
			hStarted(parent, "HOrch"),
			hEvent(parent, 1, 2, duroxide.SubOrchestrationScheduled{Name: "HChild", Instance: child, Input: "{}"}),
		},
		OrchestratorItems: []duroxide.WorkItem{hChildStart(parent, child, 2)},
		Metadata:          hRunning("HOrch"),
	}
}

// requireOneChildStart requires exactly one start message in child's
// partition, fetches it (it must be the only message) and acks the child's
// first turn, after which the child has no message left.
func requireOneChildStart(t *testing.T, h *harness, parent, child string) {
	t.Helper()
	msgs := h.docsWhere("orch_queue", child)
	require.Len(t, msgs, 1, "messages at the child")
	require.NotEmpty(t, msgs[0]["outboxKey"], "an outbox delivery carries its idempotency key")
	// The delivery may have been made by another process: h.p's discovery
	// sees it once its replica has (lagging replicas).
	item, odd := fetchEventually(t, h.p, child)
	require.Zero(t, odd)
	require.Equal(t, []duroxide.WorkItem{hChildStart(parent, child, 2)}, item.Messages)
	md := hRunning("HChild")
	md.ParentInstanceID = hptr(parent)
	require.NoError(t, h.p.AckOrchestrationItem(t.Context(), item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1, HistoryDelta: []duroxide.Event{hStarted(child, "HChild")}, Metadata: md,
	}))
	require.Empty(t, h.docsWhere("orch_queue", child), "the child's start was delivered more than once")
}

// reconcileFirst runs p's reconciler until it delivers something and
// returns how many intents that pass delivered. p is another process than
// the acker: its sweep carries no session token for the acker's writes, so
// on a lagging replica it may miss a fresh intent at first, which only
// delays the delivery to a later sweep.
func reconcileFirst(t *testing.T, p *cdb.Provider) int {
	t.Helper()
	var n int
	eventually(t, time.Minute, func() bool {
		var err error
		n, err = p.RunMaintenance(t.Context())
		require.NoError(t, err)
		return n > 0
	}, "the reconciler never delivered")
	return n
}

// requireIntents requires n pending intents in parent's partition, all
// addressed to target.
func requireIntents(t *testing.T, h *harness, parent, target string, n int) {
	t.Helper()
	intents := h.docsWhere("outbox_intent", parent)
	require.Len(t, intents, n, "outbox intents of %q", parent)
	for _, in := range intents {
		require.Equal(t, target, in["targetInstanceId"])
		require.Equal(t, "orch_queue", in["targetDocumentType"])
		require.Equal(t, "pending", in["status"])
	}
}

// TestOutboxDeliveredRightAfterAck: normally the acking process delivers
// right after the commit: the child's message exists when the ack returns,
// no intent is left, and the reconciler finds nothing to do. Items for
// several other instances in one turn are all delivered.
func TestOutboxDeliveredRightAfterAck(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	item, commit := startParentWithChild(t, h.p, "ob-parent", "ob-child")
	commit.OrchestratorItems = append(commit.OrchestratorItems,
		duroxide.ExternalRaisedItem{Instance: "ob-other", Name: "ping", Data: "1"},
		duroxide.CancelInstanceItem{Instance: "ob-third", Reason: "r"},
		duroxide.ExternalRaisedItem{Instance: "ob-parent", Name: "self", Data: "2"},
	)
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, commit))

	require.Empty(t, h.docsWhere("outbox_intent", ""), "intents left after delivery")
	require.Len(t, h.docsWhere("orch_queue", "ob-other"), 1)
	require.Len(t, h.docsWhere("orch_queue", "ob-third"), 1)
	require.Len(t, h.docsWhere("orch_queue", "ob-parent"), 1, "a message to itself is written in the turn")
	n, err := h.openWith(testhooks.Seam{Now: skewedClock(time.Minute)}, cdb.Options{}).RunMaintenance(ctx)
	require.NoError(t, err)
	require.Zero(t, n)

	requireOneChildStart(t, h, "ob-parent", "ob-child")
}

// TestOutboxDeliveryFailsThenReconciles: the create in the child's
// partition fails (503); the ack still succeeds, the intent stays, and
// RunMaintenance delivers it once its age passes OutboxMinAge: exactly
// one message at the child.
func TestOutboxDeliveryFailsThenReconciles(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	item, commit := startParentWithChild(t, h.p, "f-parent", "f-child")
	h.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Match: pkMatch("f-child"), Status: http.StatusServiceUnavailable, Times: 1})
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, commit), "a failed delivery must not fail the committed turn")

	require.Empty(t, h.docsWhere("orch_queue", "f-child"))
	requireIntents(t, h, "f-parent", "f-child", 1)
	hist, err := h.p.Read(ctx, "f-parent")
	require.NoError(t, err)
	require.Len(t, hist, 2, "the turn is committed")

	// Younger than OutboxMinAge (2s by default): left for the acker.
	n, err := h.p.RunMaintenance(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	requireIntents(t, h, "f-parent", "f-child", 1)

	rec := h.openWith(testhooks.Seam{Now: skewedClock(time.Minute)}, cdb.Options{})
	require.Equal(t, 1, reconcileFirst(t, rec))
	require.Empty(t, h.docsWhere("outbox_intent", ""))
	n, err = rec.RunMaintenance(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	requireOneChildStart(t, h, "f-parent", "f-child")
}

// TestOutboxBackgroundReconciler: the same failure, delivered by the
// background reconciler of a provider with a short interval and age.
func TestOutboxBackgroundReconciler(t *testing.T) {
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	item, commit := startParentWithChild(t, h.p, "bg-parent", "bg-child")
	h.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Match: pkMatch("bg-child"), Status: http.StatusServiceUnavailable, Times: 1})
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, commit))
	requireIntents(t, h, "bg-parent", "bg-child", 1)

	h.open(cdb.Options{MaintenanceInterval: 10 * time.Millisecond, OutboxMinAge: time.Millisecond})
	eventually(t, 10*time.Second, func() bool { return len(h.docsWhere("outbox_intent", "")) == 0 }, "the background reconciler did not deliver")
	requireOneChildStart(t, h, "bg-parent", "bg-child")
}

// TestOutboxDoubleDelivery: an intent delivered by the ack path whose
// intent survives (lost delivery response; failed intent delete) is
// delivered again by the reconciler: the repeated create is a 409 treated
// as done, so the child still has exactly one message. Redelivery after the
// child consumed the message collides with the received marker and creates
// nothing.
func TestOutboxDoubleDelivery(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	t.Run("delivery response lost", func(t *testing.T) {
		h := newHarness(t, cdb.Options{})
		item, commit := startParentWithChild(t, h.p, "dd-parent", "dd-child")
		h.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Match: pkMatch("dd-child"), Drop: cosmostest.DropAfterApply, Times: 1})
		require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, commit))
		require.Len(t, h.docsWhere("orch_queue", "dd-child"), 1, "the delivery was applied")
		requireIntents(t, h, "dd-parent", "dd-child", 1)

		require.Equal(t, 1, reconcileFirst(t, h.openWith(testhooks.Seam{Now: skewedClock(time.Minute)}, cdb.Options{})), "a 409 on redelivery is delivered")
		require.Empty(t, h.docsWhere("outbox_intent", ""))
		requireOneChildStart(t, h, "dd-parent", "dd-child")
	})

	t.Run("intent delete fails, redelivered after consumption", func(t *testing.T) {
		h := newHarness(t, cdb.Options{})
		item, commit := startParentWithChild(t, h.p, "dc-parent", "dc-child")
		// The first batch on the parent's partition from here on is the
		// commit, the second the deletion of the delivered intent: drop that
		// one before it is applied.
		var batches atomic.Int32
		h.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpBatch, Drop: cosmostest.DropBeforeApply, Times: 1,
			Match: func(r *http.Request) bool { return pkMatch("dc-parent")(r) && batches.Add(1) == 2 }})
		require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, commit))
		require.Equal(t, int32(2), batches.Load())
		require.Len(t, h.docsWhere("orch_queue", "dc-child"), 1)
		requireIntents(t, h, "dc-parent", "dc-child", 1)

		// The child consumes its start; a marker replaces the message.
		requireOneChildStart(t, h, "dc-parent", "dc-child")
		require.Empty(t, h.docsWhere("orch_queue", "dc-child"))
		markers := h.docsWhere("orch_received", "dc-child")
		require.Len(t, markers, 1)
		childHist, err := h.p.Read(ctx, "dc-child")
		require.NoError(t, err)

		require.Equal(t, 1, reconcileFirst(t, h.openWith(testhooks.Seam{Now: skewedClock(time.Minute)}, cdb.Options{})))
		require.Empty(t, h.docsWhere("outbox_intent", ""))
		require.Empty(t, h.docsWhere("orch_queue", "dc-child"), "redelivery after consumption created a new message")
		require.Len(t, h.docsWhere("orch_received", "dc-child"), 1)
		requireNoOrch(t, h.p)
		again, err := h.p.Read(ctx, "dc-child")
		require.NoError(t, err)
		require.Equal(t, childHist, again)
	})
}

// TestOutboxCrashBetweenCommitAndDelivery: the acking process dies right
// after its commit (every later request fails, as if the process were
// gone); a restarted process on the same container — a new provider whose
// background reconciler runs — delivers the pending intent: exactly one
// start message at the child.
func TestOutboxCrashBetweenCommitAndDelivery(t *testing.T) {
	var armed, crashed atomic.Bool
	var afterCrash atomic.Int32
	errDied := errors.New("process died")
	hooks := &testhooks.Hooks{
		Before: func(_ context.Context, c testhooks.Call) error {
			if crashed.Load() {
				afterCrash.Add(1)
				return errDied
			}
			return nil
		},
		After: func(_ context.Context, c testhooks.Call, err error) error {
			if armed.Load() && err == nil && c.Op == cdb.OpBatch && c.PartitionKey == "cr-parent" {
				crashed.Store(true)
			}
			return err
		},
	}
	h := newHarness(t, cdb.Options{}, withSeam(testhooks.Seam{Cosmos: hooks}))
	ctx := t.Context()
	item, commit := startParentWithChild(t, h.p, "cr-parent", "cr-child")
	armed.Store(true)
	_ = h.p.AckOrchestrationItem(ctx, item.LockToken, commit) // the process is gone; nobody sees the result
	require.True(t, crashed.Load())
	require.Positive(t, afterCrash.Load(), "the dying process tried to deliver")
	require.Empty(t, h.docsWhere("orch_queue", "cr-child"))
	requireIntents(t, h, "cr-parent", "cr-child", 1)
	require.NoError(t, h.p.Close())

	restarted := h.open(cdb.Options{MaintenanceInterval: 10 * time.Millisecond, OutboxMinAge: time.Millisecond})
	eventually(t, 10*time.Second, func() bool { return len(h.docsWhere("outbox_intent", "")) == 0 }, "the restarted process did not deliver")
	msgs := h.docsWhere("orch_queue", "cr-child")
	require.Len(t, msgs, 1)
	item2, err := restarted.FetchOrchestrationItem(ctx, hLock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item2)
	require.Equal(t, "cr-child", item2.Instance)
	require.Equal(t, []duroxide.WorkItem{hChildStart("cr-parent", "cr-child", 2)}, item2.Messages)
	hist, err := restarted.Read(ctx, "cr-parent")
	require.NoError(t, err)
	require.Len(t, hist, 2, "the parent's turn was committed before the crash")
}

// TestOutboxReconcilerStopsOnClose: Close stops the background reconciler
// (no request is sent after Close returns), cancels a reconcile in
// progress instead of waiting for it, and can be called twice.
func TestOutboxReconcilerStopsOnClose(t *testing.T) {
	var calls atomic.Int32
	var closed atomic.Bool
	var afterClose atomic.Int32
	hooks := &testhooks.Hooks{Before: func(context.Context, testhooks.Call) error {
		calls.Add(1)
		if closed.Load() {
			afterClose.Add(1)
		}
		return nil
	}}
	h := newHarness(t, cdb.Options{})
	p := h.openWith(testhooks.Seam{Cosmos: hooks}, cdb.Options{MaintenanceInterval: 2 * time.Millisecond, OutboxMinAge: time.Millisecond})
	eventually(t, 10*time.Second, func() bool { return calls.Load() >= 5 }, "the reconciler did not run")
	require.NoError(t, p.Close())
	closed.Store(true)
	n := calls.Load()
	// Absence can only be shown by waiting: 100 reconciler intervals.
	time.Sleep(200 * time.Millisecond)
	require.Equal(t, n, calls.Load(), "requests after Close")
	require.Zero(t, afterClose.Load())
	require.NoError(t, p.Close(), "Close twice")

	// A reconcile blocked in a request is canceled by Close.
	entered := make(chan struct{}, 1)
	blocking := &testhooks.Hooks{Before: func(ctx context.Context, c testhooks.Call) error {
		if c.Op == cdb.OpQuery {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}}
	p2 := h.openWith(testhooks.Seam{Cosmos: blocking}, cdb.Options{MaintenanceInterval: time.Millisecond, OutboxMinAge: time.Millisecond})
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the reconciler never queried")
	}
	done := make(chan error, 1)
	go func() { done <- p2.Close() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for a blocked reconcile")
	}
}

// TestStaleDiscoveryDoesNotLockAReceivedMarker: a message delivered through
// the outbox leaves, once consumed, a received marker under the same id. A
// fetch that discovered the message before it was consumed must not lock
// the marker in its place: it would hand the runtime a message with no work
// item ("cannot be decoded: EOF"), and the turn would be abandoned.
func TestStaleDiscoveryDoesNotLockAReceivedMarker(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	paused, release := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	hooks := &testhooks.Hooks{Before: func(_ context.Context, c testhooks.Call) error {
		if c.Op == cdb.OpBatch && c.PartitionKey == "sd-child" && once.CompareAndSwap(false, true) {
			close(paused)
			<-release
		}
		return nil
	}}
	h := newHarness(t, cdb.Options{OutboxMinAge: time.Nanosecond})
	createHInstance(t, h.p, "sd-parent")
	createHInstance(t, h.p, "sd-child")
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: "sd-parent", Name: "go"}, 0))
	item := mustFetchOrch(t, h.p, "sd-parent")
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: hRunning("HOrch"),
		HistoryDelta:      []duroxide.Event{hEvent("sd-parent", 1, 2, duroxide.ExternalEvent{Name: "go"})},
		OrchestratorItems: []duroxide.WorkItem{duroxide.ExternalRaisedItem{Instance: "sd-child", Name: "hello", Data: "1"}}}))

	stale := h.openWith(testhooks.Seam{Cosmos: hooks}, cdb.Options{})
	type result struct {
		item *duroxide.OrchestrationItem
		err  error
	}
	got := make(chan result, 1)
	fetch := func() {
		go func() {
			it, err := stale.FetchOrchestrationItem(ctx, hLock, 0, nil)
			got <- result{it, err}
		}()
	}
	// Wait until the stale fetch has discovered the message and waits
	// before locking it. On lagging replicas its discovery (with no
	// session token) may miss the message and return nothing: fetch again.
	fetch()
	deadline := time.After(time.Minute)
	for discovered := false; !discovered; {
		select {
		case <-paused:
			discovered = true
		case r := <-got:
			require.NoError(t, r.err)
			require.Nil(t, r.item, "the stale fetch locked something without the hook seeing it")
			fetch()
		case <-deadline:
			t.Fatal("the stale fetch never discovered the child's message")
		}
	}

	child := mustFetchOrch(t, h.p, "sd-child")
	require.Len(t, child.Messages, 1)
	require.NoError(t, h.p.AckOrchestrationItem(ctx, child.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: hRunning("HOrch"),
		HistoryDelta: []duroxide.Event{hEvent("sd-child", 1, 2, duroxide.ExternalEvent{Name: "hello", Data: "1"})}}))
	require.Len(t, h.docsWhere("orch_received", "sd-child"), 1, "the consumed message left its marker")

	close(release)
	r := <-got
	require.NoError(t, r.err, "the stale fetch locked the received marker as if it were the message")
	if r.item != nil {
		require.NotEqual(t, "sd-child", r.item.Instance, "the child has no message left")
	}
	for _, m := range h.docsWhere("orch_received", "sd-child") {
		require.Nil(t, m["lockToken"], "the marker was patched with a lock")
	}
}

// TestOutboxActivityNotRedeliveredAfterConsumption: an activity for another
// instance goes through the outbox like any cross-partition item. When its
// intent survives delivery (the intent delete failed) and the activity is
// executed and acked before the reconciler redelivers the intent, the
// redelivery must not enqueue the activity a second time (for orchestrator
// messages a received marker prevents this; worker items get none).
func TestOutboxActivityNotRedeliveredAfterConsumption(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
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

	require.Equal(t, 1, reconcileFirst(t, h.openWith(testhooks.Seam{Now: skewedClock(time.Minute)}, cdb.Options{})))
	require.Empty(t, h.docsWhere("worker_queue", "fa-other"), "the executed activity was enqueued again by a redelivered intent")
}

// TestForeignCompletionSurvivesFailedDelivery: AckWorkItem with a
// completion for another instance deletes the work item and writes the
// completion's outbox intent in one batch (the contract says delete and
// enqueue are atomic), so a failed delivery to the other partition loses
// nothing: a retryable ack error is followed by a retry that succeeds (it
// once failed with an invalid lock token, the item already gone), and the
// reconciler delivers the completion exactly once.
func TestForeignCompletionSurvivesFailedDelivery(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{OutboxMinAge: time.Nanosecond})
	ctx := t.Context()
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
