package durable

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// ackGate holds acks of a provider until opened: the first ack of each
// queue it is armed for blocks, so a test can see what the runtime does
// while an ack is on its way to the store.
type ackGate struct {
	duroxide.Provider
	holdWork, holdOrch atomic.Bool
	open               chan struct{}
	held               chan string // the instance whose ack is held
	once               sync.Once
}

func newAckGate(p duroxide.Provider) *ackGate {
	return &ackGate{Provider: p, open: make(chan struct{}), held: make(chan string, 2)}
}

func (g *ackGate) release() { g.once.Do(func() { close(g.open) }) }

func (g *ackGate) hold(ctx context.Context, instance string) {
	g.held <- instance
	select {
	case <-g.open:
	case <-ctx.Done():
	}
}

func (g *ackGate) AckWorkItem(ctx context.Context, token string, completion duroxide.WorkItem) error {
	if completion != nil && g.holdWork.CompareAndSwap(true, false) {
		g.hold(ctx, completion.InstanceID())
	}
	return g.Provider.AckWorkItem(ctx, token, completion)
}

func (g *ackGate) AckOrchestrationItem(ctx context.Context, token string, c duroxide.OrchestrationCommit) error {
	if g.holdOrch.CompareAndSwap(true, false) {
		g.hold(ctx, "")
	}
	return g.Provider.AckOrchestrationItem(ctx, token, c)
}

// TestAWorkerSlotIsFreeWhileItsActivityIsAcked: one worker slot, and the
// first activity's ack held at the store. The slot counts running code,
// not round trips, so the next activities run while that ack waits, one
// at a time.
func TestAWorkerSlotIsFreeWhileItsActivityIsAcked(t *testing.T) {
	t.Parallel()
	g := newAckGate(newMemProvider())
	var running, most, ran atomic.Int64
	reg := NewRegistry()
	require.NoError(t, reg.AddActivity("Work", func(_ ActivityContext, in string) (string, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		ran.Add(1)
		return in, nil
	}))
	require.NoError(t, reg.AddOrchestration("FanOut", func(ctx *OrchestrationContext, _ string) (string, error) {
		fs := make([]*Future[string], 3)
		for i := range fs {
			fs[i] = CallActivity[string](ctx, "Work", "x")
		}
		for _, f := range fs {
			if _, err := f.Await(); err != nil {
				return "", err
			}
		}
		return "done", nil
	}))
	g.holdWork.Store(true)
	rt := startRuntime(t, g, reg, Options{WorkerConcurrency: 1, WorkerFetchAhead: 1})
	t.Cleanup(g.release) // before the runtime shuts down: a held ack would stall it
	require.NoError(t, rt.Client().StartOrchestration(t.Context(), "fan", "FanOut", ""))
	<-g.held
	requireEventually(t, func() bool { return ran.Load() == 3 }, "the other activities run while the first one's ack waits")
	g.release()
	st := waitDone(t, rt.Client(), "fan")
	require.Equal(t, StateCompleted, st.State, st.FailureMessage())
	require.Equal(t, int64(1), most.Load(), "one slot: one activity ran at a time")
}

// TestAnOrchestrationSlotIsFreeWhileItsTurnIsAcked: one orchestration
// slot, and one instance's commit held at the store: another instance's
// turn runs meanwhile.
func TestAnOrchestrationSlotIsFreeWhileItsTurnIsAcked(t *testing.T) {
	t.Parallel()
	g := newAckGate(newMemProvider())
	reg := NewRegistry()
	require.NoError(t, reg.AddOrchestration("Done", func(*OrchestrationContext, string) (string, error) { return "ok", nil }))
	g.holdOrch.Store(true)
	rt := startRuntime(t, g, reg, Options{OrchestrationConcurrency: 1, OrchestrationFetchAhead: 1, WorkerConcurrency: NoSlots})
	t.Cleanup(g.release) // before the runtime shuts down: a held ack would stall it
	c := rt.Client()
	require.NoError(t, c.StartOrchestration(t.Context(), "first", "Done", ""))
	<-g.held
	require.NoError(t, c.StartOrchestration(t.Context(), "second", "Done", ""))
	st, err := c.WaitForOrchestration(t.Context(), "second", WaitOptions{Timeout: testWait})
	require.NoError(t, err, "the second instance's turn runs while the first one's commit waits")
	require.Equal(t, StateCompleted, st.State)
	g.release()
	require.Equal(t, StateCompleted, waitDone(t, c, "first").State)
}

// TestWithoutFetchAheadASlotIsHeldFromFetchToAck: NoSlots as the
// fetch-ahead keeps one loop per slot, so while the only slot's ack
// waits no other activity is fetched.
func TestWithoutFetchAheadASlotIsHeldFromFetchToAck(t *testing.T) {
	t.Parallel()
	counting := &fetchCountingProvider{Provider: newMemProvider()}
	g := newAckGate(counting)
	reg := NewRegistry()
	require.NoError(t, reg.AddActivity("Work", func(_ ActivityContext, in string) (string, error) { return in, nil }))
	require.NoError(t, reg.AddOrchestration("Two", func(ctx *OrchestrationContext, _ string) (string, error) {
		a, b := CallActivity[string](ctx, "Work", "a"), CallActivity[string](ctx, "Work", "b")
		if _, err := a.Await(); err != nil {
			return "", err
		}
		return b.Await()
	}))
	g.holdWork.Store(true)
	rt := startRuntime(t, g, reg, Options{WorkerConcurrency: 1, WorkerFetchAhead: NoSlots})
	t.Cleanup(g.release) // before the runtime shuts down: a held ack would stall it
	require.NoError(t, rt.Client().StartOrchestration(t.Context(), "two", "Two", ""))
	<-g.held
	fetches := counting.workFetches.Load()
	time.Sleep(100 * time.Millisecond) // several idle-poll intervals of fastOptions
	require.Equal(t, fetches, counting.workFetches.Load(), "the only loop is acking: nothing fetches")
	g.release()
	require.Equal(t, StateCompleted, waitDone(t, rt.Client(), "two").State)
}

// TestSessionReservationsKeepTheCap: fetches that may take a new session
// reserve room first, so however many loops fetch at once the runtime
// never counts more sessions (in flight or reserved) than the cap. A
// fetch finding the room held by fetches under way is refused as
// crowded (its loop looks again soon); one finding it full of sessions
// in flight is refused plainly, and the session that frees room asks for
// a wake-up.
func TestSessionReservationsKeepTheCap(t *testing.T) {
	var s sessionTracker
	reserve := func() (ok, crowded bool) { return s.reserve(2) }
	ok, _ := reserve()
	require.True(t, ok)
	ok, _ = reserve()
	require.True(t, ok)
	ok, crowded := reserve()
	require.False(t, ok, "a third fetch at once has no room")
	require.True(t, crowded, "only fetches under way hold the room")
	doneA := s.take("a")
	s.unreserve() // the second fetch took no session item
	ok, _ = reserve()
	require.True(t, ok, "room once a reservation went unused")
	doneB := s.take("b")
	ok, crowded = reserve()
	require.False(t, ok, "two sessions in flight fill the cap")
	require.False(t, crowded, "full, not crowded")
	require.True(t, doneA(2), "room again at the cap: wake the loops")
	ok, _ = reserve()
	require.True(t, ok)
	doneB2 := s.take("b") // a second activity of session b
	require.Len(t, s.m, 1)
	require.False(t, doneB(2), "b is still in flight and the cap was not full")
	require.False(t, doneB2(2), "the cap was not full")
	require.Empty(t, s.m)
	require.Zero(t, s.reserved)
}

// TestFetchAheadDefaults: by default a queue fetches ahead with as many
// loops as it has slots, at most defaultFetchAheadCap; NoSlots (or any
// negative) turns it off, and a queue without slots has none.
func TestFetchAheadDefaults(t *testing.T) {
	for _, c := range []struct{ opt, slots, want int }{
		{0, 2, 2}, {0, 8, defaultFetchAheadCap}, {0, 32, defaultFetchAheadCap}, {NoSlots, 8, 0}, {-5, 8, 0}, {6, 2, 6}, {0, 0, 0}, {3, NoSlots, 0},
	} {
		require.Equalf(t, c.want, fetchAhead(c.opt, c.slots), "fetchAhead(%d, %d)", c.opt, c.slots)
	}
}

// ackFetchingProvider gives memprovider the WorkAckFetcher capability:
// an ack, then a fetch of an item of no session.
type ackFetchingProvider struct {
	duroxide.Provider
	carried atomic.Int64
}

func (p *ackFetchingProvider) AckWorkItemAndFetch(ctx context.Context, token string, completion duroxide.WorkItem, lock time.Duration, tags duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	if err := p.Provider.AckWorkItem(ctx, token, completion); err != nil {
		return nil, err
	}
	next, err := p.Provider.FetchWorkItem(ctx, lock, 0, nil, tags)
	if err != nil || next == nil {
		return nil, nil // the ack stands; a failed fetch only means no next item
	}
	p.carried.Add(1)
	return next, nil
}

// TestAnAckCarriesTheNextActivity: with a provider whose acks lock the
// next item, the runtime runs that item next instead of fetching it, and
// every activity of a fan-out runs once.
func TestAnAckCarriesTheNextActivity(t *testing.T) {
	p := &ackFetchingProvider{Provider: newMemProvider()}
	var runs atomic.Int64
	reg := NewRegistry()
	require.NoError(t, reg.AddActivity("A", func(_ ActivityContext, in string) (string, error) {
		runs.Add(1)
		return in, nil
	}))
	require.NoError(t, reg.AddOrchestration("Fan", func(ctx *OrchestrationContext, _ string) (string, error) {
		var fs []*Future[string]
		for i := range 6 {
			fs = append(fs, CallActivity[string](ctx, "A", fmt.Sprint(i)))
		}
		out := ""
		for _, f := range fs {
			v, err := f.Await()
			if err != nil {
				return "", err
			}
			out += v
		}
		return out, nil
	}))
	startRuntime(t, p, reg, Options{WorkerConcurrency: 1, WorkerFetchAhead: NoSlots})
	c := NewClient(p)
	require.NoError(t, c.StartOrchestration(t.Context(), "fan", "Fan", ""))
	st, err := c.WaitForOrchestration(t.Context(), "fan", WaitOptions{Timeout: 30 * time.Second})
	require.NoError(t, err)
	require.Equal(t, "012345", st.Output)
	require.Equal(t, int64(6), runs.Load(), "every activity once")
	require.Positive(t, p.carried.Load(), "acks carried items to the next run")
}

// A freed slot goes to the waiter enqueued first, not the one that began
// waiting first; waiters without an enqueue time are the oldest, and keep
// their arrival order; one whose wait ends (lost lock) is skipped.
func TestAFreedSlotGoesToTheItemEnqueuedFirst(t *testing.T) {
	s := newRunSlots(1, func(int64) {})
	first := s.acquire(nil, nil)
	require.NotNil(t, first)
	base := time.Unix(1_000, 0)
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	lost := make(chan struct{})
	wait := func(name string, at time.Time, lost chan struct{}) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := s.acquireFor(at, lost, nil)
			if h == nil {
				return
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			h.release()
		}()
		require.Eventually(t, func() bool { // queued before the next one arrives
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, w := range s.waits {
				if w.at.Equal(at) && w.seq == s.seq {
					return true
				}
			}
			return false
		}, 10*time.Second, time.Millisecond)
	}
	wait("new", base.Add(3*time.Second), nil)
	wait("middle", base.Add(2*time.Second), nil)
	wait("lost", base, lost)
	wait("untimed-1", time.Time{}, nil)
	wait("untimed-2", time.Time{}, nil)
	close(lost)
	require.Eventually(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.waits) == 4 }, 10*time.Second, time.Millisecond)
	first.release()
	wg.Wait()
	require.Equal(t, []string{"untimed-1", "untimed-2", "middle", "new"}, order)
	require.Equal(t, 1, s.free, "the slot is free again")
}
