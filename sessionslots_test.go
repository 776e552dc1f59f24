package cdb_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
)

// Sessions and dispatch slots. A session stays with its owner while the
// owner renews it, but the slot its instance hashes to may move to
// another process (a process joined, or the owner restarted and the slots
// were rebalanced meanwhile). The slot's new holder may not take the
// session; so unless the owner fetches the session's items outside its
// own slots, nobody runs them until the session goes idle (the chaos soak
// found an instance stuck this way).

const (
	pinnedLock  = 4 * time.Second // the soak's session lock
	pinnedRenew = 2 * time.Second
	pinnedSteps = 60 // simulated seconds: far less than the idle timeout
)

// TestSessionOwnerFetchesItsItemsOutsideItsSlots claims sessions on
// proc-a while it holds every slot, moves half the slots to proc-b, and
// checks that the sessions' next items are still run, by their owner,
// while it keeps renewing them — also when proc-a was restarted under the
// same identity, so only the store knows which sessions it owns.
func TestSessionOwnerFetchesItsItemsOutsideItsSlots(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restarted=%v", restart), func(t *testing.T) {
			h := newHarness(t, cdb.Options{}, withoutLag())
			clock := newManualClock()
			ctx := t.Context()
			a := openLeaseProc(t, h, clock, "proc-a")
			converge(t, h, a)
			owner := &duroxide.SessionFetchConfig{OwnerID: "owner-a", LockTimeout: pinnedLock}
			other := &duroxide.SessionFetchConfig{OwnerID: "owner-b", LockTimeout: pinnedLock}
			sid := "s"
			var insts []string
			for i := range 16 {
				inst := fmt.Sprintf("pinned-%d", i)
				insts = append(insts, inst)
				require.NoError(t, a.p.EnqueueForWorker(ctx, hActivity(inst, 1, &sid)))
			}
			for range insts {
				w, err := a.p.FetchWorkItem(ctx, hLock, 0, owner, duroxide.TagFilter{Mode: duroxide.TagAny})
				require.NoError(t, err)
				require.NotNil(t, w, "proc-a holds every slot and claims every session")
				require.NoError(t, a.p.AckWorkItem(ctx, w.LockToken, nil))
			}

			if restart {
				a.kill()
				a = openLeaseProc(t, h, clock, "proc-a")
			}
			b := openLeaseProc(t, h, clock, "proc-b")
			converge(t, h, a, b)
			var moved []string
			for _, inst := range insts {
				if !slices.Contains(a.l.Owned(), cdb.DispatchSlot(inst)) {
					moved = append(moved, inst)
					require.NoError(t, a.p.EnqueueForWorker(ctx, hActivity(inst, 2, &sid)))
				}
			}
			require.NotEmpty(t, moved, "some sessions' slots moved to proc-b")

			ran := map[string]string{}
			fetch := func(lp *leaseProc, cfg *duroxide.SessionFetchConfig) {
				w, err := lp.p.FetchWorkItem(ctx, hLock, 0, cfg, duroxide.TagFilter{Mode: duroxide.TagAny})
				require.NoError(t, err)
				if w != nil {
					ran[w.Item.(duroxide.ActivityExecuteItem).Instance] = lp.id
					require.NoError(t, lp.p.AckWorkItem(ctx, w.LockToken, nil))
				}
			}
			for step := 0; step < pinnedSteps && len(ran) < len(moved); step++ {
				if time.Duration(step)*time.Second%pinnedRenew == 0 {
					_, err := a.p.RenewSessionLock(ctx, []string{owner.OwnerID}, pinnedLock, time.Hour)
					require.NoError(t, err)
				}
				fetch(a, owner)
				fetch(b, other)
				clock.advance(time.Second)
			}
			for _, inst := range moved {
				require.Equal(t, "proc-a", ran[inst], "the item of %s's session (slot %d, now proc-b's) is run by the session's owner", inst, cdb.DispatchSlot(inst))
			}
		})
	}
}
