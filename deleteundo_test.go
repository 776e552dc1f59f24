package cdb_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
)

// completeHInstance starts instance and completes it in one turn.
func completeHInstance(t *testing.T, e *harness, instance string) {
	t.Helper()
	ctx := t.Context()
	p := e.actor(nil)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, hStart(instance), 0))
	it := mustFetchOrch(t, p, instance)
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{hStarted(instance, "HOrch"), hEvent(instance, 1, 2, duroxide.OrchestrationCompleted{Output: "ok"})},
		Metadata:     hStatus("HOrch", duroxide.StatusCompleted, "ok")}))
}

// TestDeleteInstancesAtomicUndoesAnAmbiguousTombstone (issue 19, 6): the
// server applies the second instance's tombstone but the connection drops
// before the answer. The deletion fails, and it must delete nothing: the
// tombstone the client never saw acknowledged is undone like the others,
// so the maintenance loop finds nothing to sweep and both instances stay.
func TestDeleteInstancesAtomicUndoesAnAmbiguousTombstone(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	completeHInstance(t, e, "undo-a")
	completeHInstance(t, e, "undo-b")

	e.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpPatchItem, Drop: cosmostest.DropAfterApply, Times: 1,
		Match: func(r *http.Request) bool {
			return strings.Contains(r.URL.Path, "undo-b") && strings.HasSuffix(r.URL.Path, "instance")
		}})
	p := e.actor(nil)
	_, err := p.DeleteInstancesAtomic(ctx, []string{"undo-a", "undo-b"}, false)
	require.Error(t, err, "the second tombstone's outcome is unknown to the caller")

	_, err = p.RunMaintenance(ctx)
	require.NoError(t, err)
	for _, inst := range []string{"undo-a", "undo-b"} {
		info, err := p.InstanceInfo(ctx, inst)
		require.NoError(t, err, "%s was deleted by a deletion that failed (all or none)", inst)
		require.Equal(t, duroxide.StatusCompleted, info.Status)
		for _, d := range e.docsWhere("", inst) {
			if d["type"] == "instance" {
				require.Nil(t, d["deleted"], "%s keeps a tombstone of a failed deletion", inst)
			}
		}
	}
	// The caller's retry then deletes both.
	res, err := p.DeleteInstancesAtomic(ctx, []string{"undo-a", "undo-b"}, false)
	require.NoError(t, err)
	require.EqualValues(t, 2, res.InstancesDeleted)
	require.Empty(t, e.leftovers("undo-a"))
	require.Empty(t, e.leftovers("undo-b"))
}
