package cdb_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// Containers with several physical partitions: the gateway serves a
// cross-partition query one partition key range per page, empty pages
// included, so discovery and the reconciler must page until the
// continuation ends (spreading the pages over calls) to see every range.

// crossQueries counts cross-partition query pages.
type crossQueries struct{ n atomic.Int64 }

func (c *crossQueries) hooks() *testhooks.Hooks {
	return &testhooks.Hooks{Before: func(_ context.Context, call testhooks.Call) error {
		if call.Op == cdb.OpQuery && call.PartitionKey == "" {
			c.n.Add(1)
		}
		return nil
	}}
}

// TestMultiRangeDiscoveryFindsEveryInstance: with 8 physical partitions
// every instance's work is fetched, one fetch after another, wherever its
// partition lies.
func TestMultiRangeDiscoveryFindsEveryInstance(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{}, withoutLag(), withRanges(8))
	ctx := t.Context()
	want := map[string]bool{}
	for i := range 24 {
		inst := fmt.Sprintf("mr-%02d", i)
		want[inst] = true
		require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(inst), 0))
	}
	got := map[string]bool{}
	for range want {
		item, err := h.p.FetchOrchestrationItem(ctx, hLock, 0, nil)
		require.NoError(t, err)
		require.NotNil(t, item, "work is ready for %d more instances, but the fetch found none (fetched %d)", len(want)-len(got), len(got))
		got[item.Instance] = true
		require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
			ExecutionID: 1, HistoryDelta: []duroxide.Event{hStarted(item.Instance, "HOrch")}, Metadata: hStatus("HOrch", duroxide.StatusCompleted, "done"),
		}))
	}
	require.Equal(t, want, got)
	requireNoOrch(t, h.p)
}

// TestMultiRangeDiscoveryBoundedPerCall: with more partitions than
// ScanPages, one fetch reads at most ScanPages pages and the next resumes
// where it stopped, so work in any partition is found within a few calls.
func TestMultiRangeDiscoveryBoundedPerCall(t *testing.T) {
	t.Parallel()
	const ranges, pages = 8, 3
	var q crossQueries
	h := newHarness(t, cdb.Options{ScanPages: pages}, withSeam(testhooks.Seam{Cosmos: q.hooks()}), withoutLag(), withRanges(ranges))
	ctx := t.Context()
	for i := range 6 {
		inst := fmt.Sprintf("bp-%d", i)
		require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(inst), 0))
		calls := 0
		for {
			calls++
			before := q.n.Load()
			item, err := h.p.FetchOrchestrationItem(ctx, hLock, 0, nil)
			require.NoError(t, err)
			require.LessOrEqual(t, q.n.Load()-before, int64(pages), "cross-partition pages read by one fetch")
			if item != nil {
				require.Equal(t, inst, item.Instance)
				require.NoError(t, h.p.AbandonOrchestrationItem(ctx, item.LockToken, time.Hour, false))
				break
			}
			// A scan resumed from an earlier call runs with the parameters
			// it started with (its continuation is only valid for them), so
			// work that became visible since is found by the next scan: at
			// most the rest of one scan plus one whole scan.
			require.Less(t, calls, 2*((ranges+pages-1)/pages)+1, "instance %s not found after %d fetches", inst, calls)
		}
	}
}

// TestMultiRangeOutboxReachesEveryPartition: intents waiting in 16
// physical partitions are all delivered by one RunMaintenance, and by the
// background reconciler, whose rounds read a bounded number of pages and
// resume where the last round stopped.
func TestMultiRangeOutboxReachesEveryPartition(t *testing.T) {
	t.Parallel()
	// The acking provider reads every partition in one fetch.
	h := newHarness(t, cdb.Options{ScanPages: 16}, withoutLag(), withRanges(16))
	ctx := t.Context()
	const n = 20
	h.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Status: http.StatusServiceUnavailable,
		Match: func(r *http.Request) bool {
			return strings.Contains(r.Header.Get("x-ms-documentdb-partitionkey"), "mo-child")
		}})
	for i := range n {
		item, commit := startParentWithChild(t, h.p, fmt.Sprintf("mo-parent-%02d", i), fmt.Sprintf("mo-child-%02d", i))
		require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, commit))
	}
	h.srv.ClearFaults()
	require.Len(t, h.docsWhere("outbox_intent", ""), n, "every delivery failed, every intent waits")

	rec := h.openWith(testhooks.Seam{Now: skewedClock(time.Minute)}, cdb.Options{})
	got, err := rec.RunMaintenance(ctx)
	require.NoError(t, err)
	require.Equal(t, n, got, "RunMaintenance delivers every pending intent")
	require.Empty(t, h.docsWhere("outbox_intent", ""))
	for i := range n {
		require.Len(t, h.docsWhere("orch_queue", fmt.Sprintf("mo-child-%02d", i)), 1)
	}
}

// TestMultiRangeBackgroundReconciler: the background reconciler's rounds
// are bounded (ScanPages) and resume where the last one stopped, so with
// more partitions than ScanPages every intent is still delivered.
func TestMultiRangeBackgroundReconciler(t *testing.T) {
	h := newHarness(t, cdb.Options{ScanPages: 16}, withoutLag(), withRanges(16))
	ctx := t.Context()
	const n = 12
	h.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Status: http.StatusServiceUnavailable,
		Match: func(r *http.Request) bool {
			return strings.Contains(r.Header.Get("x-ms-documentdb-partitionkey"), "bg-child")
		}})
	for i := range n {
		item, commit := startParentWithChild(t, h.p, fmt.Sprintf("bg-parent-%02d", i), fmt.Sprintf("bg-child-%02d", i))
		require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, commit))
	}
	h.srv.ClearFaults()
	h.openWith(testhooks.Seam{Now: skewedClock(time.Minute)}, cdb.Options{MaintenanceInterval: 20 * time.Millisecond, ScanPages: 4})
	eventually(t, time.Minute, func() bool { return len(h.docsWhere("outbox_intent", "")) == 0 }, "the background reconciler delivers every intent")
	for i := range n {
		require.Len(t, h.docsWhere("orch_queue", fmt.Sprintf("bg-child-%02d", i)), 1)
	}
}

// TestReconcilerRoundContinuesAfterError: an interrupted deletion that
// keeps failing does not keep the reconciler from finishing the others.
func TestReconcilerRoundContinuesAfterError(t *testing.T) {
	t.Parallel()
	var blocked sync.Map // partitions whose batches fail
	hooks := &testhooks.Hooks{Before: func(_ context.Context, c testhooks.Call) error {
		if _, ok := blocked.Load(c.PartitionKey); ok && c.Op == cdb.OpBatch {
			return errInjected
		}
		return nil
	}}
	h := newHarness(t, cdb.Options{}, withSeam(testhooks.Seam{Cosmos: hooks}))
	ctx := t.Context()
	insts := []string{"re-a", "re-b", "re-c"}
	for _, inst := range insts {
		require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(inst), 0))
		item := mustFetchOrch(t, h.p, inst)
		require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
			ExecutionID: 1, HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch")}, Metadata: hStatus("HOrch", duroxide.StatusCompleted, "done"),
		}))
	}
	// Every sweep fails: three tombstoned instances with documents left.
	for _, inst := range insts {
		blocked.Store(inst, true)
		_, err := h.p.DeleteInstance(ctx, inst, false)
		require.Error(t, err)
	}
	blocked.Delete("re-b")
	blocked.Delete("re-c")
	_, err := h.p.RunMaintenance(ctx)
	require.Error(t, err, "re-a still fails")
	require.Contains(t, err.Error(), "re-a")
	require.Empty(t, withoutRetired(h.docsWhere("", "re-b")), "re-b's deletion finished although re-a's failed first")
	require.Empty(t, withoutRetired(h.docsWhere("", "re-c")))
	require.NotEmpty(t, h.docsWhere("", "re-a"))
}
