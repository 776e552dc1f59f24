package cdb_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// Execution summaries (issue 19 item 8): an eternal orchestration — a
// monitor that continues as new every minute — must not grow its instance
// document with every execution, or after about 19,000 executions the
// document passes Cosmos DB's 2 MB and every ack is refused.

// runExecutions drives executions from..to of inst through the provider
// API: each is fetched, gets its OrchestrationStarted and, but for the
// last one, its OrchestrationContinuedAsNew and the ContinueAsNew item
// that starts the next. The clock moves a second per execution, so
// completion times are distinct.
func runExecutions(t *testing.T, p *cdb.Provider, clock *manualClock, inst string, from, to uint64) {
	t.Helper()
	ctx := t.Context()
	for exec := from; exec <= to; exec++ {
		item, err := p.FetchOrchestrationItem(ctx, hLock, 0, nil)
		require.NoError(t, err)
		require.NotNil(t, item, "execution %d", exec)
		started := hEvent(inst, exec, 1, duroxide.OrchestrationStarted{Name: "HOrch", Version: "1.0.0", Input: "{}"})
		commit := duroxide.OrchestrationCommit{ExecutionID: exec, HistoryDelta: []duroxide.Event{started}, Metadata: hRunning("HOrch")}
		commit.HistoryDelta = append(commit.HistoryDelta, hEvent(inst, exec, 2, duroxide.OrchestrationContinuedAsNew{Input: "{}"}))
		commit.Metadata.Status = hptr(duroxide.StatusContinuedAsNew)
		commit.Metadata.Output = hptr("{}")
		commit.OrchestratorItems = []duroxide.WorkItem{duroxide.ContinueAsNewItem{Instance: inst, Orchestration: "HOrch", Input: "{}", Version: hptr("1.0.0")}}
		require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), "execution %d", exec)
		clock.advance(time.Second)
	}
}

// instanceDocSize returns the stored instance document's size and its
// number of execution summaries.
func instanceDocSize(t *testing.T, h *harness, inst string) (int, int) {
	t.Helper()
	docs := h.docsWhere("instance", inst)
	require.Len(t, docs, 1)
	raw, err := json.Marshal(docs[0])
	require.NoError(t, err)
	execs, _ := docs[0]["executions"].([]any)
	return len(raw), len(execs)
}

// TestExecutionSummariesBounded runs many more executions than the
// instance document keeps summaries for: the document stops growing, and
// every admin read that uses the summaries stays exact.
func TestExecutionSummariesBounded(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	h := newHarness(t, cdb.Options{}, withSeam(testhooks.Seam{Now: clock.now}), withoutLag())
	ctx := t.Context()
	const inst = "eternal"
	n := uint64(4 * cdb.MaxExecSummaries)
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(inst), 0))

	// What every execution's summary says while it is recent.
	want := map[uint64]*duroxide.ExecutionInfo{}
	var sizeAtBound, perSummary int
	for exec := uint64(1); exec <= n; exec++ {
		runExecutions(t, h.p, clock, inst, exec, exec)
		info, err := h.p.ExecutionInfo(ctx, inst, exec)
		require.NoError(t, err)
		want[exec] = info
		size, kept := instanceDocSize(t, h, inst)
		require.LessOrEqual(t, kept, cdb.MaxExecSummaries, "after %d executions the instance document keeps %d summaries", exec, kept)
		if exec == 2*uint64(cdb.MaxExecSummaries) {
			sizeAtBound, perSummary = size, size/kept
		}
		if exec > 2*uint64(cdb.MaxExecSummaries) {
			// Only digits may grow (execution ids, counts, times), by less
			// than one summary's worth.
			require.Less(t, size, sizeAtBound+perSummary, "after %d executions the instance document is %d bytes, was %d", exec, size, sizeAtBound)
		}
	}
	// The document ends with the current execution (n+1, started by the
	// last ContinueAsNew item, not yet fetched) pending.

	for exec := uint64(1); exec <= n; exec++ {
		got, err := h.p.ExecutionInfo(ctx, inst, exec)
		require.NoError(t, err)
		require.Equal(t, want[exec], got, "execution %d", exec)
		require.Equal(t, duroxide.StatusContinuedAsNew, got.Status)
	}
	execs, err := h.p.ListExecutions(ctx, inst)
	require.NoError(t, err)
	require.Len(t, execs, int(n))
	m, err := h.p.SystemMetrics(ctx)
	require.NoError(t, err)
	require.Equal(t, n, m.TotalExecutions)
	require.Equal(t, 2*n, m.TotalEvents)

	// Pruning by completion time reaches summaries no longer in the
	// instance document.
	cut := n / 4
	res, err := h.p.PruneExecutions(ctx, inst, duroxide.PruneOptions{CompletedBefore: want[cut+1].CompletedAt})
	require.NoError(t, err)
	require.Equal(t, cut, res.ExecutionsDeleted)
	m, err = h.p.SystemMetrics(ctx)
	require.NoError(t, err)
	require.Equal(t, n-cut, m.TotalExecutions)
	require.Equal(t, 2*(n-cut), m.TotalEvents)
	_, err = h.p.ExecutionInfo(ctx, inst, cut)
	require.ErrorIs(t, err, duroxide.ErrInstanceNotFound)
	got, err := h.p.ExecutionInfo(ctx, inst, cut+1)
	require.NoError(t, err)
	require.Equal(t, want[cut+1], got)

	// Pruning to the last few leaves as many summaries as executions.
	res, err = h.p.PruneExecutions(ctx, inst, duroxide.PruneOptions{KeepLast: hptr(uint32(3))})
	require.NoError(t, err)
	require.Equal(t, n-cut-3, res.ExecutionsDeleted)
	m, err = h.p.SystemMetrics(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(3), m.TotalExecutions)
	require.Equal(t, uint64(6), m.TotalEvents)
	execs, err = h.p.ListExecutions(ctx, inst)
	require.NoError(t, err)
	require.Equal(t, []uint64{n - 2, n - 1, n}, execs)
	for _, d := range h.docs() {
		if d["instanceId"] == inst && d["type"] == "history" {
			require.GreaterOrEqual(t, uint64(d["executionId"].(float64)), n-2, "pruned history left: %v", d["id"])
		}
	}
	require.Empty(t, h.docsWhere("execution", inst), "summaries of pruned executions are removed")

	// The instance carries on.
	runExecutions(t, h.p, clock, inst, n+1, n+1)
	got, err = h.p.ExecutionInfo(ctx, inst, n+1)
	require.NoError(t, err)
	require.Equal(t, duroxide.StatusContinuedAsNew, got.Status)
}

// TestExecutionSummariesConcurrentPrunes: two processes prune the same
// executions at once, some summarised in the instance document, some in
// execution documents. Whatever the interleaving, each execution leaves
// the totals once.
func TestExecutionSummariesConcurrentPrunes(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	h := newHarness(t, cdb.Options{}, withSeam(testhooks.Seam{Now: clock.now}), withoutLag())
	other := h.openWith(testhooks.Seam{Now: clock.now}, cdb.Options{})
	ctx := t.Context()
	const inst = "pruned-twice"
	n := uint64(3 * cdb.MaxExecSummaries)
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(inst), 0))
	runExecutions(t, h.p, clock, inst, 1, n)

	errs := make(chan error, 2)
	for _, p := range []*cdb.Provider{h.p, other} {
		go func() {
			_, err := p.PruneExecutions(ctx, inst, duroxide.PruneOptions{KeepLast: hptr(uint32(3))})
			errs <- err
		}()
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	m, err := h.p.SystemMetrics(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(3), m.TotalExecutions)
	require.Equal(t, uint64(6), m.TotalEvents)
	require.Empty(t, h.docsWhere("execution", inst))
	_, kept := instanceDocSize(t, h, inst)
	require.Equal(t, 3, kept)
}
