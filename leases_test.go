package cdb_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide/providertest"
	"github.com/duroxide-go/cdb/internal/testbackend"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// Lease tests run several providers ("processes") on one cosmostest
// container with a shared fake clock, and renew explicitly with Refresh:
// the lease is an hour long, so the background renewal (which runs once at
// start, then every 20 minutes of real time) never interferes, and expiry
// happens exactly when a test advances the clock.

const testLease = time.Hour

// leaseProc is one process: a provider with Cosmos leases. Killing it makes
// every Cosmos request it sends fail, as if the process were gone, so it
// can neither renew nor give its slots up.
type leaseProc struct {
	id   string
	p    *cdb.Provider
	l    *cdb.Leases
	dead atomic.Bool
}

func (lp *leaseProc) kill() { lp.dead.Store(true); _ = lp.p.Close() }

func openLeaseProc(t *testing.T, h *harness, clock *manualClock, id string) *leaseProc {
	t.Helper()
	l, err := cdb.NewLeases(cdb.LeaseOptions{ProcessID: id, LeaseDuration: testLease})
	require.NoError(t, err)
	lp := &leaseProc{id: id, l: l}
	hooks := &testhooks.Hooks{Before: func(context.Context, testhooks.Call) error {
		if lp.dead.Load() {
			return errors.New("process is dead")
		}
		return nil
	}}
	lp.p = h.openWith(testhooks.Seam{Cosmos: hooks, Now: clock.now}, cdb.Options{Leases: l})
	return lp
}

// leaseOwners reads the slot lease documents of the default group: owner
// by slot.
func leaseOwners(t *testing.T, h *harness) map[int]string {
	t.Helper()
	return groupOwners(t, h, cdb.DefaultLeaseGroup)
}

func groupOwners(t *testing.T, h *harness, group string) map[int]string {
	t.Helper()
	c, err := h.srv.Client().NewContainer(hDatabase, hContainer)
	require.NoError(t, err)
	pager := c.NewQueryItemsPager("SELECT c.slot, c.owner FROM c WHERE c.type = 'dispatch_lease' AND c.leaseGroup = @group", azcosmos.NewPartitionKeyString(cdb.LeasePartition),
		&azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@group", Value: group}}})
	out := map[int]string{}
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		require.NoError(t, err)
		for _, raw := range page.Items {
			var d struct {
				Slot  int    `json:"slot"`
				Owner string `json:"owner"`
			}
			require.NoError(t, json.Unmarshal(raw, &d))
			out[d.Slot] = d.Owner
		}
	}
	return out
}

// shares is the fair share of each process: 256/n each, one more for the
// first 256%n ids in sorted order.
func shares(ids []string) map[string]int {
	sorted := slices.Sorted(slices.Values(ids))
	out := map[string]int{}
	for i, id := range sorted {
		out[id] = cdb.NumSlots / len(ids)
		if i < cdb.NumSlots%len(ids) {
			out[id]++
		}
	}
	return out
}

// fairByDocuments reports whether the lease documents give every slot to
// one of procs and each proc exactly its share.
func fairByDocuments(t *testing.T, h *harness, procs []*leaseProc) (bool, map[string]int) {
	owners := leaseOwners(t, h)
	counts := map[string]int{}
	for s := range cdb.NumSlots {
		counts[owners[s]]++
	}
	var ids []string
	for _, p := range procs {
		ids = append(ids, p.id)
	}
	want := shares(ids)
	if len(counts) != len(want) {
		return false, counts
	}
	for id, n := range want {
		if counts[id] != n {
			return false, counts
		}
	}
	return true, counts
}

// converge renews every process in rounds until the documents are fair,
// then checks that each process's own view agrees with them. It returns the
// number of rounds it took.
func converge(t *testing.T, h *harness, procs ...*leaseProc) int {
	t.Helper()
	ctx := t.Context()
	for round := 1; round <= 6; round++ {
		for _, p := range procs {
			require.NoError(t, p.l.Refresh(ctx), "refresh of %s", p.id)
		}
		fair, counts := fairByDocuments(t, h, procs)
		if !fair {
			t.Logf("round %d: %v", round, counts)
			continue
		}
		// One more round: a converged assignment is stable, and every
		// process now sees exactly the slots the documents give it.
		for _, p := range procs {
			require.NoError(t, p.l.Refresh(ctx))
		}
		owners := leaseOwners(t, h)
		seen := map[uint8]string{}
		for _, p := range procs {
			for _, s := range p.l.Owned() {
				require.Empty(t, seen[s], "slot %d owned by %s and %s", s, seen[s], p.id)
				seen[s] = p.id
				require.Equal(t, p.id, owners[int(s)], "slot %d", s)
			}
		}
		require.Len(t, seen, cdb.NumSlots)
		fair, counts = fairByDocuments(t, h, procs)
		require.True(t, fair, "a converged assignment changed: %v", counts)
		return round
	}
	_, counts := fairByDocuments(t, h, procs)
	require.Failf(t, "leases did not converge", "after 6 rounds: %v", counts)
	return 0
}

func TestLeasesConvergeOneThreeTwo(t *testing.T) {
	h := newHarness(t, cdb.Options{}, withoutLag())
	clock := newManualClock()
	a := openLeaseProc(t, h, clock, "proc-a")
	converge(t, h, a)
	require.Len(t, a.l.Owned(), 256)

	b := openLeaseProc(t, h, clock, "proc-b")
	c := openLeaseProc(t, h, clock, "proc-c")
	rounds := converge(t, h, a, b, c)
	t.Logf("1→3 converged in %d rounds", rounds)
	require.Len(t, a.l.Owned(), 86) // 256 = 86 + 85 + 85, the extra slot to the first id
	require.Len(t, b.l.Owned(), 85)
	require.Len(t, c.l.Owned(), 85)

	// b leaves cleanly: its slots move at the next renewals, no clock
	// needs to pass.
	require.NoError(t, b.p.Close())
	rounds = converge(t, h, a, c)
	t.Logf("3→2 converged in %d rounds", rounds)
	require.Len(t, a.l.Owned(), 128)
	require.Len(t, c.l.Owned(), 128)
}

// Groups split the slots independently: two orchestration processes share
// them in one group while a lone activity process holds all of them in
// another.
func TestLeasesGroups(t *testing.T) {
	h := newHarness(t, cdb.Options{}, withoutLag())
	clock := newManualClock()
	ctx := t.Context()
	open := func(id, group string) *cdb.Leases {
		l, err := cdb.NewLeases(cdb.LeaseOptions{ProcessID: id, Group: group, LeaseDuration: testLease})
		require.NoError(t, err)
		h.openWith(testhooks.Seam{Now: clock.now}, cdb.Options{Leases: l})
		return l
	}
	o1, o2, w := open("orch-1", "orchestrators"), open("orch-2", "orchestrators"), open("worker-1", "workers")
	for range 3 {
		for _, l := range []*cdb.Leases{o1, o2, w} {
			require.NoError(t, l.Refresh(ctx))
		}
	}
	require.Len(t, o1.Owned(), 128)
	require.Len(t, o2.Owned(), 128)
	require.Len(t, w.Owned(), cdb.NumSlots)
	counts := map[string]int{}
	for _, o := range groupOwners(t, h, "orchestrators") {
		counts[o]++
	}
	require.Equal(t, map[string]int{"orch-1": 128, "orch-2": 128}, counts)
	require.Len(t, groupOwners(t, h, "workers"), cdb.NumSlots)
	require.Empty(t, leaseOwners(t, h), "nothing in the default group")
}

func TestLeasesFairness(t *testing.T) {
	h := newHarness(t, cdb.Options{}, withoutLag())
	clock := newManualClock()
	var procs []*leaseProc
	for _, id := range []string{"w3", "w1", "w5", "w2", "w4"} { // joining out of order
		procs = append(procs, openLeaseProc(t, h, clock, id))
		converge(t, h, procs...)
	}
	for _, p := range procs {
		want := 51
		if p.id == "w1" { // 256 = 5×51 + 1
			want = 52
		}
		require.Len(t, p.l.Owned(), want, p.id)
	}
}

func TestLeasesDeadOwnerTakenOver(t *testing.T) {
	h := newHarness(t, cdb.Options{}, withoutLag())
	clock := newManualClock()
	ctx := t.Context()
	a := openLeaseProc(t, h, clock, "proc-a")
	b := openLeaseProc(t, h, clock, "proc-b")
	converge(t, h, a, b)
	aSlots := a.l.Owned()

	b.kill() // no renewal, no release
	clock.advance(testLease / 2)
	require.NoError(t, a.l.Refresh(ctx))
	require.Equal(t, aSlots, a.l.Owned(), "b's lease is still live: nothing moves")
	polled, err := a.l.AcquireSlots(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, aSlots, polled, "a polls only its own slots while b's lease is live")

	clock.advance(testLease / 2)
	// b's lease has lapsed: before a renews, its fetches already poll
	// b's slots too, so none waits longer than the lease.
	polled, err = a.l.AcquireSlots(ctx, 0)
	require.NoError(t, err)
	require.Len(t, polled, cdb.NumSlots)
	// b, whose own lease lapsed, falls back to polling every slot.
	polled, err = b.l.AcquireSlots(ctx, 0)
	require.NoError(t, err)
	require.Nil(t, polled)

	require.NoError(t, a.l.Refresh(ctx))
	require.Len(t, a.l.Owned(), cdb.NumSlots)
	for s, o := range leaseOwners(t, h) {
		require.Equal(t, "proc-a", o, "slot %d", s)
	}
}

func TestLeasesStableIdentityKeepsSlotsAcrossRestart(t *testing.T) {
	h := newHarness(t, cdb.Options{}, withoutLag())
	clock := newManualClock()
	a := openLeaseProc(t, h, clock, "proc-a")
	b := openLeaseProc(t, h, clock, "proc-b")
	converge(t, h, a, b)
	aSlots, bSlots := a.l.Owned(), b.l.Owned()

	b.kill()
	b2 := openLeaseProc(t, h, clock, "proc-b") // restarted, same identity, lease still live
	converge(t, h, a, b2)
	require.Equal(t, bSlots, b2.l.Owned(), "the restarted process keeps its slots")
	require.Equal(t, aSlots, a.l.Owned())
}

func TestLeasesFetchOnlyOwnedSlots(t *testing.T) {
	h := newHarness(t, cdb.Options{}, withoutLag())
	clock := newManualClock()
	ctx := t.Context()
	a := openLeaseProc(t, h, clock, "proc-a")
	b := openLeaseProc(t, h, clock, "proc-b")
	converge(t, h, a, b)
	mine := map[*leaseProc]map[uint8]bool{a: {}, b: {}}
	for _, p := range []*leaseProc{a, b} {
		for _, s := range p.l.Owned() {
			mine[p][s] = true
		}
	}

	want := map[*leaseProc][]string{}
	for i := range 30 {
		inst := fmt.Sprintf("lease-inst-%d", i)
		require.NoError(t, a.p.EnqueueForOrchestrator(ctx, hStart(inst), 0))
		if mine[a][cdb.DispatchSlot(inst)] {
			want[a] = append(want[a], inst)
		} else {
			want[b] = append(want[b], inst)
		}
	}
	require.NotEmpty(t, want[a])
	require.NotEmpty(t, want[b])

	// The slot lookup on the fetch path reads nothing.
	a.p.ResetRequestStats()
	for range 100 {
		_, err := a.l.AcquireSlots(ctx, 1)
		require.NoError(t, err)
	}
	require.Zero(t, a.p.RequestStats().Total())

	for _, p := range []*leaseProc{a, b} {
		var got []string
		for {
			item, err := p.p.FetchOrchestrationItem(ctx, hLock, 0, nil)
			require.NoError(t, err)
			if item == nil {
				break
			}
			require.True(t, mine[p][cdb.DispatchSlot(item.Instance)], "%s fetched %s from a slot it does not own", p.id, item.Instance)
			got = append(got, item.Instance)
		}
		sort.Strings(got)
		sort.Strings(want[p])
		require.Equal(t, want[p], got, p.id)
	}
}

func TestValidationWithLeases(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short, which asks for quick tests: this one runs the whole validation suite again with leases; `go test ./...` (the README command) and .ci/run run it")
	}
	// Leases change nothing backend-specific; TestValidation covers the
	// other backends.
	testbackend.ForNamed(t, testbackend.NameCosmostest, func(t *testing.T, b testbackend.Backend) {
		f := newFactory(t, b)
		f.leases = true
		providertest.Run(t, f)
	})
}

// BenchmarkLeasesCost measures what the leases cost one process with
// the default intervals: the requests and RU of one renewal, times the
// renewals per minute. Three processes share the slots; the fetch path
// reads no lease documents.
func BenchmarkLeasesCost(b *testing.B) {
	srv := cosmostest.New(b, nil)
	clock := newManualClock()
	var procs []*leaseProc
	for _, id := range []string{"p1", "p2", "p3"} {
		l, err := cdb.NewLeases(cdb.LeaseOptions{ProcessID: id})
		require.NoError(b, err)
		p, err := cdb.New(testhooks.With(b.Context(), &testhooks.Seam{Now: clock.now}), cdb.Config{Endpoint: srv.Endpoint(), Key: srv.Key(), ClientOptions: hClientOptions()},
			&cdb.Options{Leases: l, MaintenanceInterval: -1})
		require.NoError(b, err)
		b.Cleanup(func() { _ = p.Close() })
		procs = append(procs, &leaseProc{id: id, l: l, p: p})
	}
	ctx := b.Context()
	for range 4 {
		for _, p := range procs {
			require.NoError(b, p.l.Refresh(ctx))
		}
	}
	for _, p := range procs {
		p.p.ResetRequestStats()
	}
	b.ResetTimer()
	for range b.N {
		for _, p := range procs {
			require.NoError(b, p.l.Refresh(ctx))
		}
	}
	b.StopTimer()
	var reqs int64
	var ru float64
	for _, p := range procs {
		st := p.p.RequestStats()
		reqs += st.Total()
		for _, o := range st {
			ru += o.RequestCharge
		}
	}
	renewals := float64(len(procs) * b.N)
	perMinute := float64(time.Minute) / float64(procs[0].l.Options().RenewInterval)
	b.ReportMetric(float64(reqs)/renewals, "requests/renewal")
	b.ReportMetric(float64(reqs)/renewals*perMinute, "requests/process/min")
	b.ReportMetric(ru/renewals*perMinute, "RU/process/min")
}

// With the real clock and the background renewal only: two processes
// share the slots, and when one dies the other takes them all over.
func TestLeasesBackgroundRenewal(t *testing.T) {
	h := newHarness(t, cdb.Options{}, withoutLag())
	open := func(id string) *leaseProc {
		l, err := cdb.NewLeases(cdb.LeaseOptions{ProcessID: id, LeaseDuration: 2 * time.Second, RenewInterval: 200 * time.Millisecond})
		require.NoError(t, err)
		lp := &leaseProc{id: id, l: l}
		hooks := &testhooks.Hooks{Before: func(context.Context, testhooks.Call) error {
			if lp.dead.Load() {
				return errors.New("process is dead")
			}
			return nil
		}}
		lp.p = h.openWith(testhooks.Seam{Cosmos: hooks}, cdb.Options{Leases: l})
		return lp
	}
	a, b := open("bg-a"), open("bg-b")
	eventually(t, time.Minute, func() bool {
		fair, _ := fairByDocuments(t, h, []*leaseProc{a, b})
		return fair && len(a.l.Owned()) == 128 && len(b.l.Owned()) == 128
	}, "two processes share the slots")
	b.kill()
	eventually(t, time.Minute, func() bool { return len(a.l.Owned()) == cdb.NumSlots }, "a takes over b's slots")
}

// Share the dispatch slots between processes on one container: each
// process gives its provider its own Leases, and renewals (in the
// background every RenewInterval; here by hand) converge to fair shares.
func ExampleNewLeases() {
	srv, err := cosmostest.NewServer(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	var all []*cdb.Leases
	for _, id := range []string{"worker-a", "worker-b", "worker-c"} {
		leases, err := cdb.NewLeases(cdb.LeaseOptions{ProcessID: id})
		if err != nil {
			log.Fatal(err)
		}
		p, err := cdb.New(ctx, cdb.Config{Endpoint: srv.Endpoint(), Key: srv.Key()}, &cdb.Options{Leases: leases})
		if err != nil {
			log.Fatal(err)
		}
		defer p.Close()
		all = append(all, leases)
	}
	for range 3 {
		for _, l := range all {
			if err := l.Refresh(ctx); err != nil {
				log.Fatal(err)
			}
		}
	}
	for _, l := range all {
		fmt.Printf("%s polls %d slots\n", l.ProcessID(), len(l.Owned()))
	}
	// Output:
	// worker-a polls 86 slots
	// worker-b polls 85 slots
	// worker-c polls 85 slots
}

// Lease writes whose outcome is unknown — applied but answered with an
// error, or not applied — do not break the assignment: later renewals read
// the truth and the documents still converge to fair shares.
func TestLeasesAmbiguousWrites(t *testing.T) {
	h := newHarness(t, cdb.Options{}, withoutLag())
	clock := newManualClock()
	// Faults hit lease writes during the first rounds only: a fault pattern
	// that never ends can starve one process forever (every one of its
	// heartbeats refused), which says nothing about the leases. What must
	// hold is that writes refused, or applied and reported as failed, leave
	// nothing behind that stops convergence once the faults stop.
	var faulty atomic.Bool
	var sent, answered atomic.Int64
	leaseWrite := func(c testhooks.Call) bool {
		return faulty.Load() && c.PartitionKey == cdb.LeasePartition && c.Op != cdb.OpQuery
	}
	var refused, lost atomic.Int64
	open := func(id string) *leaseProc {
		l, err := cdb.NewLeases(cdb.LeaseOptions{ProcessID: id, LeaseDuration: testLease})
		require.NoError(t, err)
		hooks := &testhooks.Hooks{
			Before: func(_ context.Context, c testhooks.Call) error {
				if leaseWrite(c) && sent.Add(1)%5 == 0 {
					refused.Add(1)
					return errors.New("injected: not sent")
				}
				return nil
			},
			After: func(_ context.Context, c testhooks.Call, err error) error {
				if err == nil && leaseWrite(c) && answered.Add(1)%4 == 0 {
					lost.Add(1)
					return errors.New("injected: applied, response lost")
				}
				return err
			},
		}
		return &leaseProc{id: id, l: l, p: h.openWith(testhooks.Seam{Cosmos: hooks, Now: clock.now}, cdb.Options{Leases: l})}
	}
	procs := []*leaseProc{open("amb-a"), open("amb-b"), open("amb-c")}
	ctx := t.Context()
	faulty.Store(true)
	var failures int
	for range 10 {
		for _, p := range procs {
			if p.l.Refresh(ctx) != nil {
				failures++
			}
		}
	}
	faulty.Store(false)
	require.Positive(t, failures, "the faults were injected")
	require.Positive(t, refused.Load(), "writes were refused")
	require.Positive(t, lost.Load(), "writes were applied and reported as failed")
	for range 6 {
		for _, p := range procs {
			require.NoError(t, p.l.Refresh(ctx), "refresh of %s without faults", p.id)
		}
		if fair, _ := fairByDocuments(t, h, procs); fair {
			break
		}
	}
	fair, counts := fairByDocuments(t, h, procs)
	require.True(t, fair, "converged after ambiguous writes: %v", counts)
}

func TestLeasesPartitionIsReserved(t *testing.T) {
	h := newHarness(t, cdb.Options{}, withoutLag())
	err := h.p.EnqueueForOrchestrator(t.Context(), hStart(cdb.LeasePartition), 0)
	requirePermanentErr(t, err)
	require.ErrorContains(t, err, "reserved")
}
