package cdb_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
)

// TestRecreatedIDContinuesTheDeletedLivesExecutions (issue 29): a
// deletion leaves only a retired start record holding the last execution
// id, and each client start of the deleted id begins after it, across
// more than one deletion, so that nothing a deleted life left in flight
// can be taken for the new life's. Of two concurrent starts of a deleted
// id exactly one is accepted.
func TestRecreatedIDContinuesTheDeletedLivesExecutions(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{})
	ctx := t.Context()
	const inst = "recreated"
	p := e.p
	for life, want := range []uint64{1, 2, 3} {
		require.NoError(t, p.StartInstance(ctx, hStart(inst), ""), "life %d", life)
		it := mustFetchOrch(t, p, inst)
		require.Equal(t, want, it.ExecutionID, "life %d begins after the deleted lives' executions", life)
		started := hStarted(inst, "HOrch")
		started.ExecutionID = want
		require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: want,
			HistoryDelta: []duroxide.Event{started, hEvent(inst, want, 2, duroxide.OrchestrationCompleted{Output: "ok"})},
			Metadata:     hStatus("HOrch", duroxide.StatusCompleted, "ok")}))
		_, err := p.DeleteInstance(ctx, inst, false)
		require.NoError(t, err)

		docs := e.docsWhere("", inst)
		require.Len(t, docs, 1, "a deletion leaves one document")
		rec := docs[0]
		require.Equal(t, true, rec["retired"])
		require.EqualValues(t, want, rec["lastExecution"])
		for _, field := range []string{"orchestration", "version", "inputSha256", "key", "claimedAfter"} {
			require.NotContains(t, rec, field, "the retired record keeps nothing of the deleted start")
		}
		exists, err := p.InstanceExists(ctx, inst)
		require.NoError(t, err)
		require.False(t, exists, "a retired record is no instance")
	}

	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			s := hStart(inst)
			s.Input = []string{`"a"`, `"b"`}[i]
			errs[i] = p.StartInstance(ctx, s, "")
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else {
			require.ErrorIs(t, err, duroxide.ErrInstanceExists)
		}
	}
	require.Equal(t, 1, won, "exactly one start of the deleted id is accepted: %v", errs)
	it := mustFetchOrch(t, p, inst)
	require.Len(t, it.Messages, 1, "one start was enqueued")
	require.Equal(t, uint64(4), it.ExecutionID)
}
