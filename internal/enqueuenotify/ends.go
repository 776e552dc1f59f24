package enqueuenotify

import (
	"sync"

	"github.com/duroxide-go/cdb/duroxide"
)

// Ends is a set of instance-end subscribers, kept by instance so that a
// commit finds its waiters without calling every other instance's
// (duroxide.InstanceEndNotifier). The zero value is empty and ready to
// use; an Ends must not be copied after first use.
type Ends struct {
	mu   sync.Mutex
	subs map[string][]*endSubscriber
}

// endSubscriber boxes one func so that cancel finds it by identity.
type endSubscriber struct{ f func() }

// Subscribe adds f for instance (duroxide.InstanceEndNotifier).
func (e *Ends) Subscribe(instance string, f func()) (cancel func()) {
	sub := &endSubscriber{f: f}
	e.mu.Lock()
	if e.subs == nil {
		e.subs = map[string][]*endSubscriber{}
	}
	e.subs[instance] = append(e.subs[instance], sub)
	e.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { e.remove(instance, sub) }) }
}

func (e *Ends) remove(instance string, sub *endSubscriber) {
	e.mu.Lock()
	defer e.mu.Unlock()
	subs := e.subs[instance]
	for i, x := range subs {
		if x != sub {
			continue
		}
		if len(subs) == 1 {
			delete(e.subs, instance)
			return
		}
		// A fresh slice: Notify may be ranging over the old one.
		e.subs[instance] = append(subs[:i:i], subs[i+1:]...)
		return
	}
}

// Notify calls instance's subscribers, outside the set's lock.
func (e *Ends) Notify(instance string) {
	e.mu.Lock()
	subs := e.subs[instance]
	e.mu.Unlock()
	for _, sub := range subs {
		sub.f()
	}
}

// NotifyCommit notifies instance's subscribers when c ends an execution
// (Metadata.Status Completed, Failed or ContinuedAsNew).
func (e *Ends) NotifyCommit(instance string, c *duroxide.OrchestrationCommit) {
	if EndsExecution(c) {
		e.Notify(instance)
	}
}

// EndsExecution reports whether c ends its execution.
func EndsExecution(c *duroxide.OrchestrationCommit) bool {
	s := c.Metadata.Status
	if s == nil {
		return false
	}
	switch *s {
	case duroxide.StatusCompleted, duroxide.StatusFailed, duroxide.StatusContinuedAsNew:
		return true
	}
	return false
}
