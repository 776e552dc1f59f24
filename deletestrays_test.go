package cdb_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
)

// hParentTurn acks parent's first turn: it schedules child (event 2) and
// stays Running.
func hParentTurn(t *testing.T, p *cdb.Provider, parent, child string) {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, p.StartInstance(ctx, hStart(parent), ""))
	it := mustFetchOrch(t, p, parent)
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{hStarted(parent, "HOrch"),
			hEvent(parent, 1, 2, duroxide.SubOrchestrationScheduled{Name: "HChild", Instance: child, Input: `{"in":1}`})},
		OrchestratorItems: []duroxide.WorkItem{hChildStart(parent, child, 2)},
		Metadata:          hRunning("HOrch")}))
}

// TestDeleteDropsAChildStartPendingInTheOutbox: the parent's turn
// scheduled a child whose start is still an outbox intent in the
// parent's partition (its delivery failed). A forced deletion of the
// parent must take it along: the maintenance loop must not deliver it
// afterwards, to run an orphan that reports to the id's next life.
func TestDeleteDropsAChildStartPendingInTheOutbox(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	const parent, child = "pending-parent", "pending-parent::sub::2"
	p := e.actor(nil)
	undeliverable := e.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Status: http.StatusServiceUnavailable, Match: pkMatch(child)})
	hParentTurn(t, p, parent, child)
	undeliverable()
	require.NotEmpty(t, e.docsWhere("outbox_intent", parent), "the child's start is pending in the outbox")

	_, err := p.DeleteInstance(ctx, parent, true)
	require.NoError(t, err)
	e.finishDeletions(t, p)
	requireNoOrch(t, p, "the deleted parent's child must not start")
	require.Empty(t, e.docsWhere("", child), "nothing of the child was written")
}

// TestSweepDropsResponsesWrittenAfterTheTombstone: a deletion tombstones
// a parent and its sweep is interrupted; then the parent's child, swept
// later or still running elsewhere, reports to it, and a timer of it
// fires. The finished sweep must remove those responses although they
// were written after the tombstone: no next life of the id can have
// begun before the sweep ends, so they answer the deleted execution.
func TestSweepDropsResponsesWrittenAfterTheTombstone(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	const inst = "late-responses"
	p := e.interruptedDeletion(t, inst)
	for _, w := range []duroxide.WorkItem{
		duroxide.SubOrchCompletedItem{ParentInstance: inst, ParentExecutionID: 1, ParentID: 2, Result: "stale"},
		duroxide.SubOrchFailedItem{ParentInstance: inst, ParentExecutionID: 1, ParentID: 3, Details: duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppOrchestrationFailed}, Message: "stale"}},
		duroxide.TimerFiredItem{Instance: inst, ExecutionID: 1, ID: 4, FireAtMs: 1},
	} {
		require.NoError(t, p.EnqueueForOrchestrator(ctx, w, 0))
	}
	e.finishDeletions(t, p)
	require.Empty(t, e.docsWhere("orch_queue", inst), "responses to the deleted execution outlived its deletion")
}

// TestSweepKeepsOnlyWhatTheNextLifeCanBeSent (issue 29): a sweep keeps a
// queue message written after the tombstone only if the id's next life
// can be its addressee: a start, an external event, a queue message.
// Every other request can only be the deleted life's own, such as the
// successor start its last turn committed on a worker whose clock runs
// ahead of the deleter's (so the message looks written after the
// tombstone), or a cancel its parent sent; kept, the successor would run
// the deleted program in place of the next start. Activities are the
// deleted life's too: nothing can have scheduled them for the next life.
func TestSweepKeepsOnlyWhatTheNextLifeCanBeSent(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	const inst = "late-requests"
	p := e.interruptedDeletion(t, inst)
	for _, w := range []duroxide.WorkItem{
		duroxide.ContinueAsNewItem{Instance: inst, Orchestration: "HOrch", Input: "deleted program", Version: hptr("1.0.0")},
		duroxide.CancelInstanceItem{Instance: inst, Reason: "parent gone"},
		duroxide.SuspendInstanceItem{Instance: inst, Reason: "late"},
		hStart(inst),
		duroxide.ExternalRaisedItem{Instance: inst, Name: "e", Data: "for the next life"},
		duroxide.QueueMessageItem{Instance: inst, Name: "q", Data: "for the next life"},
	} {
		require.NoError(t, p.EnqueueForOrchestrator(ctx, w, 0))
	}
	require.NoError(t, p.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: "A", Input: "x"}))
	e.finishDeletions(t, p)
	var kept []string
	for _, d := range e.docsWhere("orch_queue", inst) {
		w, err := duroxide.UnmarshalWorkItem([]byte(d["workItem"].(string)))
		require.NoError(t, err)
		kept = append(kept, fmt.Sprintf("%T", w))
	}
	require.ElementsMatch(t, []string{"duroxide.StartOrchestrationItem", "duroxide.ExternalRaisedItem", "duroxide.QueueMessageItem"}, kept,
		"only what the next life can be sent outlives the deletion")
	require.Empty(t, e.docsWhere("worker_queue", inst), "the deleted life's activities outlived its deletion")
}

// interruptedDeletion starts inst, commits its first turn, and deletes it
// (forced) with the sweep failing, so its tombstone stands; the clock
// then moves on a second, so what is written next is stamped after the
// tombstone. It returns the provider that made the calls.
func (e *harness) interruptedDeletion(t *testing.T, inst string) *cdb.Provider {
	t.Helper()
	ctx := t.Context()
	p := e.actor(nil)
	require.NoError(t, p.StartInstance(ctx, hStart(inst), ""))
	it := mustFetchOrch(t, p, inst)
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch")}, Metadata: hRunning("HOrch")}))
	sweepFails := e.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpBatch, Status: http.StatusServiceUnavailable, Match: pkMatch(inst)})
	_, err := p.DeleteInstance(ctx, inst, true)
	require.Error(t, err, "the sweep failed")
	sweepFails()
	e.clock.advance(time.Second)
	return p
}

// finishDeletions lets the deleter's time lapse and runs maintenance,
// which finishes every interrupted deletion.
func (e *harness) finishDeletions(t *testing.T, p *cdb.Provider) {
	t.Helper()
	e.clock.advance(cdb.DefaultOutboxMinAge + cdb.DefaultMaxClockSkew)
	_, err := p.RunMaintenance(t.Context())
	require.NoError(t, err)
}
