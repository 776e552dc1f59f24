// Package enqueuenotify holds the subscriber lists behind
// duroxide.EnqueueNotifier and duroxide.InstanceEndNotifier, which
// memprovider and the Cosmos provider both implement.
//
// Start with [Subscribers]; [Ends] is the instance-end list.
package enqueuenotify

import (
	"sync"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// Subscribers is a set of enqueue subscribers. The zero value is empty
// and ready to use; a Subscribers must not be copied after first use.
type Subscribers struct {
	mu   sync.Mutex
	subs []*subscriber
}

// subscriber boxes one func so that cancel finds it by identity.
type subscriber struct{ f func(duroxide.Queue, string) }

// Subscribe adds f (duroxide.EnqueueNotifier.NotifyEnqueues).
func (s *Subscribers) Subscribe(f func(q duroxide.Queue, instance string)) (cancel func()) {
	sub := &subscriber{f: f}
	s.mu.Lock()
	s.subs = append(s.subs, sub)
	s.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { s.remove(sub) }) }
}

func (s *Subscribers) remove(sub *subscriber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.subs {
		if x == sub {
			// A fresh slice: Notify may be ranging over the old one.
			s.subs = append(s.subs[:i:i], s.subs[i+1:]...)
			return
		}
	}
}

// Notify calls every subscriber with q and the message's instance,
// outside the set's lock.
func (s *Subscribers) Notify(q duroxide.Queue, instance string) {
	s.mu.Lock()
	subs := s.subs
	s.mu.Unlock()
	for _, sub := range subs {
		sub.f(q, instance)
	}
}

// NotifyCommit notifies s of the work commit enqueued that is visible by
// now: each instance given an orchestrator message, and the worker queue
// once. A timer that fires later is not worth a wake-up (the runtime that
// committed it wakes itself when it fires).
func (s *Subscribers) NotifyCommit(c duroxide.OrchestrationCommit, now time.Time) {
	if len(c.WorkerItems) > 0 {
		s.Notify(duroxide.WorkerQueue, c.WorkerItems[0].InstanceID())
	}
	seen := map[string]bool{}
	for _, it := range c.OrchestratorItems {
		if tf, ok := it.(duroxide.TimerFiredItem); ok && time.UnixMilli(int64(tf.FireAtMs)).After(now) {
			continue
		}
		if inst := it.InstanceID(); !seen[inst] {
			seen[inst] = true
			s.Notify(duroxide.OrchestratorQueue, inst)
		}
	}
}
