package cdb_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// TestKeyedRetryNoOpUnderSkew: a keyed client write retried within an
// hour of its consumption is a no-op even when the process whose turn
// would remove the consumption marker runs ahead by up to MaxClockSkew.
func TestKeyedRetryNoOpUnderSkew(t *testing.T) {
	t.Parallel()
	const skew = 121 * time.Second
	h := newHarness(t, cdb.Options{MaxClockSkew: skew}, withoutLag())
	ctx := t.Context()
	const inst = "ms-1"
	createHInstance(t, h.p, inst)
	raise := duroxide.ExternalRaisedItem{Instance: inst, Name: "go", Data: `"ev"`}
	require.NoError(t, h.p.EnqueueForInstance(ctx, raise, "go/ev"))
	item := mustFetchOrch(t, h.p, inst)
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: hRunning("HOrch")}))
	require.Len(t, h.docsWhere("orch_received", inst), 1)

	// 59 minutes later, a process whose clock runs 60 s ahead runs a turn.
	ahead := h.openWith(testhooks.Seam{Now: skewedClock(59*time.Minute + time.Minute)}, cdb.Options{MaxClockSkew: skew})
	require.NoError(t, ahead.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "other", Data: `"1"`}, 0))
	item = mustFetchOrch(t, ahead, inst)
	require.NoError(t, ahead.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: hRunning("HOrch")}))

	// The caller retries within the hour (its clock is right).
	caller := h.openWith(testhooks.Seam{Now: skewedClock(59*time.Minute + 10*time.Second)}, cdb.Options{MaxClockSkew: skew})
	require.NoError(t, caller.EnqueueForInstance(ctx, raise, "go/ev"))
	require.Empty(t, h.docsWhere("orch_queue", inst), "the retry enqueued the raise again")
}
