package cdb_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// heldThenNewer enqueues m1 for inst (a started instance) and fetches it
// with a lock of lock, then enqueues m2 while that lock holds. It returns
// both messages and the held item; its holder may die (never ack, abandon
// or renew) or act, as each test says.
func heldThenNewer(t *testing.T, h *harness, inst string, lock time.Duration) (m1, m2 duroxide.QueueMessageItem, held *duroxide.OrchestrationItem) {
	t.Helper()
	ctx := t.Context()
	m1 = duroxide.QueueMessageItem{Instance: inst, Name: "q", Data: "m1"}
	m2 = duroxide.QueueMessageItem{Instance: inst, Name: "q", Data: "m2"}
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, m1, 0))
	held, err := h.p.FetchOrchestrationItem(ctx, lock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, held)
	require.Equal(t, []duroxide.WorkItem{m1}, held.Messages)
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, m2, 0))
	return m1, m2, held
}

// jumpAfterDiscovery is a taker's clock that passes a dead lock's expiry
// right after the taker's discovery query: its discovery sees only what
// the dead lock did not hold, its lock batch finds the lock lapsed.
type jumpAfterDiscovery struct {
	offset atomic.Int64
	jumped atomic.Bool
}

func (j *jumpAfterDiscovery) now() time.Time { return time.Now().Add(time.Duration(j.offset.Load())) }

// observe is called from the taker's After hook with each call.
func (j *jumpAfterDiscovery) observe(c testhooks.Call) {
	if c.Op == cdb.OpQuery && c.PartitionKey == "" && j.jumped.CompareAndSwap(false, true) {
		j.offset.Store(int64(time.Minute))
	}
}

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
	h := newHarness(t, cdb.Options{}, withoutLag())
	createHInstance(t, h.p, inst)
	const lock = 5 * time.Second
	m1, m2, _ := heldThenNewer(t, h, inst, lock) // the holder dies

	var clock jumpAfterDiscovery
	hooks := &testhooks.Hooks{After: func(_ context.Context, c testhooks.Call, err error) error {
		clock.observe(c)
		return err
	}}
	taker := h.openWith(testhooks.Seam{Now: clock.now, Cosmos: hooks}, cdb.Options{MaxClockSkew: -1})

	item, _ := fetchEventually(t, taker, inst)
	require.True(t, clock.jumped.Load(), "the clock jumped between discovery and lock")
	require.Equal(t, []duroxide.WorkItem{m1, m2}, item.Messages, "the dead holder's message first, then the newer one")
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
	h := newHarness(t, cdb.Options{}, withoutLag())
	createHInstance(t, h.p, inst)
	m1, m2, holder := heldThenNewer(t, h, inst, hLock)

	g := newGate(t)
	lock := g.at(false, func(c testhooks.Call) bool { return c.Op == cdb.OpBatch && c.PartitionKey == inst })
	other := h.openWith(testhooks.Seam{Cosmos: g.hooks()}, cdb.Options{})
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

// A message written without a delay is visible at once to every process
// whose clock is within MaxClockSkew of the writer's: one written by a
// process whose clock runs ahead must not wait, invisible, until the
// clock of the process that owns its instance catches up (the chaos soak
// at ±60 s saw hand-offs — a child's start, an activity and its result —
// each wait up to 120 s). Covered: an activity a turn schedules, an
// orchestrator item a turn writes, an activity's result, an enqueue.
func TestImmediateMessagesFromAheadClockVisibleAtOnce(t *testing.T) {
	const inst = "ahead-writes"
	ctx := t.Context()
	h := newHarness(t, cdb.Options{}, withoutLag())
	const skew = time.Minute
	ahead := h.openWith(testhooks.Seam{Now: func() time.Time { return time.Now().Add(skew) }}, cdb.Options{MaxClockSkew: 2 * skew})
	onTime := h.open(cdb.Options{MaxClockSkew: 2 * skew})

	require.NoError(t, ahead.EnqueueForOrchestrator(ctx, hStart(inst), 0))
	first := mustFetchOrch(t, onTime, inst)
	act := duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: "A", Input: "x"}
	raised := duroxide.ExternalRaisedItem{Instance: inst, Name: "self", Data: "{}"}
	require.NoError(t, onTime.AckOrchestrationItem(ctx, first.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch")}, Metadata: hRunning("HOrch")}))

	// A turn on the process ahead schedules an activity and writes an
	// orchestrator item for its own instance.
	require.NoError(t, ahead.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "poke", Data: "{}"}, 0))
	turn, err := ahead.FetchOrchestrationItem(ctx, hLock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, turn)
	require.NoError(t, ahead.AckOrchestrationItem(ctx, turn.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		WorkerItems: []duroxide.WorkItem{act}, OrchestratorItems: []duroxide.WorkItem{raised}, Metadata: hRunning("HOrch")}))

	w, err := onTime.FetchWorkItem(ctx, hLock, 0, nil, duroxide.TagFilter{Mode: duroxide.TagDefaultOnly})
	require.NoError(t, err)
	require.NotNil(t, w, "the activity the process ahead scheduled is visible at once")
	require.NoError(t, onTime.AbandonWorkItem(ctx, w.LockToken, 0, true))
	item, err := onTime.FetchOrchestrationItem(ctx, hLock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item, "the orchestrator item the process ahead wrote is visible at once")
	require.Equal(t, []duroxide.WorkItem{raised}, item.Messages)
	require.NoError(t, onTime.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: hRunning("HOrch")}))

	// The process ahead runs the activity; its result, and a message it
	// enqueues, are visible at once.
	w, err = ahead.FetchWorkItem(ctx, hLock, 0, nil, duroxide.TagFilter{Mode: duroxide.TagDefaultOnly})
	require.NoError(t, err)
	require.NotNil(t, w)
	done := duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "r"}
	require.NoError(t, ahead.AckWorkItem(ctx, w.LockToken, done))
	msg := duroxide.QueueMessageItem{Instance: inst, Name: "q", Data: "m"}
	require.NoError(t, ahead.EnqueueForOrchestrator(ctx, msg, 0))
	item, err = onTime.FetchOrchestrationItem(ctx, hLock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item, "the result and the message from the process ahead are visible at once")
	require.Equal(t, []duroxide.WorkItem{done, msg}, item.Messages)
}

// A takeover locks the stragglers (messages the lapsed lock held that
// discovery did not see) with a second batch. When the service applies
// that batch but its answer is lost, the fetch must not give back the
// instance and the messages it knows while the stragglers stay locked
// under its token: newer messages would then be delivered without them,
// and an instance that completes meanwhile never receives them (the chaos
// soak lost messages so). Either the lock is confirmed and the turn gets
// every message, or, if no read answers, everything is left to lapse
// together and the next fetch gets every message.
func TestTakeoverStragglersLockAppliedButAnswerLost(t *testing.T) {
	for _, readsFail := range []bool{false, true} {
		name := "confirmed"
		if readsFail {
			name = "unknown_until_the_lock_lapses"
		}
		t.Run(name, func(t *testing.T) {
			inst := "straggler-ambiguous-" + name
			ctx := t.Context()
			h := newHarness(t, cdb.Options{}, withoutLag())
			createHInstance(t, h.p, inst)
			const lock = time.Second
			m1, m2, _ := heldThenNewer(t, h, inst, lock) // the holder dies

			// The taker's discovery sees m2 only; the straggler batch that
			// locks m1 is applied and answered 503. With readsFail, the
			// reads that could confirm it fail too: batches of one read
			// (the primary read of m1) and point reads, not the two-op
			// release the fix must not send.
			var clock jumpAfterDiscovery
			var armed, faulted, readsDown atomic.Bool
			unavailable := func(c testhooks.Call) error {
				return &cdb.RequestError{Call: c, StatusCode: http.StatusServiceUnavailable}
			}
			hooks := &testhooks.Hooks{
				Before: func(_ context.Context, c testhooks.Call) error {
					if readsDown.Load() && (c.Op == cdb.OpRead || c.Op == cdb.OpBatch && c.Operations == 1) {
						return unavailable(c)
					}
					return nil
				},
				After: func(_ context.Context, c testhooks.Call, err error) error {
					clock.observe(c)
					switch {
					case c.Op == cdb.OpQuery && c.PartitionKey == inst && clock.jumped.Load() && !faulted.Load():
						armed.Store(true) // the takeover's query for stragglers: their batch is next
					case c.Op == cdb.OpBatch && err == nil && armed.CompareAndSwap(true, false):
						faulted.Store(true)
						readsDown.Store(readsFail)
						return unavailable(c)
					}
					return err
				},
			}
			taker := h.openWith(testhooks.Seam{Now: clock.now, Cosmos: hooks}, cdb.Options{MaxClockSkew: -1})

			var got []duroxide.WorkItem
			eventually(t, 30*time.Second, func() bool {
				item, err := taker.FetchOrchestrationItem(ctx, lock, 0, nil)
				if err != nil {
					require.True(t, readsFail, "the straggler lock was applied and readable: the fetch confirms it (%v)", err)
					require.True(t, duroxide.IsRetryable(err), "%v", err)
					readsDown.Store(false)
					return false
				}
				if item == nil {
					return false
				}
				got = item.Messages
				return true
			}, "the taker never fetched the instance")
			require.True(t, faulted.Load(), "the straggler batch met the fault")
			require.Equal(t, []duroxide.WorkItem{m1, m2}, got, "the dead holder's message first, then the newer one")
		})
	}
}

// A turn whose ack finds a message it consumed already gone (another turn
// consumed it: the turn ran on a message already in history) is dropped
// as a lost lock, not failed as a refused commit, and its lock is given
// back at once so the next fetch takes the instance from its current
// state. Before, the runtime took the 404 for a permanent refusal and
// failed the instance; the failure's commit met the same 404, and so did
// the abandon, which left the instance locked until its lock lapsed.
func TestAckOfATurnWhoseMessageWasConsumedElsewhere(t *testing.T) {
	const inst = "consumed-elsewhere"
	ctx := t.Context()
	h := newHarness(t, cdb.Options{}, withoutLag())
	createHInstance(t, h.p, inst)
	_, m2, item := heldThenNewer(t, h, inst, hLock)
	for _, d := range h.docsWhere("orch_queue", inst) {
		if d["lockToken"] != nil { // m1: another turn consumes it
			_, err := h.sdk.DeleteItem(ctx, azcosmos.NewPartitionKeyString(inst), d["id"].(string), nil)
			require.NoError(t, err)
		}
	}

	err := h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{hEvent(inst, 1, 2, duroxide.ExternalEventPersistent{Name: "q", Data: "m1"})}, Metadata: hRunning("HOrch")})
	require.ErrorIs(t, err, duroxide.ErrLockLost, "a stale turn is dropped, not a reason to fail the instance")
	next := mustFetchOrch(t, h.p, inst)
	require.Equal(t, []duroxide.WorkItem{m2}, next.Messages, "the lock was given back at once")
	require.Len(t, next.History, 1, "the stale turn wrote nothing")
}
