package cdb

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/cosmostest"
)

func TestFairShares(t *testing.T) {
	require.Empty(t, fairShares(nil))
	got := fairShares([]string{"a", "b", "c"})
	require.Equal(t, map[string]int{"a": 86, "b": 85, "c": 85}, got)
	many := make([]string, 300)
	for i := range many {
		many[i] = string(rune('A'+i/26)) + string(rune('a'+i%26))
	}
	total, zero := 0, 0
	for _, n := range fairShares(many) {
		total += n
		if n == 0 {
			zero++
		}
	}
	require.Equal(t, NumSlots, total)
	require.Equal(t, 300-NumSlots, zero, "beyond 256 processes, the rest hold nothing")
}

func TestLeaseOptionsValidation(t *testing.T) {
	for name, o := range map[string]LeaseOptions{
		"renew not shorter": {LeaseDuration: time.Second, RenewInterval: time.Second},
		"negative":          {LeaseDuration: -time.Second},
		"control character": {ProcessID: "a\x00b"},
		"invalid utf-8":     {ProcessID: "a\xffb"},
		"too long":          {ProcessID: string(make([]byte, 200))},
	} {
		_, err := NewLeases(o)
		require.ErrorIs(t, err, ErrConfig, name)
	}
	l, err := NewLeases(LeaseOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, l.ProcessID())
	require.Equal(t, DefaultLeaseDuration/3, l.Options().RenewInterval)
	require.Error(t, l.Refresh(t.Context()), "not attached to a provider")
}

// Two processes claiming the same slots at once, from the same snapshot:
// every slot has exactly one winner, and its document names it.
func TestLeasesConflictOneWinner(t *testing.T) {
	srv := cosmostest.New(t, nil)
	ctx := t.Context()
	open := func(id string) *Leases {
		l, err := NewLeases(LeaseOptions{ProcessID: id, LeaseDuration: time.Hour})
		require.NoError(t, err)
		p, err := New(ctx, Config{Endpoint: srv.Endpoint(), Key: srv.Key()}, &Options{MaintenanceInterval: -1})
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		// Bound without the provider's renewal loop: its first renewal
		// runs at once in the background and would race the claims below
		// (recreating a deleted slot document between the snapshot and
		// the claims, so that neither claimant won it).
		require.NoError(t, l.bind(p))
		require.NoError(t, l.Refresh(ctx))
		return l
	}
	l1, l2 := open("one"), open("two")
	// Slots 0–9 lose their documents (the create race), the rest keep them
	// (the replace race).
	for s := range 10 {
		require.NoError(t, l1.p.st.Delete(ctx, LeasePartition, slotLeaseID(DefaultLeaseGroup, s), nil))
	}
	slots := make([]int, 20)
	for i := range slots {
		slots[i] = i * 7 % NumSlots
	}
	s1, err := l1.readLeases(ctx)
	require.NoError(t, err)
	s2, err := l2.readLeases(ctx)
	require.NoError(t, err)
	won := map[string][]bool{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, c := range []struct {
		l    *Leases
		snap *leaseSnapshot
	}{{l1, s1}, {l2, s2}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := make([]bool, len(slots))
			for i, s := range slots {
				ok, err := c.l.claim(ctx, c.snap, s, ms(time.Now()))
				require.NoError(t, err)
				res[i] = ok
			}
			mu.Lock()
			won[c.l.ProcessID()] = res
			mu.Unlock()
		}()
	}
	wg.Wait()
	after, err := l1.readLeases(ctx)
	require.NoError(t, err)
	for i, s := range slots {
		require.NotEqual(t, won["one"][i], won["two"][i], "slot %d: exactly one claimant wins", s)
		winner := "one"
		if won["two"][i] {
			winner = "two"
		}
		require.Equal(t, winner, after.slots[s].Owner, "slot %d", s)
	}
}
