package cdb_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// Races between live actors (issue #10). Each test drives two or more
// providers on one container — separate processes — through the public
// API and pauses one of them at a chosen Cosmos call, the way a slow but
// alive process (throttled, descheduled, GC-paused) behaves, then checks
// that what is stored is still right.

// completedBigTurn is bigTurn completing the instance (KV merged into kv
// documents by the journal).
func completedBigTurn(inst string) duroxide.OrchestrationCommit {
	c := bigTurn(inst)
	c.WorkerItems, c.OrchestratorItems = nil, nil
	c.Metadata = duroxide.ExecutionMetadata{Status: str(duroxide.StatusCompleted), Output: str(`"done"`)}
	return c
}

// ackBigTurnLeavingItPending commits commit as a large turn whose
// roll-forward the acking process lost, so the turn stays pending.
func ackBigTurnLeavingItPending(t *testing.T, e *harness, inst string, commit duroxide.OrchestrationCommit) {
	t.Helper()
	g := newGate(t)
	p := e.actor(g)
	it := prepare(t, p, inst)
	// The acking process loses its roll-forward (its first journal read
	// fails): the turn is committed and left pending.
	g.setFail(func(c testhooks.Call) error {
		if isJournalRead(c) {
			return errInjected
		}
		return nil
	})
	require.NoError(t, p.AckOrchestrationItem(t.Context(), it.LockToken, commit))
	g.setFail(nil)
}

// TestExpiredStagerCannotDeleteTheNewHoldersTurn (issue #10, 1): A's lock
// expires while A stages a large turn; B takes the lock and stages the
// same turn; A resumes. Whatever A does, B's committed turn is complete.
// On 6c3fdcd A's next stage batch met B's document (409), its cleanup
// deleted B's staged documents, and B's commit lost 100 events.
func TestExpiredStagerCannotDeleteTheNewHoldersTurn(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	gA, gB := newGate(t), newGate(t)
	pA, pB := e.actor(gA), e.actor(gB)
	itA := prepare(t, pA, "big")

	stallA := gA.at(false, nth(2, isBigBatch)) // before A's second stage batch
	ackA := async(func() error { return pA.AckOrchestrationItem(ctx, itA.LockToken, bigTurn("big")) })
	stallA.wait(t)

	e.clock.advance(2 * time.Minute) // A's lock expired
	itB, err := pB.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, itB, "B takes the expired lock")
	require.Len(t, itB.History, 1)
	stallB := gB.at(false, func(c testhooks.Call) bool { return c.Op == cdb.OpBatch && c.Operations <= 2 }) // B's commit
	ackB := async(func() error { return pB.AckOrchestrationItem(ctx, itB.LockToken, bigTurn("big")) })
	stallB.wait(t)

	stallA.open()
	errA := recv(t, ackA)
	require.Error(t, errA, "A's lock is gone: its turn cannot commit")
	stallB.open()
	require.NoError(t, recv(t, ackB), "B holds the lock: its turn commits")

	_, err = pB.RunMaintenance(ctx)
	require.NoError(t, err)
	checkBigTurn(t, e.srv, pB, e.db, e.coll, "big")
}

// TestStaleRollForwardCannotOverwriteANewerTurn (issue #10, 2): a
// reconciler reads the journal of a pending turn and stalls; the next
// fetch rolls the turn forward and a new turn sets a key; the reconciler
// resumes. On 6c3fdcd it wrote the key back to the old turn's value.
func TestStaleRollForwardCannotOverwriteANewerTurn(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	ackBigTurnLeavingItPending(t, e, "big", bigTurn("big"))

	gR := newGate(t)
	pR := e.actor(gR)
	stallR := gR.at(true, isJournalRead) // the reconciler has read the journal
	rec := async(func() error { _, err := pR.RunMaintenance(ctx); return err })
	stallR.wait(t)

	pB := e.actor(nil)
	require.NoError(t, pB.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: "big", Name: "next", Data: "2"}, 0))
	it, err := pB.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, it)
	require.Len(t, it.History, 1+bigEvents+bigKeys, "the fetch rolled the pending turn forward")
	v0, ok0, err := pB.KVValue(ctx, "big", "k/000")
	require.NoError(t, err)
	require.True(t, ok0)
	require.Equal(t, "v", v0)
	next := uint64(len(it.History)) + 1
	require.NoError(t, pB.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{{EventID: next, InstanceID: "big", ExecutionID: 1, DuroxideVersion: "0.1.29",
			Kind: duroxide.KeyValueSet{Key: "k/000", Value: "NEW", LastUpdatedAtMs: 2}}}}))

	stallR.open()
	require.NoError(t, recv(t, rec))
	v, ok, err := pB.KVValue(ctx, "big", "k/000")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "NEW", v, "the newer turn's value stands")
	hist, err := pB.Read(ctx, "big")
	require.NoError(t, err)
	require.Len(t, hist, 2+bigEvents+bigKeys)
}

// TestRollForwardAfterDeletionResurrectsNothing (issue #10, 3): a large
// turn completes the instance; a client sees Completed and deletes it
// while a reconciler's roll-forward is stalled. On 6c3fdcd the
// roll-forward wrote 105 KV documents back into the deleted instance,
// and they leaked into the next instance with the same id.
func TestRollForwardAfterDeletionResurrectsNothing(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	ackBigTurnLeavingItPending(t, e, "big", completedBigTurn("big"))

	gR := newGate(t)
	pR := e.actor(gR)
	stallR := gR.at(true, isJournalRead)
	rec := async(func() error { _, err := pR.RunMaintenance(ctx); return err })
	stallR.wait(t)

	pD := e.actor(nil)
	info, err := pD.InstanceInfo(ctx, "big")
	require.NoError(t, err)
	require.Equal(t, duroxide.StatusCompleted, info.Status)
	_, err = pD.DeleteInstance(ctx, "big", false)
	require.NoError(t, err)
	require.Empty(t, e.leftovers("big"))

	stallR.open()
	require.NoError(t, recv(t, rec))
	require.Empty(t, e.leftovers("big"), "nothing of a deleted instance comes back")
	_, ok, err := pD.KVValue(ctx, "big", "k/000")
	require.NoError(t, err)
	require.False(t, ok)
}

// TestWorkerAckDuringDeletionLeavesNoOrphan (issue #10, 4): a worker acks
// an activity after the deletion's tombstone and before its sweep. On
// 6c3fdcd the completion survived the sweep (enqueued after the
// tombstone) and the next instance with that id received it.
func TestWorkerAckDuringDeletionLeavesNoOrphan(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	p := e.actor(nil)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: "del", Orchestration: "Big", Input: "{}", Version: str("1.0.0"), ExecutionID: 1}, 0))
	it, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{started("del"), {EventID: 2, InstanceID: "del", ExecutionID: 1, DuroxideVersion: "0.1.29", Kind: duroxide.ActivityScheduled{Name: "Work", Input: "x"}}},
		WorkerItems:  []duroxide.WorkItem{duroxide.ActivityExecuteItem{Instance: "del", ExecutionID: 1, ID: 2, Name: "Work", Input: "x"}},
		Metadata:     duroxide.ExecutionMetadata{OrchestrationName: str("Big"), OrchestrationVersion: str("1.0.0")}}))
	w, err := p.FetchWorkItem(ctx, time.Minute, 0, nil, duroxide.AnyTag())
	require.NoError(t, err)
	require.NotNil(t, w)

	gD := newGate(t)
	pD := e.actor(gD)
	stallD := gD.at(true, func(c testhooks.Call) bool { return c.Op == cdb.OpPatch }) // the tombstone is written
	del := async(func() error { _, err := pD.DeleteInstance(ctx, "del", true); return err })
	stallD.wait(t)

	e.clock.advance(time.Second)
	_ = p.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: "del", ExecutionID: 1, ID: 2, Result: "old"})
	stallD.open()
	require.NoError(t, recv(t, del))
	require.Empty(t, e.leftovers("del"), "no orphan completion")

	e.clock.advance(time.Second)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: "del", Orchestration: "Big", Input: "{}", Version: str("1.0.0"), ExecutionID: 1}, 0))
	it, err = p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, it)
	require.Len(t, it.Messages, 1, "the new instance receives only its start, got %v", it.Messages)
	require.IsType(t, duroxide.StartOrchestrationItem{}, it.Messages[0])
}

// completeTree creates root (Completed) with a child in the given status.
func completeTree(t *testing.T, p *cdb.Provider, root, child string, childStatus *string) {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, p.EnqueueForOrchestrator(ctx, hStart(root), 0))
	it := mustFetchOrch(t, p, root)
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{hStarted(root, "HOrch")}, Metadata: hStatus("HOrch", duroxide.StatusCompleted, `"ok"`)}))
	require.NoError(t, p.EnqueueForOrchestrator(ctx, hChildStart(root, child, 2), 0))
	it = mustFetchOrch(t, p, child)
	md := hRunning("HChild")
	md.ParentInstanceID = str(root)
	if childStatus != nil {
		md.Status, md.Output = childStatus, str(`"ok"`)
	}
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{hStarted(child, "HChild")}, Metadata: md}))
}

// TestDeleteInstanceBulkNeverDeletesARunningChild (issue #10, 5): a
// completed root with a running child. On 6c3fdcd the bulk deletion
// checked only the root and deleted the running child.
func TestDeleteInstanceBulkNeverDeletesARunningChild(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	p := e.actor(nil)
	completeTree(t, p, "root", "child", nil)

	res, err := p.DeleteInstanceBulk(ctx, duroxide.InstanceFilter{InstanceIDs: []string{"root"}})
	require.NoError(t, err)
	require.Zero(t, res.InstancesDeleted, "a tree with a running instance is skipped")
	info, err := p.InstanceInfo(ctx, "child")
	require.NoError(t, err)
	require.Equal(t, duroxide.StatusRunning, info.Status)
	_, err = p.InstanceInfo(ctx, "root")
	require.NoError(t, err)
}

// TestDeleteInstanceBulkFallbackNeverForces (issue #10, 5): the tree
// changes between the bulk scan and the tombstones (the child starts a
// new execution and runs again); the fallback must not force.
func TestDeleteInstanceBulkFallbackNeverForces(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	p := e.actor(nil)
	completeTree(t, p, "root", "child", str(duroxide.StatusCompleted))

	g := newGate(t)
	pD := e.actor(g)
	stall := g.at(false, func(c testhooks.Call) bool { return c.Op == cdb.OpPatch }) // before the first tombstone
	del := async(func() error {
		_, err := pD.DeleteInstanceBulk(ctx, duroxide.InstanceFilter{InstanceIDs: []string{"root"}})
		return err
	})
	stall.wait(t)

	// The child continues as new: running again.
	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: "child", Name: "again", Data: "1"}, 0))
	it := mustFetchOrch(t, p, "child")
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 2,
		HistoryDelta: []duroxide.Event{hEvent("child", 2, 1, duroxide.OrchestrationStarted{Name: "HChild", Version: "1.0.0", Input: "{}"})}, Metadata: hRunning("HChild")}))

	stall.open()
	require.NoError(t, recv(t, del))
	info, err := p.InstanceInfo(ctx, "child")
	require.NoError(t, err, "the running child is not deleted")
	require.Equal(t, duroxide.StatusRunning, info.Status)
}

// TestReadersNeverSeeHalfALargeTurn (issue #10, 6): a reader between
// the batches of a roll-forward. On 6c3fdcd Read (instance read before
// the turn's commit, history query after its first roll-forward batch)
// got 101 of 226 events, ReadWithExecution (query before, instance read
// after the roll-forward ended) a part too, and KV reads part of the
// turn's keys.
func TestReadersNeverSeeHalfALargeTurn(t *testing.T) {
	t.Parallel()
	whole := func(t *testing.T, n int, what string) {
		require.Truef(t, n == 1 || n == 1+bigEvents+bigKeys, "%s saw %d events: part of a turn", what, n)
	}
	t.Run("Read", func(t *testing.T) {
		e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
		ctx := t.Context()
		gA, gR := newGate(t), newGate(t)
		pA, pR := e.actor(gA), e.actor(gR)
		it := prepare(t, pA, "big")
		stallR := gR.at(true, isInstanceRead)
		read := make(chan []duroxide.Event, 1)
		rd := async(func() error { h, err := pR.Read(ctx, "big"); read <- h; return err })
		stallR.wait(t)
		stallA := gA.at(true, afterFirst(isJournalRead, isBigBatch)) // the first roll-forward batch
		ack := async(func() error { return pA.AckOrchestrationItem(ctx, it.LockToken, bigTurn("big")) })
		stallA.wait(t)
		stallR.open()
		require.NoError(t, recv(t, rd))
		whole(t, len(<-read), "Read")
		stallA.open()
		require.NoError(t, recv(t, ack))
	})
	// The query runs while the turn is still staging (it sees part of the
	// turn's documents) and the read after it already finds the turn
	// committed and pending: the partial documents must not be taken for
	// the turn (the explorer's long run found this, seed
	// 1795444268678628739).
	t.Run("Read across the commit of a turn still staging", func(t *testing.T) {
		e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
		ctx := t.Context()
		gA, gR := newGate(t), newGate(t)
		pA, pR := e.actor(gA), e.actor(gR)
		it := prepare(t, pA, "big")
		staged := gA.at(true, nth(1, isBigBatch)) // the first stage batch
		ack := async(func() error { return pA.AckOrchestrationItem(ctx, it.LockToken, bigTurn("big")) })
		staged.wait(t)
		queried := gR.at(true, func(c testhooks.Call) bool { return c.Op == cdb.OpQuery })
		read := make(chan []duroxide.Event, 1)
		rd := async(func() error { h, err := pR.Read(ctx, "big"); read <- h; return err })
		queried.wait(t)
		committed := gA.at(false, isJournalRead) // the roll-forward starts after the commit
		staged.open()
		committed.wait(t)
		queried.open()
		require.NoError(t, recv(t, rd))
		whole(t, len(<-read), "Read")
		committed.open()
		require.NoError(t, recv(t, ack))
	})
	t.Run("ReadWithExecution", func(t *testing.T) {
		e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
		ctx := t.Context()
		gA, gR := newGate(t), newGate(t)
		pA, pR := e.actor(gA), e.actor(gR)
		it := prepare(t, pA, "big")
		stallA := gA.at(true, afterFirst(isJournalRead, isBigBatch))
		ack := async(func() error { return pA.AckOrchestrationItem(ctx, it.LockToken, bigTurn("big")) })
		stallA.wait(t)
		stallR := gR.at(true, func(c testhooks.Call) bool { return c.Op == cdb.OpQuery })
		read := make(chan []duroxide.Event, 1)
		rd := async(func() error { h, err := pR.ReadWithExecution(ctx, "big", 1); read <- h; return err })
		stallR.wait(t)
		stallA.open()
		require.NoError(t, recv(t, ack))
		stallR.open()
		require.NoError(t, recv(t, rd))
		whole(t, len(<-read), "ReadWithExecution")
	})
	t.Run("KV", func(t *testing.T) {
		e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
		ctx := t.Context()
		gA := newGate(t)
		pA, pR := e.actor(gA), e.actor(nil)
		it := prepare(t, pA, "big")
		// Pause after each roll-forward batch in turn and read the keys.
		stall := gA.at(true, afterFirst(isJournalRead, isBigBatch))
		ack := async(func() error { return pA.AckOrchestrationItem(ctx, it.LockToken, bigTurn("big")) })
		for stall != nil {
			stall.wait(t)
			kv, err := pR.KVValues(ctx, "big")
			require.NoError(t, err)
			require.Truef(t, len(kv) == 0 || len(kv) == bigKeys, "KV read saw %d of %d keys", len(kv), bigKeys)
			_, ok, err := pR.KVValue(ctx, "big", "k/104")
			require.NoError(t, err)
			require.Equal(t, len(kv) > 0, ok, "KVValue and KVValues agree")
			next := gA.at(true, isBigBatch)
			stall.open()
			select {
			case err := <-ack:
				require.NoError(t, err)
				stall = nil
			case <-next.reached:
				stall = next
			}
		}
		kv, err := pR.KVValues(ctx, "big")
		require.NoError(t, err)
		require.Len(t, kv, bigKeys)
	})
}

// TestRetriedLargeAckAfterLostCommitResponse (issue #10, 10): the commit
// of a large turn is applied but its response lost; the reconciler rolls
// the turn forward; the runtime retries the ack. On 6c3fdcd the retry
// failed permanently ("duplicate history event") for a turn committed
// exactly once.
func TestRetriedLargeAckAfterLostCommitResponse(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	g := newGate(t)
	p := e.actor(g)
	it := prepare(t, p, "big")
	lost := false
	g.setFailAfter(func(c testhooks.Call, err error) error {
		if err == nil && !lost && c.Op == cdb.OpBatch && c.Operations == 1 {
			lost = true // the commit is applied; its response is lost
			return errInjected
		}
		return err
	})
	err := p.AckOrchestrationItem(ctx, it.LockToken, bigTurn("big"))
	require.Error(t, err)
	require.True(t, lost)
	require.True(t, duroxide.IsRetryable(err), "a lost response is retryable: %v", err)
	g.setFailAfter(nil)

	_, err = e.actor(nil).RunMaintenance(ctx)
	require.NoError(t, err)
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, bigTurn("big")), "the turn was committed exactly once: the retry succeeds")
	checkBigTurn(t, e.srv, p, e.db, e.coll, "big")
}

// TestLargeAckDuplicateEventNamesTheEvent (issue #10, 10): a large turn
// whose event already exists fails permanently naming that event. On
// 6c3fdcd the error took the stage batch's operation index for the
// plan's and reported a generic batch failure.
func TestLargeAckDuplicateEventNamesTheEvent(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	p := e.actor(nil)
	it := prepare(t, p, "big")
	require.NoError(t, p.AppendWithExecution(ctx, "big", 1, []duroxide.Event{{EventID: 2, InstanceID: "big", ExecutionID: 1, DuroxideVersion: "0.1.29",
		Kind: duroxide.ActivityScheduled{Name: "Work", Input: "0000"}}}))
	err := p.AckOrchestrationItem(ctx, it.LockToken, bigTurn("big"))
	requirePermanentErr(t, err)
	require.ErrorIs(t, err, duroxide.ErrDuplicateEvent)
	require.Contains(t, err.Error(), "duplicate history event")
	require.Contains(t, err.Error(), "history")
}

// TestAckRetryAfterConcurrentPruneKeepsThePrune (issue #10, 11): while a
// turn is locked, PruneExecutions drops an old execution's summary (the
// instance's ETag changes); the ack's 412 retry must start from the
// current instance document. On 6c3fdcd it resent the stale one and the
// pruned execution came back.
func TestAckRetryAfterConcurrentPruneKeepsThePrune(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	p := e.actor(nil)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, hStart("pr"), 0))
	it := mustFetchOrch(t, p, "pr")
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{hStarted("pr", "HOrch")}, Metadata: hStatus("HOrch", duroxide.StatusContinuedAsNew, `"x"`)}))
	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: "pr", Name: "n", Data: "1"}, 0))
	it = mustFetchOrch(t, p, "pr")
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 2,
		HistoryDelta: []duroxide.Event{hEvent("pr", 2, 1, duroxide.OrchestrationStarted{Name: "HOrch", Version: "1.0.0", Input: "{}"})}, Metadata: hRunning("HOrch")}))
	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: "pr", Name: "n", Data: "2"}, 0))
	it = mustFetchOrch(t, p, "pr")

	res, err := e.actor(nil).PruneExecutions(ctx, "pr", duroxide.PruneOptions{KeepLast: ptrU32(1)})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.ExecutionsDeleted)
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 2,
		HistoryDelta: []duroxide.Event{hEvent("pr", 2, 2, duroxide.ExternalEvent{Name: "n", Data: "2"})}, Metadata: hRunning("HOrch")}))

	for _, d := range e.docsWhere("", "pr") {
		if d["type"] == "instance" {
			execs, _ := d["executions"].([]any)
			require.Len(t, execs, 1, "the pruned execution's summary stays pruned: %v", execs)
			require.EqualValues(t, 1, d["executionCount"])
		}
	}
	info, err := p.ExecutionInfo(ctx, "pr", 1)
	if err == nil {
		require.Nil(t, info, "execution 1 was pruned")
	}
}

func ptrU32(v uint32) *uint32 { return &v }

// TestMaintenanceLoopLeavesARunningDeletionAlone: the maintenance loop
// finishes deletions a crash interrupted, and must not take one that is
// still running: the data would survive both sweeps, but DeleteInstance
// would report the documents the loop removed as not deleted (the
// validation suite's test_delete_terminal_instances saw EventsDeleted 0
// with the loop running beside it).
func TestMaintenanceLoopLeavesARunningDeletionAlone(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	p := e.actor(nil)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, hStart("cnt"), 0))
	it := mustFetchOrch(t, p, "cnt")
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{hStarted("cnt", "HOrch"), hEvent("cnt", 1, 2, duroxide.OrchestrationCompleted{Output: "ok"})},
		Metadata:     hStatus("HOrch", duroxide.StatusCompleted, "ok")}))

	gD := newGate(t)
	pD := e.actor(gD)
	stallD := gD.at(true, func(c testhooks.Call) bool { return c.Op == cdb.OpPatch }) // the tombstone is written
	type result struct {
		res *duroxide.DeleteInstanceResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := pD.DeleteInstance(ctx, "cnt", false)
		done <- result{res, err}
	}()
	stallD.wait(t)

	loop := e.openWith(testhooks.Seam{Now: e.clock.now}, cdb.Options{MaintenanceInterval: 5 * time.Millisecond, MaxClockSkew: cdb.DefaultMaxClockSkew})
	// Several rounds of the loop, each of which scans for tombstones.
	eventually(t, time.Minute, func() bool { return loop.RequestStats()[cdb.OpQuery].Requests >= 12 }, "the maintenance loop did not run")

	stallD.open()
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, uint64(2), r.res.EventsDeleted, "the deletion counts every event it removed")
	require.Empty(t, e.leftovers("cnt"))
}

// TestFetchDoesNotLockAMessageALiveTurnConsumed: B's discovery sees an
// instance's message; A then locks the instance with it and commits a
// large turn that consumes it. A large turn's commit releases the
// instance at once but deletes the consumed messages in its roll-forward,
// later. B's lock batch runs in that window, and the turn's roll-forward
// completes (A's maintenance) before B reads the journal. The chaos soak
// met this: B was handed the consumed message again, its ack then failed
// on the message's 404 and the runtime failed the instance. A message a
// live lock holds is not B's to take.
func TestFetchDoesNotLockAMessageALiveTurnConsumed(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	gA, gB := newGate(t), newGate(t)
	pA, pB := e.actor(gA), e.actor(gB)
	const inst = "consumed"
	require.NoError(t, pA.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: inst, Orchestration: "Big", Input: "{}", Version: str("1.0.0"), ExecutionID: 1}, 0))
	it, err := pA.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.NoError(t, pA.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{started(inst)}, Metadata: duroxide.ExecutionMetadata{OrchestrationName: str("Big"), OrchestrationVersion: str("1.0.0")}}))
	require.NoError(t, pA.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "go", Data: "1"}, 0))

	type fetched struct {
		item *duroxide.OrchestrationItem
		err  error
	}
	discovered := gB.at(true, func(c testhooks.Call) bool { return c.Op == cdb.OpQuery && c.PartitionKey == "" })
	journalB := gB.at(false, isJournalRead)
	fetchB := make(chan fetched, 1)
	go func() {
		item, err := pB.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
		fetchB <- fetched{item, err}
	}()
	discovered.wait(t)

	itA, err := pA.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, itA)
	require.Len(t, itA.Messages, 1)
	gA.setFail(func(c testhooks.Call) error {
		if isJournalRead(c) {
			return errInjected // A's roll-forward waits: the turn stays pending
		}
		return nil
	})
	require.NoError(t, pA.AckOrchestrationItem(ctx, itA.LockToken, bigTurn(inst)))
	gA.setFail(nil)

	discovered.open()
	var got fetched
	select {
	case got = <-fetchB:
	case <-journalB.reached:
		// B locked the instance and is about to roll the pending turn
		// forward; A's maintenance finishes it first.
		_, err := pA.RunMaintenance(ctx)
		require.NoError(t, err)
		journalB.open()
		got = <-fetchB
	}
	require.NoError(t, got.err)
	if got.item != nil {
		require.NotContains(t, got.item.Messages, duroxide.WorkItem(duroxide.ExternalRaisedItem{Instance: inst, Name: "go", Data: "1"}),
			"the message A's committed turn consumed is not handed out again")
	}
	_, err = pA.RunMaintenance(ctx)
	require.NoError(t, err)
	checkBigTurn(t, e.srv, pA, e.db, e.coll, inst)
}

// TestFetchDropsAMessageAStalledTurnConsumed: A commits a large turn that
// consumes a message, and its roll-forward stalls past A's lock and the
// skew margin, so the message's lock has lapsed. B takes the instance
// with that message (a lapsed lock is free), finds the turn pending and
// is about to roll it forward when A's maintenance finishes it: the
// journal that named the consumed message is gone when B reads it. B must
// still not hand the consumed message out again.
func TestFetchDropsAMessageAStalledTurnConsumed(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	gA, gB := newGate(t), newGate(t)
	pA, pB := e.actor(gA), e.actor(gB)
	const inst = "stalled"
	itA := prepare(t, pA, inst) // A holds the instance with the "go" event
	require.Len(t, itA.Messages, 1)
	gA.setFail(func(c testhooks.Call) error {
		if isJournalRead(c) {
			return errInjected // A's roll-forward stalls
		}
		return nil
	})
	require.NoError(t, pA.AckOrchestrationItem(ctx, itA.LockToken, bigTurn(inst)))
	gA.setFail(nil)
	e.clock.advance(5 * time.Minute) // the consumed message's lock lapsed

	journalB := gB.at(false, isJournalRead)
	type fetched struct {
		item *duroxide.OrchestrationItem
		err  error
	}
	fetchB := make(chan fetched, 1)
	go func() {
		item, err := pB.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
		fetchB <- fetched{item, err}
	}()
	journalB.wait(t)
	_, err := pA.RunMaintenance(ctx)
	require.NoError(t, err)
	journalB.open()
	got := <-fetchB
	require.NoError(t, got.err)
	if got.item != nil {
		require.NotContains(t, got.item.Messages, duroxide.WorkItem(duroxide.ExternalRaisedItem{Instance: inst, Name: "go", Data: "1"}),
			"the message A's committed turn consumed is not handed out again")
	}
	checkBigTurn(t, e.srv, pB, e.db, e.coll, inst)
}
