package durable

import (
	"sync"

	"github.com/duroxide-go/cdb/duroxide"
)

// Local wake-ups. Dispatchers back off while fetches come back empty, so
// an idle runtime costs a short-polling store little. A runtime wakes its
// own dispatchers after its acks enqueue work, and its Client wakes them
// after a write. A provider that is a duroxide.EnqueueNotifier also tells
// the runtime of every enqueue it makes in this process (a NewClient's
// writes, other runtimes' acks), so the backoff only delays work enqueued
// by other processes, or through a provider without the capability.

// subscribeEnqueues subscribes rt to its provider's enqueue notifications,
// when it has them; the returned func cancels the subscription.
func (rt *Runtime) subscribeEnqueues() (cancel func()) {
	n, ok := rt.p.(duroxide.EnqueueNotifier)
	if !ok {
		return func() {}
	}
	return n.NotifyEnqueues(rt.wake)
}

// wake tells rt's dispatchers of q that it may have work.
func (rt *Runtime) wake(q duroxide.Queue) {
	if q == duroxide.WorkerQueue {
		rt.workWake.fire()
	} else {
		rt.orchWake.fire()
	}
}

// signal is a broadcast that can be fired any number of times: waiters
// take the current channel, fire closes it and installs a new one.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func newSignal() *signal { return &signal{ch: make(chan struct{})} }

// wait returns the channel closed by the next fire.
func (s *signal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

// fire wakes every current waiter.
func (s *signal) fire() {
	s.mu.Lock()
	close(s.ch)
	s.ch = make(chan struct{})
	s.mu.Unlock()
}
