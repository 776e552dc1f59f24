package cdb_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// TestALateSweepSparesTheNextLife: two sweeps of one tombstone (a
// maintenance loop finishing an interrupted deletion, and a start that
// finishes it itself) must not let the slower one remove what the id's
// next life wrote in between. The maintenance sweep is held at its
// partition query, before it (the new life's history is then in what it
// reads) or after it (its last batch then meets the new life's instance
// document and start record). Seen failing in CI as the validation
// suite's test_delete_cleans_queues_and_locks on the persistent backend:
// the recreated instance was "not found" after its first ack.
func TestALateSweepSparesTheNextLife(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after bool
	}{{"held_before_its_query", false}, {"held_after_its_query", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
			ctx := t.Context()
			const inst = "late-sweep"
			p, g := e.actor(nil), newGate(t)
			m := e.actor(g)
			leaveTombstone(t, e, p, inst)
			e.clock.advance(cdb.DefaultOutboxMinAge + cdb.DefaultMaxClockSkew)

			held := g.at(tc.after, func(c testhooks.Call) bool { return c.Op == cdb.OpQuery && c.PartitionKey == inst })
			swept := async(func() error { _, err := m.RunMaintenance(ctx); return err })
			held.wait(t)
			require.NoError(t, p.StartInstance(ctx, hStart(inst), ""), "the start finishes the deletion itself")
			it := mustFetchOrch(t, p, inst)
			require.Empty(t, it.History, "a new life")
			require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: it.ExecutionID,
				HistoryDelta: []duroxide.Event{hEvent(inst, it.ExecutionID, 1, duroxide.OrchestrationStarted{Name: "HOrch", Version: "1.0.0", Input: "again"})},
				Metadata:     hRunning("HOrch")}))
			held.open()
			require.NoError(t, recv(t, swept))

			info, err := p.InstanceInfo(ctx, inst)
			require.NoError(t, err, "the next life outlives the late sweep")
			require.Equal(t, duroxide.StatusRunning, info.Status)
			h, err := p.ReadHistory(ctx, inst)
			require.NoError(t, err)
			require.Len(t, h, 1, "the next life's history is whole")
			require.NoError(t, p.StartInstance(ctx, hStart(inst), ""), "a retry of the accepted start is a duplicate")
			requireNoOrch(t, p, "and enqueues nothing: the start record was not retired under it")
		})
	}
}

// leaveTombstone completes inst and deletes it with its sweep failing, so
// its tombstone is left for someone else to finish.
func leaveTombstone(t *testing.T, e *harness, p *cdb.Provider, inst string) {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, p.StartInstance(ctx, hStart(inst), ""))
	it := mustFetchOrch(t, p, inst)
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch"), hEvent(inst, 1, 2, duroxide.OrchestrationCompleted{Output: "ok"})},
		Metadata:     hStatus("HOrch", duroxide.StatusCompleted, "ok")}))
	sweepFails := e.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpBatch, Status: http.StatusServiceUnavailable, Match: pkMatch(inst)})
	_, err := p.DeleteInstance(ctx, inst, false)
	require.Error(t, err, "the sweep failed")
	sweepFails()
}
