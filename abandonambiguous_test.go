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

// A renewal of an orchestration lock that the service applied but whose
// answer was lost (a 503 after the write, a reset) moves the instance
// document's ETag without the holder learning it. The holder then gives
// the item back: the abandon's patch of the instance meets 412, yet the
// instance is still locked with the holder's token. The abandon must read
// the instance again and release it, not report the lock lost and leave
// the instance and its messages locked, an attempt counted for nothing,
// until the lock and the clock-skew margin pass. A block takes the same
// path and must record its reason.
func TestAbandonOrchestrationItemAfterRenewalAppliedButAnswerLost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault cosmostest.Fault
		block bool
	}{
		{"applied_then_503", cosmostest.Fault{Op: cosmostest.OpBatch, Status: http.StatusServiceUnavailable, ApplyFirst: true, Times: 1}, false},
		{"reset_after_apply", cosmostest.Fault{Op: cosmostest.OpBatch, Drop: cosmostest.DropAfterApply, Times: 1}, false},
		{"block_applied_then_503", cosmostest.Fault{Op: cosmostest.OpBatch, Status: http.StatusServiceUnavailable, ApplyFirst: true, Times: 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, cdb.Options{}, withoutLag())
			ctx := t.Context()
			inst := "abandon-orch-after-ambiguous-renewal-" + tc.name
			// A running instance (a blocked reason is only reported for one)
			// with an event to deliver.
			require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(inst), 0))
			item := mustFetchOrch(t, h.p, inst)
			require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
				ExecutionID: 1, HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch")}, Metadata: hRunning("HOrch")}))
			require.NoError(t, h.p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "go", Data: "1"}, 0))
			item = mustFetchOrch(t, h.p, inst)
			require.Len(t, item.Messages, 1)

			h.srv.InjectFault(tc.fault)
			requireTransient(t, h.p.RenewOrchestrationItemLock(ctx, item.LockToken, hLock), "renewal applied, its answer lost")

			if tc.block {
				require.NoError(t, h.p.BlockOrchestrationItem(ctx, item.LockToken, 0, "held"), "the lock is still ours: the block releases it")
				reason, err := h.p.BlockedReason(ctx, inst)
				require.NoError(t, err)
				require.Equal(t, "held", reason, "the retried block records its reason")
			} else {
				require.NoError(t, h.p.AbandonOrchestrationItem(ctx, item.LockToken, 0, true), "the lock is still ours: the abandon releases it")
			}
			again := mustFetchOrch(t, h.p, inst)
			require.Equal(t, uint32(1), again.AttemptCount, "the abandon gave the attempt back")
			require.Equal(t, item.Messages, again.Messages, "the same messages come back")
		})
	}
}

// The same lost renewal answer (a reset after apply, which carries no
// session token) on lagging replicas: the re-read after the 412 decides
// whether the lock is still ours, and a replica that has not seen the
// applied renewal would show the ETag before it, on which the retried
// write fails again — a live lock reported lost. Both the next renewal
// and an abandon must go through. Each round draws its replicas anew.
func TestOrchestrationLockAfterRenewalAnswerLostOnLaggingReplicas(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	resetAfterApply := cosmostest.Fault{Op: cosmostest.OpBatch, Drop: cosmostest.DropAfterApply, Times: 1}
	for round := range 6 {
		inst := fmt.Sprintf("lagging-renewal-answer-lost-%d", round)
		require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(inst), 0))
		item := mustFetchOrch(t, h.p, inst)

		h.srv.InjectFault(resetAfterApply)
		requireTransient(t, h.p.RenewOrchestrationItemLock(ctx, item.LockToken, hLock), "renewal applied, its answer lost")
		require.NoError(t, h.p.RenewOrchestrationItemLock(ctx, item.LockToken, hLock), "round %d: the lock is still ours: the next renewal extends it", round)

		h.srv.InjectFault(resetAfterApply)
		requireTransient(t, h.p.RenewOrchestrationItemLock(ctx, item.LockToken, hLock), "renewal applied, its answer lost")
		require.NoError(t, h.p.AbandonOrchestrationItem(ctx, item.LockToken, 0, true), "round %d: the lock is still ours: the abandon releases it", round)
		again := mustFetchOrch(t, h.p, inst)
		require.Equal(t, uint32(1), again.AttemptCount, "round %d: the abandon gave the attempt back", round)
		require.NoError(t, h.p.AckOrchestrationItem(ctx, again.LockToken, duroxide.OrchestrationCommit{
			ExecutionID: 1, HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch")}, Metadata: hRunning("HOrch")}))
	}
}

// The re-read after the abandon's 412 gives the lock back only when it is
// still ours: here the holder's renewal was applied but its answer lost,
// its lock then expired and another process took the instance. The stale
// holder's abandon reports the lock lost and leaves the new holder's lock
// alone, whose turn then commits.
func TestAbandonOrchestrationItemAfterLostRenewalAnswerAndTakeover(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	pA, pB := e.actor(nil), e.actor(nil)
	const inst = "abandon-after-takeover"
	require.NoError(t, pA.EnqueueForOrchestrator(ctx, hStart(inst), 0))
	itA := mustFetchOrch(t, pA, inst)

	e.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpBatch, Status: http.StatusServiceUnavailable, ApplyFirst: true, Times: 1})
	requireTransient(t, pA.RenewOrchestrationItemLock(ctx, itA.LockToken, hLock), "renewal applied, its answer lost")
	e.clock.advance(hLock + cdb.DefaultMaxClockSkew + time.Second) // A's renewed lock and its margin lapsed
	itB := mustFetchOrch(t, pB, inst)
	require.Equal(t, uint32(2), itB.AttemptCount)

	require.ErrorIs(t, pA.AbandonOrchestrationItem(ctx, itA.LockToken, 0, true), duroxide.ErrLockLost, "B holds the instance now")
	require.NoError(t, pB.AckOrchestrationItem(ctx, itB.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1, HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch")}, Metadata: hRunning("HOrch")}), "B's lock is intact")
}
