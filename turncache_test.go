package cdb_test

// The turn cache (turncache.go): a steady turn costs 3 requests (discovery,
// lock batch, commit batch) because the fetch takes the history and KV
// state from the process's last commit instead of querying, and whatever
// it hands the runtime is exactly what the query would have loaded.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// storedTurnState is what the load query would hand the next turn of
// inst, computed straight from the container (not through the provider):
// the current execution's committed history and the kv documents.
func storedTurnState(t *testing.T, e *harness, inst string) ([]duroxide.Event, map[string]duroxide.KVEntry) {
	t.Helper()
	pager := e.sdk.NewQueryItemsPager("SELECT * FROM c", azcosmos.NewPartitionKeyString(inst), nil)
	var exec uint64
	type hist struct {
		exec, id uint64
		data     string
	}
	var all []hist
	kv := map[string]duroxide.KVEntry{}
	for pager.More() {
		page, err := pager.NextPage(e.ctx)
		require.NoError(t, err)
		for _, raw := range page.Items {
			var d struct {
				Type            string  `json:"type"`
				CurrentExec     uint64  `json:"currentExecutionId"`
				ExecutionID     uint64  `json:"executionId"`
				EventID         uint64  `json:"eventId"`
				EventData       string  `json:"eventData"`
				Staged          *string `json:"staged"`
				Key             string  `json:"key"`
				Value           string  `json:"value"`
				LastUpdatedAtMs uint64  `json:"lastUpdatedAtMs"`
			}
			require.NoError(t, json.Unmarshal(raw, &d))
			switch {
			case d.Staged != nil:
			case d.Type == "instance":
				exec = d.CurrentExec
			case d.Type == "history":
				all = append(all, hist{d.ExecutionID, d.EventID, d.EventData})
			case d.Type == "kv":
				kv[d.Key] = duroxide.KVEntry{Value: d.Value, LastUpdatedAtMs: d.LastUpdatedAtMs}
			}
		}
	}
	byID := map[uint64]duroxide.Event{}
	var maxID uint64
	for _, h := range all {
		if h.exec != exec {
			continue
		}
		ev, err := duroxide.UnmarshalEvent([]byte(h.data))
		require.NoError(t, err)
		byID[h.id] = ev
		maxID = max(maxID, h.id)
	}
	events := []duroxide.Event{}
	for id := uint64(0); id <= maxID; id++ {
		if ev, ok := byID[id]; ok {
			events = append(events, ev)
		}
	}
	return events, kv
}

// secondProvider opens another provider (another "process") on e's
// container.
func secondProvider(t *testing.T, e *harness, opts cdb.Options) *cdb.Provider {
	t.Helper()
	opts.MaintenanceInterval = -1
	p, err := cdb.New(context.Background(), cdb.Config{Endpoint: e.srv.Endpoint(), Key: e.srv.Key(), Database: e.db, Container: e.coll,
		ClientOptions: &azcosmos.ClientOptions{ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}}}, &opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// cacheTurn is one scripted turn: the events it commits (ids assigned in
// order) and its metadata.
type cacheTurn struct {
	name   string
	exec   uint64
	kinds  []duroxide.EventKind
	status *string
	kv     map[string]string // the merged KV values after the turn
}

// fetchChecked enqueues an external event for inst, fetches it with p
// measuring the fetch, and checks the item against the stored state.
func fetchChecked(t *testing.T, e *harness, p *cdb.Provider, inst string) (*duroxide.OrchestrationItem, cost) {
	t.Helper()
	require.NoError(t, p.EnqueueForOrchestrator(e.ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: pokeName, Data: pokeData}, 0))
	before := p.RequestStats()
	item, err := p.FetchOrchestrationItem(e.ctx, costLock, 0, nil)
	require.NoError(t, err)
	c := providerCost(before, p.RequestStats())
	require.NotNil(t, item)
	require.Equal(t, inst, item.Instance)
	require.Nil(t, item.HistoryError)
	wantHist, wantKV := storedTurnState(t, e, inst)
	require.Equal(t, wantHist, item.History, "history handed to the turn")
	require.Equal(t, wantKV, item.KVSnapshot, "KV snapshot handed to the turn")
	return item, c
}

// providerCost is the requests one provider sent between two snapshots
// of its stats (measure counts only e.p).
func providerCost(before, after cdb.RequestStats) cost {
	c := cost{ByOp: map[cdb.Op]int64{}}
	for op, st := range after {
		if d := st.Requests - before[op].Requests; d != 0 {
			c.ByOp[op] = d
			c.Requests += d
		}
	}
	return c
}

func commitOf(inst string, turn cacheTurn, next *uint64) duroxide.OrchestrationCommit {
	md := runningMeta()
	md.Status = turn.status
	c := duroxide.OrchestrationCommit{ExecutionID: turn.exec, Metadata: md}
	if turn.status == nil {
		c.Metadata.Status = ptrTo(duroxide.StatusRunning)
	}
	for _, k := range turn.kinds {
		c.HistoryDelta = append(c.HistoryDelta, ev(inst, turn.exec, *next, k))
		*next++
	}
	return c
}

// TestTurnCacheSteadyTurnRequests: a steady turn is discovery + lock batch
// (fetch 2) + commit batch (ack 1), the query included in neither; with
// the cache disabled the fetch queries again (3), which is the defect
// this guards against.
func TestTurnCacheSteadyTurnRequests(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cacheSize int
		fetch     int64
	}{{"cached", 0, 2}, {"disabled", -1, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newHarness(t, cdb.Options{TurnCacheBytes: tc.cacheSize}, withoutLag())
			for _, kind := range []turnKind{turnPlain, turnKVStatus, turnActivities} {
				r := &turnRunner{e: e, kind: kind}
				for i := range turnsPerInst {
					r.prepare(t)
					f, a := r.run(t)
					r.cleanup(t)
					want := tc.fetch
					if i == 0 {
						// The turn after the instance's first: its first
						// turn loaded nothing, so the cache starts here.
						want = 3
					}
					require.Equalf(t, want, f.Requests, "%s turn %d: fetch requests (%s)", kind, i+1, f.ops())
					// (run's tallies share ByOp between fetch and ack; the ack
					// sends no query, so the queries are the fetch's.)
					require.Equalf(t, want-1, f.ByOp[cdb.OpQuery], "%s turn %d: fetch queries (%s)", kind, i+1, f.ops())
					require.Equalf(t, int64(1), a.Requests, "%s turn %d: ack requests (%s)", kind, i+1, a.ops())
				}
			}
		})
	}
}

// TestTurnCacheMatchesStoredState runs an instance through KV writes and
// clears, custom status, continue-as-new (the KV delta merged into the
// store), a new execution and completion, and checks after every turn
// that the cached fetch (2 requests; the first after the start queries)
// hands the runtime exactly the
// history and KV the container holds.
func TestTurnCacheMatchesStoredState(t *testing.T) {
	e := newHarness(t, cdb.Options{}, withoutLag())
	const inst = "cache-state"
	next := e.startInstance(t, inst)
	poke := []duroxide.EventKind{duroxide.ExternalEvent{Name: pokeName, Data: pokeData}}
	turns := []cacheTurn{
		{name: "set k1 k2", exec: 1, kv: map[string]string{"k1": "a", "k2": "b"}, kinds: append(poke, duroxide.KeyValueSet{Key: "k1", Value: "a", LastUpdatedAtMs: 1}, duroxide.KeyValueSet{Key: "k2", Value: "b", LastUpdatedAtMs: 2})},
		{name: "clear k1, set k3, status", exec: 1, kv: map[string]string{"k2": "b", "k3": "c"}, kinds: append(poke, duroxide.KeyValueCleared{Key: "k1"}, duroxide.KeyValueSet{Key: "k3", Value: "c", LastUpdatedAtMs: 3},
			duroxide.CustomStatusUpdated{Status: ptrTo("s1")})},
		{name: "continue as new", exec: 1, kv: map[string]string{"k2": "b2", "k3": "c"}, kinds: append(poke, duroxide.KeyValueSet{Key: "k2", Value: "b2", LastUpdatedAtMs: 4}, duroxide.OrchestrationContinuedAsNew{Input: "{}"}),
			status: ptrTo(duroxide.StatusContinuedAsNew)},
		{name: "execution 2 starts", exec: 2, kv: map[string]string{"k2": "b2", "k3": "c", "k4": "d"}, kinds: []duroxide.EventKind{duroxide.OrchestrationStarted{Name: costOrchName, Version: costOrchVer, Input: "{}"},
			duroxide.KeyValueSet{Key: "k4", Value: "d", LastUpdatedAtMs: 5}}},
		{name: "clear all, set k5", exec: 2, kv: map[string]string{"k5": "e"}, kinds: append(poke, duroxide.KeyValuesCleared{}, duroxide.KeyValueSet{Key: "k5", Value: "e", LastUpdatedAtMs: 6})},
		{name: "complete", exec: 2, kv: map[string]string{"k5": "e", "k6": "f"}, kinds: append(poke, duroxide.KeyValueSet{Key: "k6", Value: "f", LastUpdatedAtMs: 7}, duroxide.OrchestrationCompleted{Output: "done"}),
			status: ptrTo(duroxide.StatusCompleted)},
		{name: "after completion", exec: 2, kv: map[string]string{"k5": "e", "k6": "f"}, kinds: poke, status: ptrTo(duroxide.StatusCompleted)},
	}
	for i, turn := range turns {
		item, f := fetchChecked(t, e, e.p, inst)
		want := int64(2)
		if i == 0 {
			want = 3 // every chain of cached states starts with a query
		}
		require.Equalf(t, want, f.Requests, "before %q: fetch requests (%s)", turn.name, f.ops())
		if turn.name == "execution 2 starts" {
			next = 1 // event ids start again in a new execution
		}
		require.NoError(t, e.p.AckOrchestrationItem(e.ctx, item.LockToken, commitOf(inst, turn, &next)), turn.name)
		// The commit was planned from the cached KV state (kv_delta
		// documents included), so a wrong cached state would show here.
		got, err := e.p.KVValues(e.ctx, inst)
		require.NoError(t, err)
		require.Equal(t, turn.kv, got, "KV after %q", turn.name)
	}
	_, f := fetchChecked(t, e, e.p, inst)
	require.Equal(t, int64(2), f.Requests, "last fetch")
}

// TestTurnCacheInvalidation: whatever changed the instance behind this
// process's back makes its next fetch query (3 requests) and load the
// current state: another process's turn, AppendWithExecution, an
// abandoned turn, a turn too large for one batch (staged commit), and a
// state larger than the cache (the fallback for long histories).
func TestTurnCacheInvalidation(t *testing.T) {
	poke := func() []duroxide.EventKind {
		return []duroxide.EventKind{duroxide.ExternalEvent{Name: pokeName, Data: pokeData}}
	}
	steady := func(t *testing.T, e *harness, p *cdb.Provider, inst string, next *uint64, wantFetch int64, what string) {
		t.Helper()
		item, f := fetchChecked(t, e, p, inst)
		require.Equalf(t, wantFetch, f.Requests, "%s: fetch requests (%s)", what, f.ops())
		require.NoError(t, p.AckOrchestrationItem(e.ctx, item.LockToken, commitOf(inst, cacheTurn{exec: 1, kinds: poke()}, next)))
	}
	// warm runs the instance's second turn, which queries (the first
	// loaded nothing), and a third, served from the cache.
	warm := func(t *testing.T, e *harness, inst string, next *uint64) {
		t.Helper()
		steady(t, e, e.p, inst, next, 3, "second turn")
		steady(t, e, e.p, inst, next, 2, "third turn")
	}
	t.Run("another process's turn", func(t *testing.T) {
		e := newHarness(t, cdb.Options{}, withoutLag())
		other := secondProvider(t, e, cdb.Options{})
		const inst = "inv-other"
		next := e.startInstance(t, inst)
		warm(t, e, inst, &next)
		steady(t, e, other, inst, &next, 3, "the other process (no cache for the instance)")
		steady(t, e, e.p, inst, &next, 3, "back in the first process")
		steady(t, e, e.p, inst, &next, 2, "steady again")
	})
	t.Run("deleted and re-created elsewhere with as many events", func(t *testing.T) {
		e := newHarness(t, cdb.Options{}, withoutLag())
		other := secondProvider(t, e, cdb.Options{})
		const inst = "inv-recreate"
		next := e.startInstance(t, inst)
		warm(t, e, inst, &next) // cached: 3 events of execution 1
		_, err := e.p.DeleteInstance(e.ctx, inst, true)
		require.NoError(t, err)
		require.NoError(t, other.EnqueueForOrchestrator(e.ctx, duroxide.StartOrchestrationItem{Instance: inst, Orchestration: costOrchName,
			Input: `{"again":true}`, Version: ptrTo(costOrchVer), ExecutionID: 1}, 0))
		item, err := other.FetchOrchestrationItem(e.ctx, costLock, 0, nil)
		require.NoError(t, err)
		require.NotNil(t, item)
		next = 1
		require.NoError(t, other.AckOrchestrationItem(e.ctx, item.LockToken, commitOf(inst, cacheTurn{exec: 1, kinds: []duroxide.EventKind{
			duroxide.OrchestrationStarted{Name: costOrchName, Version: costOrchVer, Input: `{"again":true}`},
			duroxide.ExternalEvent{Name: "other-1", Data: "{}"}, duroxide.ExternalEvent{Name: "other-2", Data: "{}"}}}, &next)))
		steady(t, e, e.p, inst, &next, 3, "after the re-creation")
	})
	t.Run("AppendWithExecution", func(t *testing.T) {
		e := newHarness(t, cdb.Options{}, withoutLag())
		const inst = "inv-append"
		next := e.startInstance(t, inst)
		warm(t, e, inst, &next)
		require.NoError(t, e.p.AppendWithExecution(e.ctx, inst, 1, []duroxide.Event{ev(inst, 1, next, duroxide.ExternalEvent{Name: "appended", Data: "{}"})}))
		next++
		steady(t, e, e.p, inst, &next, 3, "after the append")
		// The instance document's event count no longer covers the
		// appended event, so the cache keeps declining this instance: it
		// stays on the query path, which loads it whole.
		steady(t, e, e.p, inst, &next, 3, "still querying")
	})
	t.Run("abandoned turn", func(t *testing.T) {
		e := newHarness(t, cdb.Options{}, withoutLag())
		const inst = "inv-abandon"
		next := e.startInstance(t, inst)
		warm(t, e, inst, &next)
		item, f := fetchChecked(t, e, e.p, inst)
		require.Equal(t, int64(2), f.Requests)
		require.NoError(t, e.p.AbandonOrchestrationItem(e.ctx, item.LockToken, 0, true))
		steady(t, e, e.p, inst, &next, 3, "after the abandon")
		steady(t, e, e.p, inst, &next, 2, "steady again")
	})
	t.Run("large staged turn", func(t *testing.T) {
		e := newHarness(t, cdb.Options{}, withoutLag())
		const inst = "inv-large"
		next := e.startInstance(t, inst)
		warm(t, e, inst, &next)
		item, _ := fetchChecked(t, e, e.p, inst)
		kinds := poke()
		for i := range 150 { // more than one batch's 100 operations
			kinds = append(kinds, duroxide.ExternalEvent{Name: fmt.Sprintf("bulk-%d", i), Data: "{}"})
		}
		require.NoError(t, e.p.AckOrchestrationItem(e.ctx, item.LockToken, commitOf(inst, cacheTurn{exec: 1, kinds: kinds}, &next)))
		steady(t, e, e.p, inst, &next, 3, "after the large turn")
		steady(t, e, e.p, inst, &next, 2, "steady again")
	})
	t.Run("state larger than the cache", func(t *testing.T) {
		e := newHarness(t, cdb.Options{TurnCacheBytes: 16 << 10}, withoutLag())
		const inst = "inv-long"
		next := e.startInstance(t, inst)
		warm(t, e, inst, &next)
		// Grow the history past 16 KiB: from then on every fetch queries
		// and still loads all of it (fetchChecked compares).
		big := make([]byte, 2000)
		for i := range big {
			big[i] = 'x'
		}
		for range 10 {
			item, _ := fetchChecked(t, e, e.p, inst)
			c := commitOf(inst, cacheTurn{exec: 1, kinds: []duroxide.EventKind{duroxide.ExternalEvent{Name: pokeName, Data: string(big)}}}, &next)
			require.NoError(t, e.p.AckOrchestrationItem(e.ctx, item.LockToken, c))
		}
		item, f := fetchChecked(t, e, e.p, inst)
		require.Equal(t, int64(3), f.Requests, "long history: the query")
		require.Greater(t, len(item.History), 10)
	})
}

// TestTurnCacheSeesOutOfBandEditsWithinMaxAge: a document edited behind
// the provider's back (an operator's bad edit) is not seen by a cached
// load, but the cache trusts a state for at most a minute after the query
// it descends from: then the fetch queries and reports the bad history.
func TestTurnCacheSeesOutOfBandEditsWithinMaxAge(t *testing.T) {
	var skew atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	e := newHarness(t, cdb.Options{}, withSeam(testhooks.Seam{Now: now}), withoutLag())
	const inst = "cache-edit"
	next := e.startInstance(t, inst)
	for _, want := range []int64{3, 2} { // the second turn queries, the third is cached
		item, f := fetchChecked(t, e, e.p, inst)
		require.Equal(t, want, f.Requests)
		require.NoError(t, e.p.AckOrchestrationItem(e.ctx, item.LockToken, commitOf(inst, cacheTurn{exec: 1,
			kinds: []duroxide.EventKind{duroxide.ExternalEvent{Name: pokeName, Data: pokeData}}}, &next)))
	}
	// The edit: event 1's data replaced by bytes no decoder accepts.
	pk := azcosmos.NewPartitionKeyString(inst)
	id := inst + ":history:1:1"
	r, err := e.sdk.ReadItem(e.ctx, pk, id, nil)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(r.Value, &doc))
	doc["eventData"] = "NOT_VALID_JSON{{{"
	body, err := json.Marshal(doc)
	require.NoError(t, err)
	_, err = e.sdk.ReplaceItem(e.ctx, pk, id, body, nil)
	require.NoError(t, err)

	fetch := func() *duroxide.OrchestrationItem {
		require.NoError(t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: pokeName, Data: pokeData}, 0))
		item, err := e.p.FetchOrchestrationItem(e.ctx, costLock, 0, nil)
		require.NoError(t, err)
		require.NotNil(t, item)
		return item
	}
	item := fetch()
	require.Nil(t, item.HistoryError, "within the minute the cached state is used")
	require.NoError(t, e.p.AckOrchestrationItem(e.ctx, item.LockToken, commitOf(inst, cacheTurn{exec: 1,
		kinds: []duroxide.EventKind{duroxide.ExternalEvent{Name: pokeName, Data: pokeData}}}, &next)))

	skew.Store(int64(61 * time.Second))
	item = fetch()
	require.NotNil(t, item.HistoryError, "a minute after the query the fetch queries again and sees the edit")
}

// TestTurnCacheDefersToExpiringMarkers: an instance that consumed a
// message from another instance holds a received marker for an hour;
// until a load query has run after it expired, the fetch queries (the
// query finds expired markers and the turn removes them), and then the
// cache serves the instance again.
func TestTurnCacheDefersToExpiringMarkers(t *testing.T) {
	var skew atomic.Int64
	// No lagging replicas: the test counts requests, and a lagging
	// discovery could miss the message it just enqueued.
	h := newHarness(t, cdb.Options{}, withSeam(testhooks.Seam{Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }}), withoutLag())
	ctx := context.Background()
	item, commit := startParentWithChild(t, h.p, "mk-parent", "mk-child")
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, commit))
	requireOneChildStart(t, h, "mk-parent", "mk-child") // the child's first turn leaves a marker
	require.Len(t, h.docsWhere("orch_received", "mk-child"), 1)
	turn := func() int64 {
		t.Helper()
		require.NoError(t, h.p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: "mk-child", Name: "e", Data: "1"}, 0))
		before := h.p.RequestStats()
		it := mustFetchOrch(t, h.p, "mk-child")
		n := h.p.RequestStats().Total() - before.Total()
		require.NoError(t, h.p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: hRunning("HChild")}))
		return n
	}
	require.Equal(t, int64(3), turn(), "second turn: the query")
	require.Equal(t, int64(3), turn(), "the marker lives: the query again")
	require.Len(t, h.docsWhere("orch_received", "mk-child"), 1, "a fresh marker is kept")
	skew.Store(int64(61 * time.Minute))
	require.Equal(t, int64(3), turn(), "the marker expired: the query finds it")
	require.Empty(t, h.docsWhere("orch_received", "mk-child"), "the expired marker is removed by that turn")
	require.Equal(t, int64(2), turn(), "then the cache serves the instance again")
}
