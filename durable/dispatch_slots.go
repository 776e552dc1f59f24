package durable

import (
	"slices"
	"sync"
	"time"
)

// Slots count running code, not round trips. A queue's loops fetch,
// run and ack; the run is what holds a slot (an activity's function, an
// orchestration turn's replay), so a slot is free while its loop waits
// for the store. There are more loops than slots, by the fetch-ahead
// (Options.WorkerFetchAhead, Options.OrchestrationFetchAhead): while
// every slot runs, the extra loops fetch the next items, and a loop that
// finished its run acks it while another loop's item runs. An item
// fetched ahead keeps its lock renewed while it waits for a slot; a
// turn's ack still ends before its instance can be fetched again, since
// the instance stays locked until the ack.

// runSlots is a queue's slots: at most its capacity runs at once. A
// freed slot goes to the waiting item enqueued first (by
// LockedWorkItem.EnqueuedAt; items without one, and turns, in the order
// they began to wait). Activities handed off by a turn's ack
// (dispatch_handoff.go) and activities fetched from the store wait side
// by side, and neither kind is always the older: with the channel's
// arrival order, at 8/8 slots and 100 in flight, the store's items waited
// behind newer handed ones and p99 was 15 times p50 (docs/performance.md).
type runSlots struct {
	mu    sync.Mutex
	free  int
	seq   uint64
	waits []*slotWait
	busy  func(delta int64) // the busy-slots metric
}

// slotWait is one item waiting for a slot; ch is closed when it gets one.
type slotWait struct {
	ch  chan struct{}
	at  time.Time
	seq uint64
}

func (w *slotWait) before(o *slotWait) bool {
	if !w.at.Equal(o.at) {
		return w.at.Before(o.at)
	}
	return w.seq < o.seq
}

func newRunSlots(n int, busy func(int64)) *runSlots {
	return &runSlots{free: max(n, 1), busy: busy}
}

// acquire takes a slot, or returns nil when lost or done ends the wait
// first (the item's lock is gone, or the runtime is stopping).
func (s *runSlots) acquire(lost, done <-chan struct{}) *slotHold {
	return s.acquireFor(time.Time{}, lost, done)
}

// acquireFor is acquire for an item enqueued at enqueued.
func (s *runSlots) acquireFor(enqueued time.Time, lost, done <-chan struct{}) *slotHold {
	s.mu.Lock()
	if s.free > 0 { // then nobody waits: a freed slot goes to a waiter first
		s.free--
		s.mu.Unlock()
		return s.held()
	}
	s.seq++
	w := &slotWait{ch: make(chan struct{}), at: enqueued, seq: s.seq}
	s.waits = append(s.waits, w)
	s.mu.Unlock()
	select {
	case <-w.ch:
		return s.held()
	case <-lost:
	case <-done:
	}
	s.mu.Lock()
	if i := slices.Index(s.waits, w); i >= 0 {
		s.waits = slices.Delete(s.waits, i, i+1)
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	s.give() // granted as the wait ended: passed on
	return nil
}

func (s *runSlots) held() *slotHold {
	s.busy(1)
	return &slotHold{slots: s}
}

// give passes a freed slot to the waiter enqueued first, or frees it.
func (s *runSlots) give() {
	s.mu.Lock()
	if len(s.waits) == 0 {
		s.free++
		s.mu.Unlock()
		return
	}
	first := 0
	for i, w := range s.waits {
		if w.before(s.waits[first]) {
			first = i
		}
	}
	w := s.waits[first]
	s.waits = slices.Delete(s.waits, first, first+1)
	s.mu.Unlock()
	close(w.ch)
}

// slotHold is one run's hold on a slot, released once however often
// release is called: a turn gives its slot back as its ack begins, and
// its loop releases again when the turn is over.
type slotHold struct {
	once  sync.Once
	slots *runSlots
}

func (h *slotHold) release() {
	if h == nil {
		return
	}
	h.once.Do(func() {
		h.slots.busy(-1)
		h.slots.give()
	})
}

// defaultFetchAheadCap bounds the default fetch-ahead: a few loops hide
// the fetch round trips of many slots, and every loop beyond them polls
// for nothing (at 32/32 slots, 32 loops fetching ahead made 59 requests
// per orchestration where 4 made 46, for no more throughput;
// docs/performance.md).
const defaultFetchAheadCap = 4

// fetchAhead resolves a fetch-ahead option for a queue of n slots: as
// many as the slots, at most defaultFetchAheadCap, by default (0); none
// for NoSlots or any negative, and none for a queue without slots. A
// loop reserves room for a session before a fetch that may claim one
// (sessionTracker), so the loops together never claim more than
// MaxSessionsPerRuntime.
func fetchAhead(opt, n int) int {
	if n <= 0 || opt < 0 {
		return 0
	}
	if opt == 0 {
		return min(n, defaultFetchAheadCap)
	}
	return opt
}

// defaultHandOff is WorkerHandOff's default: like a message broker's
// prefetch count, enough that a saturated runtime's slots take every
// activity its turns schedule in order, without a fetch (at 2/2 slots and
// 20 in flight, 16 made 24 requests per orchestration, 64 made 19, with
// p99 within 1.1 times p50; docs/performance.md).
const defaultHandOff = 64

// handOff resolves WorkerHandOff for a queue of slots worker slots:
// defaultHandOff by default (0), none for NoSlots or any negative, and
// none without worker slots.
func handOff(opt, slots int) int {
	if slots <= 0 || opt < 0 {
		return 0
	}
	if opt == 0 {
		return defaultHandOff
	}
	return opt
}
