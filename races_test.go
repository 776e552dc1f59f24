package cdb_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// Races between live actors (issue 10): a lock holder and its renewals,
// a session owner and its renewer, discovery cut short, and what the
// reconciler leaves behind.

func hActivity(instance string, id uint64, session *string) duroxide.ActivityExecuteItem {
	return duroxide.ActivityExecuteItem{Instance: instance, ExecutionID: 1, ID: id, Name: "HAct", Input: "{}", SessionID: session}
}

func hCompleted(instance string, id uint64) duroxide.ActivityCompletedItem {
	return duroxide.ActivityCompletedItem{Instance: instance, ExecutionID: 1, ID: id, Result: "ok"}
}

func mustFetchWork(t *testing.T, p *cdb.Provider, session *duroxide.SessionFetchConfig) *duroxide.LockedWorkItem {
	t.Helper()
	w, err := p.FetchWorkItem(t.Context(), hLock, 0, session, duroxide.AnyTag())
	require.NoError(t, err)
	require.NotNil(t, w, "expected a work item")
	return w
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// TestSessionRenewalSurvivesOwnersAck: the owner's own work (here a
// work-item renewal, which bumps the session's lastActivity) lands between
// the renewal's query and its write. The session is still the owner's, so
// it must be renewed.
func TestSessionRenewalSurvivesOwnersAck(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{}, withoutLag()) // the renewer is another process (see withoutLag)
	ctx := t.Context()
	const inst, owner = "sr-1", "worker-A"
	sid := "s1"
	require.NoError(t, h.p.EnqueueForWorker(ctx, hActivity(inst, 1, &sid)))
	w := mustFetchWork(t, h.p, &duroxide.SessionFetchConfig{OwnerID: owner, LockTimeout: time.Minute})

	var armed atomic.Bool
	armed.Store(true)
	renewer := h.openWith(testhooks.Seam{Cosmos: &testhooks.Hooks{Before: func(_ context.Context, c testhooks.Call) error {
		if c.Op == cdb.OpPatch && strings.Contains(c.ID, ":session:") && armed.CompareAndSwap(true, false) {
			// The owner works on the session meanwhile.
			require.NoError(t, h.p.RenewWorkItemLock(t.Context(), w.LockToken, time.Minute))
		}
		return nil
	}}}, cdb.Options{})
	before := num(h.docsWhere("session", inst)[0]["lockedUntil"])
	n, err := renewer.RenewSessionLock(ctx, []string{owner}, time.Hour, time.Hour)
	require.NoError(t, err)
	require.False(t, armed.Load(), "the owner's work ran between the renewal's query and its write")
	require.Equal(t, 1, n, "the owner's active session must be renewed")
	after := num(h.docsWhere("session", inst)[0]["lockedUntil"])
	require.Greater(t, after, before+int64(30*time.Minute/time.Millisecond), "lockedUntil extended by about an hour")

	// A session taken over by another owner is not renewed for the old one.
	require.NoError(t, h.srv.UpdateDocuments(hDatabase, hContainer, func(d map[string]any) bool {
		if d["type"] == "session" {
			d["ownerId"] = "worker-B"
		}
		return true
	}))
	n, err = h.p.RenewSessionLock(ctx, []string{owner}, time.Hour, time.Hour)
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestWorkItemAckAfterRenewalElsewhere: another process renews the work
// item's lock (new ETag); the holder's ack must still succeed.
func TestWorkItemAckAfterRenewalElsewhere(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{}, withoutLag()) // the renewer is another process (see withoutLag)
	ctx := t.Context()
	require.NoError(t, h.p.EnqueueForWorker(ctx, hActivity("wr-1", 1, nil)))
	w := mustFetchWork(t, h.p, nil)
	require.NoError(t, h.open(cdb.Options{}).RenewWorkItemLock(ctx, w.LockToken, time.Minute))
	require.NoError(t, h.p.AckWorkItem(ctx, w.LockToken, hCompleted("wr-1", 1)), "the lock is still ours: the ack must not fail")
	require.Empty(t, h.docsWhere("worker_queue", "wr-1"))
	require.Len(t, h.docsWhere("orch_queue", "wr-1"), 1, "the completion was enqueued")
}

// TestWorkItemRenewRacesAck: renewals racing the ack in one process. The
// ack must succeed every time, and the lock's ETag must be read and
// written under synchronisation (go test -race flags it otherwise).
func TestWorkItemRenewRacesAck(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	const rounds = 30
	var failed []string
	for i := range rounds {
		inst := fmt.Sprintf("rr-%d", i)
		require.NoError(t, h.p.EnqueueForWorker(ctx, hActivity(inst, 1, nil)))
		w := mustFetchWork(t, h.p, nil)
		var wg sync.WaitGroup
		stop := make(chan struct{})
		renew := func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := h.p.RenewWorkItemLock(ctx, w.LockToken, time.Minute); err != nil {
					return // acked: the token is gone
				}
			}
		}
		wg.Add(2)
		go renew()
		go renew()
		err := h.p.AckWorkItem(ctx, w.LockToken, hCompleted(inst, 1))
		close(stop)
		wg.Wait()
		// Keep going after a failure: more rounds give the race detector
		// more chances to see unsynchronised accesses to the lock.
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", inst, err))
		} else if len(h.docsWhere("orch_queue", inst)) != 1 {
			failed = append(failed, inst+": no completion")
		}
	}
	require.Empty(t, failed, "acks racing renewals failed in %d of %d rounds", len(failed), rounds)
}

// TestRenewOrchestrationLockExtendsMessages: renewing an orchestration
// lock extends the locks of its messages too, so other dispatchers do not
// see them as unlocked.
func TestRenewOrchestrationLockExtendsMessages(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	const inst = "ro-1"
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(inst), 0))
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "e", Data: "1"}, 0))
	item := mustFetchOrch(t, h.p, inst)
	require.Len(t, item.Messages, 2)
	require.NoError(t, h.p.RenewOrchestrationItemLock(ctx, item.LockToken, time.Hour))
	until := num(h.docsWhere("instance", inst)[0]["lockedUntil"])
	require.Greater(t, until, time.Now().Add(50*time.Minute).UnixMilli())
	msgs := h.docsWhere("orch_queue", inst)
	require.Len(t, msgs, 2)
	for _, m := range msgs {
		require.Equal(t, until, num(m["lockedUntil"]), "message %v keeps its lock as long as the instance", m["id"])
		require.Equal(t, item.LockToken, m["lockToken"])
	}
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1, HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch")}, Metadata: hRunning("HOrch"),
	}), "the renewed lock still commits")
	require.Empty(t, h.docsWhere("orch_queue", inst))
}

// TestFetchLocksAllReadyMessages: when discovery's page is cut short, the
// fetch still locks and returns every ready message of the instance.
func TestFetchLocksAllReadyMessages(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{DiscoveryPageSize: 2})
	ctx := t.Context()
	const inst = "am-1"
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(inst), 0))
	for i := range 4 {
		require.NoError(t, h.p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "e", Data: fmt.Sprint(i)}, 0))
	}
	item := mustFetchOrch(t, h.p, inst)
	require.Len(t, item.Messages, 5, "every ready message of the instance")
	_, ok := item.Messages[0].(duroxide.StartOrchestrationItem)
	require.True(t, ok, "oldest first")
	for _, m := range h.docsWhere("orch_queue", inst) {
		require.Equal(t, item.LockToken, m["lockToken"])
	}
}

// TestOutboxAttemptCount: a failed delivery by the reconciler is counted
// on the intent.
func TestOutboxAttemptCount(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	item, commit := startParentWithChild(t, h.p, "oa-parent", "oa-child")
	h.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Match: pkMatch("oa-child"), Status: http.StatusServiceUnavailable, Times: 3})
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, commit))
	rec := h.openWith(testhooks.Seam{Now: skewedClock(time.Minute)}, cdb.Options{})
	for want := int64(1); want <= 2; want++ {
		// rec is another process: on a lagging replica its sweep may not
		// see the acker's intent at first (harmless), so sweep until it
		// has made this attempt.
		var intents []map[string]any
		eventually(t, time.Minute, func() bool {
			n, err := rec.RunMaintenance(ctx)
			require.NoError(t, err)
			require.Zero(t, n)
			intents = h.docsWhere("outbox_intent", "oa-parent")
			require.Len(t, intents, 1)
			return num(intents[0]["attemptCount"]) >= want
		}, "attempt %d was never made", want)
		require.Equal(t, want, num(intents[0]["attemptCount"]))
		require.NotNil(t, intents[0]["lastAttemptAt"])
	}
	// The ack's own delivery and two reconciler deliveries failed.
	n, err := rec.RunMaintenance(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	requireOneChildStart(t, h, "oa-parent", "oa-child")
}

// TestReceivedMarkersExpire: the marker an outbox delivery leaves at its
// target is kept while a late re-delivery is possible and removed by a
// later turn once it is past its retention.
func TestReceivedMarkersExpire(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	item, commit := startParentWithChild(t, h.p, "rm-parent", "rm-child")
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, commit))
	requireOneChildStart(t, h, "rm-parent", "rm-child")
	require.Len(t, h.docsWhere("orch_received", "rm-child"), 1)

	turn := func() {
		t.Helper()
		require.NoError(t, h.p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: "rm-child", Name: "e", Data: "1"}, 0))
		it := mustFetchOrch(t, h.p, "rm-child")
		require.NoError(t, h.p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: hRunning("HChild")}))
	}
	turn()
	require.Len(t, h.docsWhere("orch_received", "rm-child"), 1, "a fresh marker is kept")

	require.NoError(t, h.srv.UpdateDocuments(hDatabase, hContainer, func(d map[string]any) bool {
		if d["type"] == "orch_received" {
			d["createdAt"] = float64(time.Now().Add(-2 * time.Hour).UnixMilli())
		}
		return true
	}))
	turn()
	require.Empty(t, h.docsWhere("orch_received", "rm-child"), "an expired marker is removed by the next turn")
}

// TestPendingTurnIDNotSpliced: a pending turn id that is not a turn id
// (a corrupt or hand-edited document) is refused, not spliced into the
// patch condition, where it could make the condition true for any turn.
func TestPendingTurnIDNotSpliced(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	createHInstance(t, h.p, "pt-1")
	evil := "x' OR '1' = '1"
	require.NoError(t, h.srv.UpdateDocuments(hDatabase, hContainer, func(d map[string]any) bool {
		if d["type"] == "instance" {
			d["pendingTurn"] = map[string]any{"turn": evil, "journal": float64(0)}
		}
		return true
	}))
	_, err := h.p.RunMaintenance(ctx)
	require.Error(t, err)
	pt, _ := h.docsWhere("instance", "pt-1")[0]["pendingTurn"].(map[string]any)
	require.NotNil(t, pt, "the pending turn was cleared through the spliced condition")
	require.Equal(t, evil, pt["turn"])
}
