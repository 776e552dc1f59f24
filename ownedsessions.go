package cdb

import (
	"slices"
	"sync"
	"time"
)

// Owned sessions outside the fetcher's slots. Discovery polls only the
// dispatch slots this process leases, but a session belongs to its owner
// for as long as the owner renews it, wherever its instance's slot has
// moved meanwhile (a process joined or left, or the owner restarted under
// the same identity and the slots were rebalanced). The slot's holder may
// not take such a session, so unless its owner polls its items outside
// the owner's slots, they wait until the session goes idle and lapses
// (minutes by default). A session-aware fetch therefore also polls the
// session-bound items of the instances whose sessions its owner holds
// (discovery.go: slotsClause); this records which those are.
//
// The provider learns a session is held when it claims it and whenever it
// renews it: renewal queries the store for the owner's sessions, so a
// restarted process learns the sessions its previous run held at its
// first renewal. An entry ends with the lock it was learned with; the next
// renewal extends it.

// maxOwnedSessions bounds the record; past it the record starts over and
// is relearned by the next renewal.
const maxOwnedSessions = 10000

// ownedSessions records, per owner, the sessions held and until when.
type ownedSessions struct {
	mu sync.Mutex
	n  int
	m  map[string]map[string]ownedSession // owner → session document id →
}

type ownedSession struct {
	instance string
	until    time.Time
}

// hold records that owner holds session document id of instance until.
func (o *ownedSessions) hold(owner, instance, id string, until time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil || o.n >= maxOwnedSessions {
		o.m, o.n = map[string]map[string]ownedSession{}, 0
	}
	held := o.m[owner]
	if held == nil {
		held = map[string]ownedSession{}
		o.m[owner] = held
	}
	if _, ok := held[id]; !ok {
		o.n++
	}
	held[id] = ownedSession{instance: instance, until: until}
}

// release forgets session document id: owner does not hold it.
func (o *ownedSessions) release(owner, id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.m[owner][id]; ok {
		delete(o.m[owner], id)
		o.n--
	}
}

// outside returns, sorted, the instances of owner's sessions still held
// at now whose dispatch slot is not in slots (nil: all slots, so none).
func (o *ownedSessions) outside(owner string, slots []uint8, now time.Time) []string {
	if slots == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for id, s := range o.m[owner] {
		if !now.Before(s.until) {
			delete(o.m[owner], id)
			o.n--
			continue
		}
		if !slices.Contains(slots, DispatchSlot(s.instance)) {
			out = append(out, s.instance)
		}
	}
	slices.Sort(out)
	return slices.Compact(out) // an instance may have several sessions
}
