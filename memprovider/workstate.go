package memprovider

import (
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// WorkState is a snapshot of the provider's queues at its clock's now. A
// test environment driving a virtual clock (durable/testenv) reads it to
// tell when a runtime has nothing left to do until time moves: nothing
// Ready, nothing Locked. Only this process's runtimes change a memory
// provider, so that state is exact, not a guess from polling.
type WorkState struct {
	// Ready counts the messages a fetch could take now: visible, unlocked,
	// on an unlocked instance.
	Ready int
	// Locked counts the live message and instance locks: turns and
	// activities in flight.
	Locked int
	// Next is the earliest time after now at which a message becomes
	// fetchable (a timer fires, a backoff ends, a waiting event for an
	// instance never started is dropped); zero when none will.
	Next time.Time
}

// Idle reports whether nothing can happen before the clock moves.
func (s WorkState) Idle() bool { return s.Ready == 0 && s.Locked == 0 }

// WorkState returns the provider's WorkState.
func (p *Provider) WorkState() WorkState {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	var s WorkState
	later := func(t time.Time) {
		if t.After(now) && (s.Next.IsZero() || t.Before(s.Next)) {
			s.Next = t
		}
	}
	for _, l := range p.instanceLocks {
		if l.lockedUntil.After(now) {
			s.Locked++
		}
	}
	for _, m := range p.orchQueue {
		p.orchMessageState(m, now, &s, later)
	}
	for _, m := range p.workQueue {
		switch {
		case lockedAt(m.lockToken, m.lockedUntil, now):
			s.Locked++
		case m.visibleAt.After(now):
			later(m.visibleAt)
		default:
			s.Ready++
		}
	}
	return s
}

// orchMessageState counts one orchestrator message into s (its instance's
// lock is counted once, by the caller). A message waiting for an instance
// that was never started is fetched only to drop it, at the end of the
// orphan lifetime (expiredOrphans). Callers hold p.mu.
func (p *Provider) orchMessageState(m *orchMessage, now time.Time, s *WorkState, later func(time.Time)) {
	switch {
	case lockedAt(m.lockToken, m.lockedUntil, now):
		return // its instance lock is counted
	case m.visibleAt.After(now):
		later(m.visibleAt)
		return
	}
	if l := p.instanceLocks[m.instance]; l != nil && l.lockedUntil.After(now) {
		return
	}
	if st := p.instances[m.instance]; st != nil && st.suspended != nil && !duroxide.WakesSuspended(m.item) {
		return // held until a resume, as fetching holds it
	}
	if _, queued := m.item.(duroxide.QueueMessageItem); !queued && !duroxide.IsResult(m.item) && !p.existsLocked(m.instance) {
		lifetime := p.edge.orphanLifetime
		if lifetime <= 0 {
			lifetime = duroxide.DefaultOrphanLifetime
		}
		if drop := m.visibleAt.Add(lifetime); drop.After(now) {
			later(drop)
			return
		}
	}
	s.Ready++
}
