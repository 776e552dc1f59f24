package cdb_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
)

// A process dies holding an instance's lock and the message it fetched;
// newer messages arrive. Another process's discovery runs just before the
// dead lock lapses, so it sees only the newer messages (the older one is
// still locked), and its lock batch runs just after, when the instance's
// lock has lapsed and can be taken over. The turn must not get the newer
// messages without the older one: the queue is FIFO (the chaos soak's
// continue-as-new loop dequeued its end marker before a message sent
// earlier, whose fetch had died with a killed process).
func TestTakeoverAfterDiscoveryKeepsMessageOrder(t *testing.T) {
	const inst = "takeover-order"
	ctx := t.Context()
	h := newHarnessNoLag(t, cdb.Options{})
	createHInstance(t, h.p, inst)
	m1 := duroxide.QueueMessageItem{Instance: inst, Name: "q", Data: "m1"}
	m2 := duroxide.QueueMessageItem{Instance: inst, Name: "q", Data: "m2"}
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, m1, 0))
	const lock = 5 * time.Second
	dead, err := h.p.FetchOrchestrationItem(ctx, lock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, dead)
	require.Equal(t, []duroxide.WorkItem{m1}, dead.Messages)
	// The holder dies: it never acks, abandons or renews.
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, m2, 0))

	// The taker's clock passes the dead lock's expiry right after its
	// discovery query.
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	var jumped atomic.Bool
	hooks := &cdb.Hooks{After: func(_ context.Context, c cdb.Call, err error) error {
		if c.Op == cdb.OpQuery && c.PartitionKey == "" && jumped.CompareAndSwap(false, true) {
			offset.Store(int64(time.Minute))
		}
		return err
	}}
	taker := h.open(cdb.Options{MaxClockSkew: -1, Test: cdb.TestOptions{Now: now, Hooks: hooks}})

	var got []duroxide.WorkItem
	eventually(t, 30*time.Second, func() bool {
		item, err := taker.FetchOrchestrationItem(ctx, lock, 0, nil)
		require.NoError(t, err)
		if item == nil {
			return false
		}
		got = item.Messages
		return true
	}, "the taker never fetched the instance")
	require.True(t, jumped.Load(), "the clock jumped between discovery and lock")
	require.Equal(t, []duroxide.WorkItem{m1, m2}, got, "the dead holder's message first, then the newer one")
}

// A process discovers an instance while another holds its lock: it sees
// only the message that arrived meanwhile (the held one is locked). The
// holder then gives its batch back without a delay (the runtime does so
// when it fetched messages without the continue-as-new item they wait
// for), and only then does the first process's lock batch run. The turn
// must not get the newer message without the older one.
func TestAbandonAfterDiscoveryKeepsMessageOrder(t *testing.T) {
	const inst = "abandon-after-discovery"
	ctx := t.Context()
	h := newHarnessNoLag(t, cdb.Options{})
	createHInstance(t, h.p, inst)
	m1 := duroxide.QueueMessageItem{Instance: inst, Name: "q", Data: "m1"}
	m2 := duroxide.QueueMessageItem{Instance: inst, Name: "q", Data: "m2"}
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, m1, 0))
	holder := mustFetchOrch(t, h.p, inst)
	require.Equal(t, []duroxide.WorkItem{m1}, holder.Messages)
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, m2, 0))

	g := newGate(t)
	lock := g.at(false, func(c cdb.Call) bool { return c.Op == cdb.OpBatch && c.PartitionKey == inst })
	other := h.open(cdb.Options{Test: cdb.TestOptions{Hooks: g.hooks()}})
	type fetched struct {
		item *duroxide.OrchestrationItem
		err  error
	}
	first := make(chan fetched, 1)
	go func() {
		item, err := other.FetchOrchestrationItem(ctx, hLock, 0, nil)
		first <- fetched{item, err}
	}()
	lock.wait(t) // discovered by m2 alone; about to lock
	require.NoError(t, h.p.AbandonOrchestrationItem(ctx, holder.LockToken, 0, true))
	lock.open()
	r := <-first
	require.NoError(t, r.err)
	got := r.item
	eventually(t, 30*time.Second, func() bool {
		if got != nil {
			return true
		}
		item, err := other.FetchOrchestrationItem(ctx, hLock, 0, nil)
		require.NoError(t, err)
		got = item
		return got != nil
	}, "the instance was never fetched again")
	require.Equal(t, []duroxide.WorkItem{m1, m2}, got.Messages, "the given-back message first, then the newer one")
}
