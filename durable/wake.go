package durable

import (
	"slices"
	"sync"

	"github.com/duroxide-go/cdb/duroxide"
)

// Local wake-ups. Dispatchers back off while fetches come back empty, so
// an idle runtime costs a short-polling store little. A provider that is
// a duroxide.EnqueueNotifier tells the runtime of every enqueue it makes
// in this process (this runtime's acks and Client writes, a NewClient's
// writes, other runtimes' acks), so the backoff only delays work enqueued
// by other processes; over a provider without the capability the runtime
// wakes itself after its own acks and its Client's writes.
//
// An orchestrator message readies one instance, so it wakes one loop
// (and a loop that finds more ready than it takes wakes the next); waking
// them all made every sleeping loop query and all but one come back
// empty. A message for an instance whose lock this runtime holds wakes
// nobody: the loop running that instance fetches again after its turn
// (localTurns). A worker enqueue may ready many activities: it wakes
// every worker loop.

// subscribeEnqueues subscribes rt to its provider's enqueue notifications,
// when it has them; the returned func cancels the subscription.
func (rt *Runtime) subscribeEnqueues() (cancel func()) {
	n, ok := rt.p.(duroxide.EnqueueNotifier)
	if !ok {
		return func() {}
	}
	rt.notified = true
	return n.NotifyEnqueues(rt.wakeFor)
}

// wakeFor tells rt's dispatchers of q that instance may have work.
func (rt *Runtime) wakeFor(q duroxide.Queue, instance string) {
	switch {
	case q == duroxide.WorkerQueue:
		rt.workWake.fire()
	case rt.turns.note(instance):
	default:
		rt.orchWake.fireOne()
	}
}

// selfWake is wakeFor for work this runtime (or its Client) enqueued
// itself: the provider's notification says so already when it has the
// capability.
func (rt *Runtime) selfWake(q duroxide.Queue, instance string) {
	if !rt.notified {
		rt.wakeFor(q, instance)
	}
}

// localTurns are the instances whose lock this runtime's orchestration
// loops hold, from the fetch until the loop is done with the item; the
// instances it was told have work and no loop holds (ready, for loops to
// fetch by name: duroxide.InstanceFetcher); and the last notifications:
// one that came during the fetch that locked its instance woke a loop
// that found the instance busy, so the holder must look again.
type localTurns struct {
	mu     sync.Mutex
	m      map[string]*localTurn
	ready  []string // oldest first, each once
	queued map[string]bool
	seq    uint64
	recent [recentNotes]string // instance of notification seq, at seq%recentNotes
	// acking counts the activity acks of each instance this runtime has
	// in flight: a ready instance with one is not taken yet (take), so
	// completions that land together run in one turn; the last ack to
	// end hands it on (ackEnd).
	acking map[string]int
}

const (
	recentNotes = 256
	// maxReady bounds the ready list: past it, notifications only wake,
	// and discovery finds the work.
	maxReady = 4096
)

type localTurn struct {
	holders int
	again   bool // a message came for it meanwhile
}

// mark returns the notification count, taken before a fetch.
func (l *localTurns) mark() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// begin records that a loop holds instance, locked by a fetch that began
// at mark since.
func (l *localTurns) begin(instance string, since uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*localTurn{}
	}
	e := l.m[instance]
	if e == nil {
		e = &localTurn{}
		l.m[instance] = e
	}
	e.holders++
	e.again = e.again || l.notedSince(instance, since) || l.queued[instance]
	if l.queued[instance] {
		delete(l.queued, instance)
		l.ready = slices.DeleteFunc(l.ready, func(s string) bool { return s == instance })
	}
}

// notedSince reports whether instance was notified after mark since (yes
// when the record of it is gone).
func (l *localTurns) notedSince(instance string, since uint64) bool {
	if l.seq-since >= recentNotes {
		return true
	}
	for s := since + 1; s <= l.seq; s++ {
		if l.recent[s%recentNotes] == instance {
			return true
		}
	}
	return false
}

// end reports whether a message came for instance while it was held.
func (l *localTurns) end(instance string) (again bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.m[instance]
	if e == nil {
		return false
	}
	again = e.again
	e.again = false
	if e.holders--; e.holders == 0 {
		delete(l.m, instance)
	}
	return again
}

// note records a notification for instance, and reports whether nobody
// need be woken for it: a loop holds the instance (and will look again),
// or it is on the ready list already (a loop was woken for it).
func (l *localTurns) note(instance string) bool {
	if instance == "" {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	l.recent[l.seq%recentNotes] = instance
	if e := l.m[instance]; e != nil {
		e.again = true
		return true
	}
	if l.queued[instance] {
		return true
	}
	if len(l.ready) < maxReady {
		if l.queued == nil {
			l.queued = map[string]bool{}
		}
		l.queued[instance] = true
		l.ready = append(l.ready, instance)
	}
	return false
}

// take removes and returns the oldest ready instance with no activity
// ack in flight ("" when none); deferred reports that instances with acks
// in flight wait on the list.
func (l *localTurns) take() (inst string, deferred bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, r := range l.ready {
		if l.acking[r] > 0 {
			deferred = true
			continue
		}
		l.ready = slices.Delete(l.ready, i, i+1)
		delete(l.queued, r)
		return r, deferred
	}
	return "", deferred
}

// pending reports whether instances with no ack in flight are on the
// ready list.
func (l *localTurns) pending() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.ready {
		if l.acking[r] == 0 {
			return true
		}
	}
	return false
}

// ackBegin records an activity ack of instance in flight.
func (l *localTurns) ackBegin(instance string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.acking == nil {
		l.acking = map[string]int{}
	}
	l.acking[instance]++
}

// ackEnd records the end of an ack ackBegin recorded; ready reports that
// it was the instance's last and the instance waits on the ready list: a
// loop must be woken for it.
func (l *localTurns) ackEnd(instance string) (ready bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.acking[instance]--; l.acking[instance] > 0 {
		return false
	}
	delete(l.acking, instance)
	return l.queued[instance]
}

// acks reports whether an activity ack of instance is in flight.
func (l *localTurns) acks(instance string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acking[instance] > 0
}

// signal wakes the dispatcher loops of one queue. A loop joins before it
// fetches, so a wake-up during its fetch is not missed, and leaves when it
// fetches again. A loop that has not joined needs no wake-up: it is busy
// and fetches when it is done.
type signal struct {
	mu      sync.Mutex
	waiters []*waiter // oldest first
	// missed counts wake-ups that may have reached no loop able to act
	// on them: a fireOne with nobody joined, and every fire (loops not
	// joined hear nothing). See waiter.quiet.
	missed uint64
}

// waiter is one loop's registration with a signal.
type waiter struct {
	s        *signal
	ch       chan struct{} // closed when this loop is woken
	sleeping bool
	missed   uint64 // the signal's count when it joined
}

func newSignal() *signal { return &signal{} }

// join registers a loop about to fetch; its channel is closed by the next
// fire, or by a fireOne that picks it.
func (s *signal) join() *waiter {
	w := &waiter{s: s, ch: make(chan struct{})}
	s.mu.Lock()
	w.missed = s.missed
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	return w
}

// sleep marks w as waiting for a wake-up rather than fetching, so fireOne
// prefers it: a loop still fetching may see the new work anyway.
func (w *waiter) sleep() <-chan struct{} {
	w.s.mu.Lock()
	w.sleeping = true
	w.s.mu.Unlock()
	return w.ch
}

// quiet reports whether every wake-up since w joined went to a loop that
// fetches after it: then what w's fetch saw, and the loops woken since,
// cover all the work this process knows of.
func (w *waiter) quiet() bool {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.s.missed == w.missed
}

// leave unregisters w and reports whether it had been woken.
func (w *waiter) leave() (woken bool) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, o := range s.waiters {
		if o == w {
			s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
			return false
		}
	}
	return true
}

// fire wakes every registered loop.
func (s *signal) fire() {
	s.mu.Lock()
	s.missed++
	ws := s.waiters
	s.waiters = nil
	s.mu.Unlock()
	for _, w := range ws {
		close(w.ch)
	}
}

// fireOne wakes one registered loop: the longest asleep, else the oldest
// still fetching (it fetches again when its fetch is done).
func (s *signal) fireOne() {
	s.mu.Lock()
	if len(s.waiters) == 0 {
		s.missed++
		s.mu.Unlock()
		return
	}
	pick := 0
	for i, w := range s.waiters {
		if w.sleeping {
			pick = i
			break
		}
	}
	w := s.waiters[pick]
	s.waiters = append(s.waiters[:pick], s.waiters[pick+1:]...)
	s.mu.Unlock()
	close(w.ch)
}

// wakeSleeper wakes the longest-asleep registered loop, if any. Unlike
// fireOne it is not for work, so a loop still fetching needs no wake-up
// (it polls if its fetch is empty) and none counts as missed.
func (s *signal) wakeSleeper() {
	s.mu.Lock()
	for i, w := range s.waiters {
		if w.sleeping {
			s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
			s.mu.Unlock()
			close(w.ch)
			return
		}
	}
	s.mu.Unlock()
}
