package cdb_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// TestStartOfATombstonedInstanceIsNotLost (issue 29, 8): a deletion
// tombstones an instance, then its sweep meets a transient fault and the
// call fails. A client start of the same id (the very start that created
// the instance, which used to be taken for a retry) must not be accepted
// and then swept away by the maintenance loop: while another process may
// still be sweeping it is refused with the retryable ErrInstanceDeleting,
// and once the deleter's time has lapsed the start finishes the deletion
// itself and is accepted. What it accepted is fetched, after maintenance.
func TestStartOfATombstonedInstanceIsNotLost(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	const inst = "tomb-start"
	p := e.actor(nil)
	require.NoError(t, p.StartInstance(ctx, hStart(inst), ""))
	it := mustFetchOrch(t, p, inst)
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch"), hEvent(inst, 1, 2, duroxide.OrchestrationCompleted{Output: "ok"})},
		Metadata:     hStatus("HOrch", duroxide.StatusCompleted, "ok")}))

	sweepFails := e.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpBatch, Status: http.StatusServiceUnavailable,
		Match: pkMatch(inst)})
	_, err := p.DeleteInstance(ctx, inst, false)
	require.Error(t, err, "the sweep failed")
	sweepFails()
	tombstoned := false
	for _, d := range e.docsWhere("instance", inst) {
		tombstoned = tombstoned || d["deleted"] != nil
	}
	require.True(t, tombstoned, "the deletion left its tombstone")

	err = p.StartInstance(ctx, hStart(inst), "")
	require.ErrorIs(t, err, duroxide.ErrInstanceDeleting, "a deletion may still be sweeping the instance")
	require.ErrorIs(t, err, durable.ErrInstanceDeleting)
	require.True(t, duroxide.IsRetryable(err), "the start can be retried: %v", err)
	requireNoOrch(t, p, "a refused start enqueued nothing")

	e.clock.advance(cdb.DefaultOutboxMinAge + cdb.DefaultMaxClockSkew)
	require.NoError(t, p.StartInstance(ctx, hStart(inst), ""), "the deleter's time has lapsed: the start finishes the deletion")
	_, err = p.RunMaintenance(ctx)
	require.NoError(t, err)
	exists, err := p.InstanceExists(ctx, inst)
	require.NoError(t, err)
	require.True(t, exists, "the accepted start outlives maintenance")
	it = mustFetchOrch(t, p, inst)
	require.Empty(t, it.History, "a new instance, not the deleted one")
	require.Len(t, it.Messages, 1)
	require.IsType(t, duroxide.StartOrchestrationItem{}, it.Messages[0])
	require.NoError(t, p.StartInstance(ctx, hStart(inst), ""), "a retry of the accepted start")
}
