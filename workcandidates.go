package cdb

import (
	"slices"
	"sync"
	"time"
)

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

// maxCandidateFilters bounds the filters kept at once; a process uses a
// handful (one per worker tag filter).
const maxCandidateFilters = 64

// workCandidates is the per-provider store of kept candidates, keyed by
// the fetch's filter (the query's extra clause and parameters).
type workCandidates struct {
	mu sync.Mutex
	m  map[string]*candidateQueue
}

type candidateQueue struct {
	cands []candidate // oldest first
	until time.Time   // discarded from then on
}

// keep replaces filter's queue with cands (the untried rest of a
// discovery page read at found), or drops it when cands is empty.
func (w *workCandidates) keep(filter string, cands []candidate, found time.Time, ttl time.Duration) {
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
func (w *workCandidates) pop(filter string, now time.Time, inSlots func(candidate) bool) (candidate, bool) {
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
func (w *workCandidates) forget(instance, id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for f, q := range w.m {
		q.cands = slices.DeleteFunc(q.cands, func(c candidate) bool { return c.instance == instance && c.ids[0] == id })
		if len(q.cands) == 0 {
			delete(w.m, f)
		}
	}
}

// drop discards filter's queue.
func (w *workCandidates) drop(filter string) {
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
