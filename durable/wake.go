package durable

import (
	"sync"

	"github.com/duroxide-go/cdb/duroxide"
)

// Local wake-ups. Dispatchers back off while fetches come back empty, so
// an idle runtime costs a short-polling store little. Work enqueued in this
// process (by a Client, or by a Runtime's own acks) wakes the runtimes
// sharing that provider at once, so the backoff only delays work enqueued
// by other processes.

// wakers maps a provider to the wake signals of the runtimes using it.
var wakers = struct {
	sync.Mutex
	m map[duroxide.Provider][]*queueWaker
}{m: map[duroxide.Provider][]*queueWaker{}}

// queueWaker is one runtime's wake signals, one per queue.
type queueWaker struct {
	orch, work *signal
}

// register adds w for p; the returned func removes it.
func registerWaker(p duroxide.Provider, w *queueWaker) (unregister func()) {
	if !comparableProvider(p) {
		return func() {}
	}
	wakers.Lock()
	wakers.m[p] = append(wakers.m[p], w)
	wakers.Unlock()
	return func() {
		wakers.Lock()
		defer wakers.Unlock()
		ws := wakers.m[p]
		for i, x := range ws {
			if x == w {
				ws = append(ws[:i:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(wakers.m, p)
		} else {
			wakers.m[p] = ws
		}
	}
}

// wake signals every runtime on p that q may have work.
func wake(p duroxide.Provider, q duroxide.Queue) {
	if !comparableProvider(p) {
		return
	}
	wakers.Lock()
	ws := wakers.m[p]
	wakers.Unlock()
	for _, w := range ws {
		if q == duroxide.WorkerQueue {
			w.work.fire()
		} else {
			w.orch.fire()
		}
	}
}

// comparableProvider reports whether p can key a map; a provider that is a
// non-pointer struct holding a slice or map cannot, and then simply gets
// no local wake-ups.
func comparableProvider(p duroxide.Provider) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	_ = map[duroxide.Provider]struct{}{p: {}}
	return p != nil
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
