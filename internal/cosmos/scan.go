package cosmos

import (
	"context"
	"sync"
)

// Scans of the whole container. The gateway serves a cross-partition query
// one physical partition (partition key range) at a time: each page holds
// results of one range only, and a range with nothing to return is an empty
// page that still carries a continuation. A scan that stopped after a fixed
// number of pages would never see the ranges after them, and a container
// has one range per ~10k RU/s or ~50 GB. So discovery and the provider's
// maintenance loop page until the continuation ends, but spread the pages over calls: each
// call reads a bounded number of pages and a cursor remembers where it
// stopped, so the next call resumes there and every range is reached in
// turn whatever their number.

// Cursor remembers where a paged scan stopped. A continuation token is
// only valid for the query that produced it, parameters included, so the
// cursor keeps the parameters the scan started with and the next call
// resumes with them; a new scan starts with fresh parameters.
type Cursor struct {
	mu     sync.Mutex
	text   string
	params QueryParams
	token  *string
}

func (c *Cursor) load(text string) (QueryParams, *string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.text != text || c.token == nil {
		return nil, nil
	}
	return c.params, c.token
}

func (c *Cursor) store(text string, params QueryParams, token *string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.text, c.params, c.token = text, params, token
}

// ScanRequest is one bounded step of a scan.
type ScanRequest struct {
	Text string
	// Fresh returns the parameters of a new scan (clock-dependent values
	// are taken when the scan starts).
	Fresh    func() QueryParams
	PageSize int32
	// MaxPages bounds the pages one call reads; 0 reads to the end.
	MaxPages int
	// Enough reports that the call has read what it needs; checked after
	// every page.
	Enough func() bool
}

// Scan runs one step of the scan r from where cur stopped, handing every
// page to page. When the scan ends within the step and the step resumed an
// older scan, it starts a new one with the pages left, so a call never
// reports "nothing" merely because it resumed near the end.
//
// ended reports that the scan reached the end of the query in this call
// (so everything it matched was handed to page, as of when it started).
//
// A step that resumed and then started a new scan may hand page a
// document it already handed it in the same step (read by both scans):
// callers that act once per document drop repeats.
//
// page is told whether its items come from a resumed scan. Such a page
// shows no document that sorts before where the scan stopped, however
// recently written: results come in the service's order (not the
// writers'), so a resumed scan can show a newer document of a partition
// without an older one written after the scan began.
func (s *Store) Scan(ctx context.Context, cur *Cursor, r ScanRequest, page func(items [][]byte, resumed bool)) (ended bool, err error) {
	params, token := cur.load(r.Text)
	fresh := token == nil
	if fresh {
		params = r.Fresh()
	}
	enough := func() bool { return r.Enough != nil && r.Enough() }
	budget := r.MaxPages
	for {
		next, pages, err := s.QueryPages(ctx, r.Text, params, QueryOptions{PageSize: r.PageSize, MaxPages: budget}, token, func(items [][]byte) bool {
			page(items, !fresh)
			return !enough()
		})
		if err != nil {
			// A continuation the service no longer accepts must not wedge
			// the scan: the next call starts over.
			cur.store(r.Text, nil, nil)
			return false, err
		}
		if next != nil || fresh || enough() {
			cur.store(r.Text, params, next)
			return next == nil && fresh, nil
		}
		if budget > 0 {
			budget -= pages
			if budget <= 0 {
				cur.store(r.Text, nil, nil)
				return false, nil
			}
		}
		params, token, fresh = r.Fresh(), nil, true
	}
}

// Cursors holds one cursor per distinct query (discovery polls
// different slot windows and tag filters).
type Cursors struct {
	mu sync.Mutex
	m  map[string]*Cursor
}

// Get returns the cursor for key, creating it; the map is bounded (a lost
// cursor only means a scan starts over).
func (s *Cursors) Get(key string) *Cursor {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) > 256 {
		s.m = map[string]*Cursor{}
	}
	c := s.m[key]
	if c == nil {
		c = &Cursor{}
		s.m[key] = c
	}
	return c
}
