package durable

import "sync"

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

// runSlots is a queue's slots: at most its capacity runs at once.
type runSlots struct {
	c    chan struct{}
	busy func(delta int64) // the busy-slots metric
}

func newRunSlots(n int, busy func(int64)) *runSlots {
	return &runSlots{c: make(chan struct{}, max(n, 1)), busy: busy}
}

// acquire takes a slot, or returns nil when lost or done ends the wait
// first (the item's lock is gone, or the runtime is stopping).
func (s *runSlots) acquire(lost, done <-chan struct{}) *slotHold {
	select {
	case s.c <- struct{}{}:
	case <-lost:
		return nil
	case <-done:
		return nil
	}
	s.busy(1)
	return &slotHold{slots: s}
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
		<-h.slots.c
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

// handOff resolves WorkerHandOff: four times the worker loops by default (0;
// docs/performance.md measured 1, 2, 4 and 8 times: more cut requests
// further and lengthened the tail), none for NoSlots or any negative,
// and none without worker slots.
func handOff(opt, loops, slots int) int {
	if slots <= 0 || opt < 0 {
		return 0
	}
	if opt == 0 {
		return 4 * loops
	}
	return opt
}
