package cdb_test

// Kept orchestration candidates (candidates.go): an orchestration fetch
// first tries the instances the last discovery found but did not lock,
// so a backlog of ready instances costs one query, not one per fetch. A
// kept instance whose messages another process consumed since misses
// and the fetch queries instead.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
)

// startInstances enqueues a start for each of instances, in order.
func startInstances(t *testing.T, p *cdb.Provider, instances ...string) {
	t.Helper()
	for _, inst := range instances {
		require.NoError(t, p.EnqueueForOrchestrator(t.Context(), duroxide.StartOrchestrationItem{Instance: inst, Orchestration: costOrchName,
			Input: "{}", Version: ptrTo(costOrchVer), ExecutionID: 1}, 0))
	}
}

// fetchOrchCounted fetches an orchestration item with p and returns its
// instance ("" for none) and the queries the fetch sent.
func fetchOrchCounted(t *testing.T, p *cdb.Provider) (inst string, queries int64) {
	t.Helper()
	before := p.RequestStats()
	item, err := p.FetchOrchestrationItem(t.Context(), costLock, 0, nil)
	require.NoError(t, err)
	if item != nil {
		inst = item.Instance
	}
	return inst, providerCost(before, p.RequestStats()).ByOp[cdb.OpQuery]
}

// TestOrchestrationCandidatesSteadyFetchRequests: four ready instances
// are one query and four locks, oldest first; disabled, every fetch
// queries (the defect this guards against).
func TestOrchestrationCandidatesSteadyFetchRequests(t *testing.T) {
	insts := []string{"oc-a", "oc-b", "oc-c", "oc-d"}
	for _, tc := range []struct {
		name    string
		ttl     time.Duration
		queries int64
	}{{"kept", keptTTL, 1}, {"disabled", -1, int64(len(insts))}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newHarness(t, cdb.Options{OrchestrationCandidateTTL: tc.ttl}, withoutLag())
			startInstances(t, e.p, insts...)
			var queries int64
			for i, want := range insts {
				got, q := fetchOrchCounted(t, e.p)
				require.Equalf(t, want, got, "fetch %d: oldest ready instance first", i+1)
				queries += q
			}
			require.Equal(t, tc.queries, queries, "queries for %d fetches", len(insts))
			got, q := fetchOrchCounted(t, e.p)
			require.Empty(t, got, "every instance is locked")
			require.Equal(t, int64(1), q, "an empty kept page means a query")
		})
	}
}

// TestOrchestrationCandidatesTakenByOtherProcess: an instance e.p kept
// that another process then took a turn of misses; the fetch queries and
// returns the next ready instance, and the consumed start is not handed
// out twice.
func TestOrchestrationCandidatesTakenByOtherProcess(t *testing.T) {
	e := newHarness(t, cdb.Options{OrchestrationCandidateTTL: keptTTL}, withoutLag())
	other := secondProvider(t, e, cdb.Options{OrchestrationCandidateTTL: -1})
	startInstances(t, e.p, "oc-a", "oc-b", "oc-c")
	got, _ := fetchOrchCounted(t, e.p)
	require.Equal(t, "oc-a", got)
	item, err := other.FetchOrchestrationItem(t.Context(), costLock, 0, nil)
	require.NoError(t, err)
	require.Equal(t, "oc-b", item.Instance, "the other process takes the instance e.p kept")
	require.NoError(t, other.AckOrchestrationItem(t.Context(), item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{ev("oc-b", 1, 1, duroxide.OrchestrationStarted{Name: costOrchName, Version: costOrchVer, Input: "{}"})},
		Metadata:     runningMeta()}))
	got, q := fetchOrchCounted(t, e.p)
	require.Equal(t, "oc-c", got, "the kept oc-b misses (its start was consumed)")
	require.Equal(t, int64(1), q, "after a miss the fetch queries")
	got, _ = fetchOrchCounted(t, e.p)
	require.Empty(t, got)
}
