package cdb_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
)

// The baseline a failed execution leaves (kvbaseline.go) is in the
// instance's documents: a process that did not see the failure hands it
// to the rewind, a third process acks the rewind (its lock rebuilt from
// the store), and the rewind's commit removes the kv_undo documents in
// its batch.
func TestKVBaselineOutlivesTheProcess(t *testing.T) {
	h := newHarness(t, cdb.Options{}, withoutLag()) // the third process reads the lock the second took
	ctx := t.Context()
	const inst = "kv-baseline-process"
	createHInstance(t, h.p, inst)
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "go", Data: ""}, 0))
	item := mustFetchOrch(t, h.p, inst)
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{
			hEvent(inst, 1, 2, duroxide.KeyValueSet{Key: "once", Value: "v", LastUpdatedAtMs: 1}),
			hEvent(inst, 1, 3, duroxide.OrchestrationFailed{Details: duroxide.ApplicationError{
				Kind: duroxide.AppErrorKind{Type: duroxide.AppOrchestrationFailed}, Message: "boom"}}),
		},
		Metadata: hStatus("HOrch", duroxide.StatusFailed, "boom")}))
	require.Len(t, h.docsWhere("kv_undo", inst), 1, "the Failed ack keeps the baseline of the key it changed")

	other, third := h.open(cdb.Options{}), h.open(cdb.Options{})
	require.NoError(t, other.EnqueueForOrchestrator(ctx, duroxide.RewindInstanceItem{Instance: inst, ExecutionID: 1}, 0))
	item = mustFetchOrch(t, other, inst)
	require.Equal(t, map[string]duroxide.KVEntry{"once": {Value: "v", LastUpdatedAtMs: 1}}, item.KVSnapshot)
	require.Equal(t, map[string]duroxide.KVEntry{}, item.KVBaseline, "execution 1 started with no KV")
	started := hEvent(inst, 2, 1, duroxide.OrchestrationStarted{Name: "HOrch", Version: "1.0.0", Input: `{"in":1}`})
	require.NoError(t, third.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 2, RestoreKV: true,
		HistoryDelta: []duroxide.Event{started}, Metadata: hRunning("HOrch")}))
	_, found, err := third.KVValue(ctx, inst, "once")
	require.NoError(t, err)
	require.False(t, found, "the rewind put the KV back to execution 1's start")
	require.Empty(t, h.docsWhere("kv_undo", inst), "the rewind's commit removed the baseline")
}
