package cdb_test

// Kept work candidates (workcandidates.go): a work-item fetch first tries
// the untried rest of the last discovery page with the same filter, so a
// steady activity fetch is one lock patch instead of a query and a patch.
// A kept candidate that changed since (taken, deleted) misses on its ETag
// and the fetch queries instead.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// keptTTL is long enough that no kept page expires during a test on a
// loaded machine; expiry itself is tested with a fake clock.
const keptTTL = time.Hour

// enqueueActivities enqueues one activity for each of instances, in
// order (so discovery lists them in that order), with tag.
func enqueueActivities(t *testing.T, p *cdb.Provider, tag *string, instances ...string) {
	t.Helper()
	for _, inst := range instances {
		require.NoError(t, p.EnqueueForWorker(t.Context(), duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 1, Name: "A", Input: inst, Tag: tag}))
	}
}

// fetchCounted fetches a work item with p and returns it (nil: none)
// with the queries and patches the fetch sent.
func fetchCounted(t *testing.T, p *cdb.Provider, tags duroxide.TagFilter, session *duroxide.SessionFetchConfig) (inst string, queries, patches int64) {
	t.Helper()
	before := p.RequestStats()
	w, err := p.FetchWorkItem(t.Context(), costLock, 0, session, tags)
	require.NoError(t, err)
	c := providerCost(before, p.RequestStats())
	if w != nil {
		inst = w.Item.InstanceID()
	}
	return inst, c.ByOp[cdb.OpQuery], c.ByOp[cdb.OpPatch]
}

// TestWorkCandidatesSteadyFetchRequests: five ready activities are one
// query and five lock patches; with kept candidates disabled every fetch
// queries (the defect this guards against). Both with and without a
// session config (the runtime passes one while it has session capacity).
func TestWorkCandidatesSteadyFetchRequests(t *testing.T) {
	insts := []string{"wc-a", "wc-b", "wc-c", "wc-d", "wc-e"}
	for _, tc := range []struct {
		name    string
		ttl     time.Duration
		session *duroxide.SessionFetchConfig
		queries int64
	}{
		{"kept", keptTTL, nil, 1},
		{"kept-session-fetch", keptTTL, &duroxide.SessionFetchConfig{OwnerID: "w1", LockTimeout: costLock}, 1},
		{"disabled", -1, nil, int64(len(insts))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newHarness(t, cdb.Options{WorkCandidateTTL: tc.ttl}, withoutLag())
			enqueueActivities(t, e.p, nil, insts...)
			var queries int64
			for i, want := range insts {
				got, q, pa := fetchCounted(t, e.p, duroxide.AnyTag(), tc.session)
				require.Equalf(t, want, got, "fetch %d: oldest ready item first", i+1)
				require.Equalf(t, int64(1), pa, "fetch %d: lock patches", i+1)
				queries += q
			}
			require.Equal(t, tc.queries, queries, "queries for %d fetches", len(insts))
			got, q, pa := fetchCounted(t, e.p, duroxide.AnyTag(), tc.session)
			require.Empty(t, got, "the queue is drained")
			require.Equal(t, int64(1), q, "an empty kept page means a query")
			require.Zero(t, pa)
		})
	}
}

// TestWorkCandidatesExpire: a kept page older than WorkCandidateTTL (by
// the provider's clock) is not used; the fetch queries again.
func TestWorkCandidatesExpire(t *testing.T) {
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	e := newHarness(t, cdb.Options{WorkCandidateTTL: time.Minute}, withSeam(testhooks.Seam{Now: clock}), withoutLag())
	enqueueActivities(t, e.p, nil, "wc-a", "wc-b", "wc-c")
	got, q, _ := fetchCounted(t, e.p, duroxide.AnyTag(), nil)
	require.Equal(t, "wc-a", got)
	require.Equal(t, int64(1), q)
	got, q, _ = fetchCounted(t, e.p, duroxide.AnyTag(), nil)
	require.Equal(t, "wc-b", got)
	require.Zero(t, q, "within its lifetime the kept page serves the fetch")
	offset.Store(int64(2 * time.Minute))
	got, q, _ = fetchCounted(t, e.p, duroxide.AnyTag(), nil)
	require.Equal(t, "wc-c", got)
	require.Equal(t, int64(1), q, "an expired kept page is not used")
}

// TestWorkCandidatesTakenByOtherProcess: a kept candidate another process
// locked since misses (one failed patch, 412) and the fetch queries and
// returns the next ready item, or nil when there is none.
func TestWorkCandidatesTakenByOtherProcess(t *testing.T) {
	for _, tc := range []struct {
		name  string
		insts []string
		want  string
	}{{"next", []string{"wc-a", "wc-b", "wc-c"}, "wc-c"}, {"none", []string{"wc-a", "wc-b"}, ""}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newHarness(t, cdb.Options{WorkCandidateTTL: keptTTL}, withoutLag())
			other := secondProvider(t, e, cdb.Options{WorkCandidateTTL: -1})
			enqueueActivities(t, e.p, nil, tc.insts...)
			got, _, _ := fetchCounted(t, e.p, duroxide.AnyTag(), nil)
			require.Equal(t, "wc-a", got)
			got, _, _ = fetchCounted(t, other, duroxide.AnyTag(), nil)
			require.Equal(t, "wc-b", got, "the other process takes the item e.p kept")
			failedBefore := e.p.RequestStats()[cdb.OpPatch].Failures
			got, q, pa := fetchCounted(t, e.p, duroxide.AnyTag(), nil)
			require.Equal(t, tc.want, got)
			require.Equal(t, int64(1), e.p.RequestStats()[cdb.OpPatch].Failures-failedBefore, "the kept wc-b misses on its ETag")
			require.Equal(t, int64(1), q, "after a miss the fetch queries")
			if tc.want == "" {
				require.Equal(t, int64(1), pa, "only the missed patch")
			} else {
				require.Equal(t, int64(2), pa, "the missed patch and the lock")
			}
		})
	}
}

// TestWorkCandidatesDeletedItem: a kept candidate deleted since (as a
// cancelled activity is) misses with 404 and the fetch returns the next
// ready item.
func TestWorkCandidatesDeletedItem(t *testing.T) {
	e := newHarness(t, cdb.Options{WorkCandidateTTL: keptTTL}, withoutLag())
	enqueueActivities(t, e.p, nil, "wc-a", "wc-b", "wc-c")
	got, _, _ := fetchCounted(t, e.p, duroxide.AnyTag(), nil)
	require.Equal(t, "wc-a", got)
	pk := azcosmos.NewPartitionKeyString("wc-b")
	pager := e.sdk.NewQueryItemsPager("SELECT VALUE c.id FROM c WHERE c.type = 'worker_queue'", pk, nil)
	var ids []string
	for pager.More() {
		page, err := pager.NextPage(e.ctx)
		require.NoError(t, err)
		for _, raw := range page.Items {
			var id string
			require.NoError(t, json.Unmarshal(raw, &id))
			ids = append(ids, id)
		}
	}
	require.Len(t, ids, 1)
	_, err := e.sdk.DeleteItem(e.ctx, pk, ids[0], nil)
	require.NoError(t, err)
	failedBefore := e.p.RequestStats()[cdb.OpPatch].Failures
	got, q, _ := fetchCounted(t, e.p, duroxide.AnyTag(), nil)
	require.Equal(t, "wc-c", got, "the deleted item is skipped")
	require.Equal(t, int64(1), e.p.RequestStats()[cdb.OpPatch].Failures-failedBefore, "the kept wc-b misses (404)")
	require.Equal(t, int64(1), q)
}

// TestWorkCandidatesTagFilters: kept candidates serve only fetches with
// the filter that found them; a fetch with another filter never gets an
// item of a tag it does not ask for.
func TestWorkCandidatesTagFilters(t *testing.T) {
	e := newHarness(t, cdb.Options{WorkCandidateTTL: keptTTL}, withoutLag())
	gpu := "gpu"
	// Interleaved, so each filter's kept page holds the other's items
	// unless the filter is part of the key.
	enqueueActivities(t, e.p, nil, "wc-u1")
	enqueueActivities(t, e.p, &gpu, "wc-g1")
	enqueueActivities(t, e.p, nil, "wc-u2")
	enqueueActivities(t, e.p, &gpu, "wc-g2")
	gpuOnly, err := duroxide.Tags(gpu)
	require.NoError(t, err)

	got, _, _ := fetchCounted(t, e.p, duroxide.DefaultOnly(), nil)
	require.Equal(t, "wc-u1", got)
	got, _, _ = fetchCounted(t, e.p, gpuOnly, nil)
	require.Equal(t, "wc-g1", got, "a gpu fetch gets a gpu item")
	got, q, _ := fetchCounted(t, e.p, duroxide.DefaultOnly(), nil)
	require.Equal(t, "wc-u2", got)
	require.Zero(t, q, "served from the default-only kept page")
	got, q, _ = fetchCounted(t, e.p, gpuOnly, nil)
	require.Equal(t, "wc-g2", got)
	require.Zero(t, q, "served from the gpu kept page")
	got, _, _ = fetchCounted(t, e.p, duroxide.DefaultOnly(), nil)
	require.Empty(t, got)
}

// TestWorkCandidatesContention: two processes with four goroutines each
// drain 60 activities (on lagging replicas) with kept candidates on; no
// item is ever locked by two fetches at once and each runs exactly once.
func TestWorkCandidatesContention(t *testing.T) {
	const (
		items      = 60
		perProcess = 4
	)
	h := newHarness(t, cdb.Options{WorkCandidateTTL: keptTTL})
	procs := []*cdb.Provider{h.p, h.open(cdb.Options{WorkCandidateTTL: keptTTL})}
	ctx := t.Context()
	for i := range items {
		inst := fmt.Sprintf("wcc-%02d", i)
		require.NoError(t, h.p.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 1, Name: "A", Input: inst}))
	}
	var (
		mu         sync.Mutex
		held       = map[string]string{}
		ran        = map[string]int{}
		violations []string
		done       atomic.Int32
		perProc    [2]atomic.Int32
	)
	errs := make(chan error, 2*perProcess)
	var wg sync.WaitGroup
	deadline := time.Now().Add(2 * time.Minute)
	for pi, p := range procs {
		for g := range perProcess {
			who := fmt.Sprintf("p%d/g%d", pi, g)
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- func() error {
					for done.Load() < items {
						if time.Now().After(deadline) {
							return fmt.Errorf("%s: timed out with %d of %d items done", who, done.Load(), items)
						}
						w, err := p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.AnyTag())
						if err != nil {
							return fmt.Errorf("%s: fetch: %w", who, err)
						}
						if w == nil {
							time.Sleep(time.Millisecond)
							continue
						}
						key := w.Item.InstanceID()
						mu.Lock()
						if other, ok := held[key]; ok {
							violations = append(violations, fmt.Sprintf("%s locked by %s while %s holds it", key, who, other))
						}
						held[key] = who
						ran[key]++
						mu.Unlock()
						time.Sleep(time.Millisecond) // the activity runs
						mu.Lock()
						delete(held, key)
						mu.Unlock()
						a := w.Item.(duroxide.ActivityExecuteItem)
						if err := p.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: a.Instance, ExecutionID: 1, ID: a.ID, Result: "ok"}); err != nil {
							return fmt.Errorf("%s: ack %s: %w", who, key, err)
						}
						perProc[pi].Add(1)
						done.Add(1)
					}
					return nil
				}()
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Empty(t, violations, "a work item was held by two fetches at once")
	require.Len(t, ran, items)
	for k, n := range ran {
		require.Equal(t, 1, n, "activity %s ran %d times", k, n)
	}
	require.Equal(t, int32(items), perProc[0].Load()+perProc[1].Load())
	t.Logf("items per process: %d, %d; queries: %d, %d; failed patches: %d, %d", perProc[0].Load(), perProc[1].Load(),
		procs[0].RequestStats()[cdb.OpQuery].Requests, procs[1].RequestStats()[cdb.OpQuery].Requests,
		procs[0].RequestStats()[cdb.OpPatch].Failures, procs[1].RequestStats()[cdb.OpPatch].Failures)
	require.Empty(t, h.docsWhere("worker_queue", ""), "work items left")
}

// TestWorkCandidatesSessions: session-bound items are never kept, nor
// anything after one on the page: a kept session item would be locked
// without its session being claimed (another owner could take an item of
// a session worker w1 holds), and kept items after it would be fetched
// before it (out of order).
func TestWorkCandidatesSessions(t *testing.T) {
	e := newHarness(t, cdb.Options{WorkCandidateTTL: keptTTL}, withoutLag())
	w1 := &duroxide.SessionFetchConfig{OwnerID: "w1", LockTimeout: costLock}
	w2 := &duroxide.SessionFetchConfig{OwnerID: "w2", LockTimeout: costLock}
	sess := "S"
	enq := func(inst string, id uint64, session *string) {
		require.NoError(t, e.p.EnqueueForWorker(t.Context(), duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: id, Name: "A", Input: inst, SessionID: session}))
	}
	enq("wc-s", 1, &sess)
	enq("wc-p1", 1, nil)
	enq("wc-s", 2, &sess)
	enq("wc-p2", 1, nil)

	got, _, _ := fetchCounted(t, e.p, duroxide.AnyTag(), w1)
	require.Equal(t, "wc-s", got, "w1 claims session S with its first item")
	got, _, _ = fetchCounted(t, e.p, duroxide.AnyTag(), w2)
	require.Equal(t, "wc-p1", got)
	got, _, _ = fetchCounted(t, e.p, duroxide.AnyTag(), w2)
	require.Equal(t, "wc-p2", got, "w2 may not take S's second item, which w1 owns")
	got, _, _ = fetchCounted(t, e.p, duroxide.AnyTag(), w2)
	require.Empty(t, got)
	got, _, _ = fetchCounted(t, e.p, duroxide.AnyTag(), w1)
	require.Equal(t, "wc-s", got, "the owner gets S's second item")
}

// switchLeases hands every dispatcher the slots it currently holds.
type switchLeases struct{ slots atomic.Pointer[[]uint8] }

func (l *switchLeases) AcquireSlots(context.Context, uint64) ([]uint8, error) {
	return *l.slots.Load(), nil
}
func (l *switchLeases) ReleaseSlots(context.Context, uint64) error { return nil }

// TestWorkCandidatesSlots: after the dispatcher's slots change, a kept
// candidate of a slot it no longer holds is not locked by it (the slot's
// new holder polls it); kept candidates of slots it still holds are.
func TestWorkCandidatesSlots(t *testing.T) {
	all := make([]uint8, cdb.NumSlots)
	for i := range all {
		all[i] = uint8(i)
	}
	l := &switchLeases{}
	l.slots.Store(&all)
	e := newHarness(t, cdb.Options{WorkCandidateTTL: keptTTL, Leases: l}, withoutLag())
	insts := []string{"wc-a", "wc-b", "wc-c"}
	require.NotEqual(t, cdb.DispatchSlot("wc-b"), cdb.DispatchSlot("wc-c"))
	enqueueActivities(t, e.p, nil, insts...)
	ctx := cdb.WithDispatcher(t.Context(), 1)
	w, err := e.p.FetchWorkItem(ctx, costLock, 0, nil, duroxide.AnyTag())
	require.NoError(t, err)
	require.Equal(t, "wc-a", w.Item.InstanceID())

	only := []uint8{cdb.DispatchSlot("wc-c")}
	l.slots.Store(&only)
	before := e.p.RequestStats()
	w, err = e.p.FetchWorkItem(ctx, costLock, 0, nil, duroxide.AnyTag())
	require.NoError(t, err)
	require.NotNil(t, w)
	require.Equal(t, "wc-c", w.Item.InstanceID(), "wc-b's slot is no longer this dispatcher's")
	require.Zero(t, providerCost(before, e.p.RequestStats()).ByOp[cdb.OpQuery], "wc-c came from the kept page")
}
