package cdb_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
)

// A turn that hands off its activities costs what a plain turn costs (its
// one commit batch), and each handed activity costs one request, its ack:
// no query and no lock patch.
func TestAHandedOffActivityCostsOnlyItsAck(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{}, withoutLag())
	ctx := t.Context()
	const inst = "handoff-cost"
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(inst), 0))
	item := mustFetchOrch(t, h.p, inst)
	var workers []duroxide.WorkItem
	for id := uint64(2); id <= 6; id++ {
		workers = append(workers, duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: id, Name: "A", Input: "x"})
	}
	before := h.p.RequestStats()
	locked, err := h.p.AckOrchestrationItemAndLock(ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch")}, Metadata: hRunning("HOrch"), WorkerItems: workers},
		duroxide.LocalWork{Max: 5, LockTimeout: hLock})
	require.NoError(t, err)
	require.Len(t, locked, 5)
	turn := providerCost(before, h.p.RequestStats())
	require.Equal(t, int64(1), turn.Requests, "the turn's one batch (%s)", turn.ops())
	before = h.p.RequestStats()
	for _, l := range locked {
		a := l.Item.(duroxide.ActivityExecuteItem)
		require.NoError(t, h.p.AckWorkItem(ctx, l.LockToken, duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: a.ID, Result: "r"}))
	}
	acks := providerCost(before, h.p.RequestStats())
	require.Equal(t, int64(5), acks.Requests, "one batch per activity (%s)", acks.ops())
	require.Equal(t, int64(5), acks.ByOp[cdb.OpBatch])
	require.Len(t, mustFetchOrch(t, h.p, inst).Messages, 5, "five completions delivered")
}

// A turn's batch that handed activities off (duroxide.WorkHandOff) and
// was applied while its answer was lost: the retried ack learns from the
// instance that the turn committed, and must still return the handed
// activities under the tokens the batch wrote, or they stay locked to
// tokens nobody holds until their lock lapses. Their ETags are unknown,
// so their first use reads them.
func TestHandedOffActivitiesSurviveALostAckAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault cosmostest.Fault
	}{
		{"applied_then_503", cosmostest.Fault{Op: cosmostest.OpBatch, Status: http.StatusServiceUnavailable, ApplyFirst: true, Times: 1}},
		{"reset_after_apply", cosmostest.Fault{Op: cosmostest.OpBatch, Drop: cosmostest.DropAfterApply, Times: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, cdb.Options{}, withoutLag())
			ctx := t.Context()
			inst := "handoff-lost-answer-" + tc.name
			require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(inst), 0))
			item := mustFetchOrch(t, h.p, inst)
			commit := duroxide.OrchestrationCommit{ExecutionID: 1, HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch")},
				Metadata: hRunning("HOrch"), WorkerItems: []duroxide.WorkItem{
					duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: "A", Input: "a"},
					duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 3, Name: "A", Input: "b"},
				}}
			want := duroxide.LocalWork{Max: 2, LockTimeout: hLock}

			h.srv.InjectFault(tc.fault)
			_, err := h.p.AckOrchestrationItemAndLock(ctx, item.LockToken, commit, want)
			requireTransient(t, err, "the turn applied, its answer lost")
			locked, err := h.p.AckOrchestrationItemAndLock(ctx, item.LockToken, commit, want)
			require.NoError(t, err, "the retried ack finds the turn committed")
			require.Len(t, locked, 2, "and still hands its activities off")

			w, err := h.p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.DefaultOnly())
			require.NoError(t, err)
			require.Nil(t, w, "both are locked")
			require.NoError(t, h.p.RenewWorkItemLock(ctx, locked[0].LockToken, hLock), "a handed token renews")
			for i, l := range locked {
				a := l.Item.(duroxide.ActivityExecuteItem)
				require.NoError(t, h.p.AckWorkItem(ctx, l.LockToken, duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: a.ID, Result: "r"}),
					"handed item %d acks", i)
			}
			next := mustFetchOrch(t, h.p, inst)
			require.Len(t, next.Messages, 2, "both completions were enqueued")
		})
	}
}
