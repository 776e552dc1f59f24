package cdb

import (
	"slices"
	"sync"
	"time"
)

// Kept candidates: the rest of a discovery page, kept for the next fetch
// with the same filter. Work items and orchestrations each have a store.
//
// Orchestration candidates: a discovery page lists every instance with
// ready messages, oldest first, and a fetch locks one. With two or more
// orchestration loops (or a backlog), the next loop's fetch would query
// again and find, mostly, the same instances. It takes the oldest kept
// instance instead. The lock batch patches each listed message with the
// lock-free condition, so a kept instance whose messages another turn
// consumed misses (404) and drops the queue, as below; its messages that
// arrived after the query were not listed and come in its next turn, as
// they would have after a query a moment earlier (fetch.go). A kept
// instance is skipped while this process holds it (the busy cache), and
// forgotten when a fresh discovery locks it.
//
// Work candidates: the rest of a work-item discovery page, kept for the
// next fetch with the same filter. A discovery page lists up to
// DiscoveryPageSize ready items but a fetch locks one, so without this
// every activity paid a cross-partition query before its lock patch.
//
// Using a kept candidate is as safe as using it right after the query:
// the lock patch is conditioned on the ETag discovery read, and a
// queue document's ETag changes with every write that matters — another
// process's lock (412), an abandon with a delay (412), a cancellation or
// an ack that deletes it (404). Visibility and "lock free" only become
// more true as time passes. A miss therefore costs one failed patch, and
// it drops the whole queue for the filter: a miss means someone else
// (another process, a cancellation) is changing these items, so the
// next attempt queries afresh instead of walking a stale list.
//
// Items enqueued after the query are picked up at the next query, so the
// queue's lifetime (WorkCandidateTTL) bounds how long a fetch keeps
// taking older leftovers over them. Session-bound items are never kept:
// whether a fetch may take one depends on its owner and the session's
// state, so only the page's prefix before its first session-bound item is
// kept, and that item is found by the next query.

// DefaultWorkCandidateTTL is the default of Options.WorkCandidateTTL.
const DefaultWorkCandidateTTL = time.Second

// DefaultOrchestrationCandidateTTL is the default of
// Options.OrchestrationCandidateTTL: shorter than work items', since a
// kept instance's message list can only grow stale (see Options).
const DefaultOrchestrationCandidateTTL = 250 * time.Millisecond

// maxCandidateFilters bounds the filters kept at once; a process uses a
// handful (one per worker tag filter).
const maxCandidateFilters = 64

// keptCandidates is the per-provider store of kept candidates, keyed by
// the fetch's filter (the query's extra clause and parameters).
type keptCandidates struct {
	mu sync.Mutex
	m  map[string]*candidateQueue
}

type candidateQueue struct {
	cands []candidate // oldest first
	until time.Time   // discarded from then on
}

// keep replaces filter's queue with cands (the untried rest of a
// discovery page read at found), or drops it when cands is empty.
func (w *keptCandidates) keep(filter string, cands []candidate, found time.Time, ttl time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(cands) == 0 || ttl <= 0 {
		delete(w.m, filter)
		return
	}
	if w.m == nil || len(w.m) >= maxCandidateFilters {
		w.m = map[string]*candidateQueue{}
	}
	w.m[filter] = &candidateQueue{cands: slices.Clone(cands), until: found.Add(ttl)}
}

// pop removes and returns the oldest kept candidate for filter that
// inSlots accepts (candidates of other slots stay for the fetches that
// own them).
func (w *keptCandidates) pop(filter string, now time.Time, inSlots func(candidate) bool) (candidate, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.m[filter]
	if q == nil {
		return candidate{}, false
	}
	if !now.Before(q.until) {
		delete(w.m, filter)
		return candidate{}, false
	}
	for i, c := range q.cands {
		if inSlots(c) {
			q.cands = slices.Delete(q.cands, i, i+1)
			if len(q.cands) == 0 {
				delete(w.m, filter)
			}
			return c, true
		}
	}
	return candidate{}, false
}

// forget removes the item id from every queue: this process just locked
// it through a fresh discovery, so a kept copy could only miss.
func (w *keptCandidates) forget(instance, id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for f, q := range w.m {
		q.cands = slices.DeleteFunc(q.cands, func(c candidate) bool { return c.instance == instance && c.ids[0] == id })
		if len(q.cands) == 0 {
			delete(w.m, f)
		}
	}
}

// forgetInstance removes instance's candidates from every queue: this
// process just locked it through a fresh discovery.
func (w *keptCandidates) forgetInstance(instance string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for f, q := range w.m {
		q.cands = slices.DeleteFunc(q.cands, func(c candidate) bool { return c.instance == instance })
		if len(q.cands) == 0 {
			delete(w.m, f)
		}
	}
}

// drop discards filter's queue.
func (w *keptCandidates) drop(filter string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, filter)
}

// inSlotsFunc reports whether a candidate's instance hashes into slots
// (nil: all slots). A kept candidate of a slot this process no longer
// owns is skipped: another process polls that slot now.
func inSlotsFunc(slots []uint8) func(candidate) bool {
	if slots == nil {
		return func(candidate) bool { return true }
	}
	return func(c candidate) bool { return slices.Contains(slots, DispatchSlot(c.instance)) }
}

// beforeSessions returns the candidates before the first session-bound
// one. Such an item is never kept (see above), and keeping the ones after
// it would hand them out before it: fetches return ready items oldest
// first, session-bound or not.
func beforeSessions(cands []candidate) []candidate {
	for i, c := range cands {
		if c.session != nil {
			return cands[:i]
		}
	}
	return cands
}
