package cdb

import (
	"context"
	"sync"
)

// Scans of the whole container. The gateway serves a cross-partition query
// one physical partition (partition key range) at a time: each page holds
// results of one range only, and a range with nothing to return is an empty
// page that still carries a continuation. A scan that stopped after a fixed
// number of pages would never see the ranges after them, and a container
// has one range per ~10k RU/s or ~50 GB. So discovery and the reconciler
// page until the continuation ends, but spread the pages over calls: each
// call reads a bounded number of pages and a cursor remembers where it
// stopped, so the next call resumes there and every range is reached in
// turn whatever their number.

// scanCursor remembers where a paged scan stopped. A continuation token is
// only valid for the query that produced it, parameters included, so the
// cursor keeps the parameters the scan started with and the next call
// resumes with them; a new scan starts with fresh parameters.
type scanCursor struct {
	mu     sync.Mutex
	text   string
	params queryParams
	token  *string
}

func (c *scanCursor) load(text string) (queryParams, *string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.text != text || c.token == nil {
		return nil, nil
	}
	return c.params, c.token
}

func (c *scanCursor) store(text string, params queryParams, token *string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.text, c.params, c.token = text, params, token
}

// scanRequest is one bounded step of a scan.
type scanRequest struct {
	text string
	// fresh returns the parameters of a new scan (clock-dependent values
	// are taken when the scan starts).
	fresh    func() queryParams
	pageSize int32
	// maxPages bounds the pages one call reads; 0 reads to the end.
	maxPages int
	// enough reports that the call has read what it needs; checked after
	// every page.
	enough func() bool
}

// scan runs one step of the scan r from where cur stopped, handing every
// item to each. When the scan ends within the step and the step resumed an
// older scan, it starts a new one with the pages left, so a call never
// reports "nothing" merely because it resumed near the end.
//
// ended reports that the scan reached the end of the query in this call
// (so everything it matched was handed to each, as of when it started).
func (p *Provider) scan(ctx context.Context, cur *scanCursor, r scanRequest, page func(items [][]byte)) (ended bool, err error) {
	params, token := cur.load(r.text)
	fresh := token == nil
	if fresh {
		params = r.fresh()
	}
	enough := func() bool { return r.enough != nil && r.enough() }
	budget := r.maxPages
	for {
		next, pages, err := p.st.queryPages(ctx, r.text, params, queryOptions{PageSize: r.pageSize, MaxPages: budget}, token, func(items [][]byte) bool {
			page(items)
			return !enough()
		})
		if err != nil {
			// A continuation the service no longer accepts must not wedge
			// the scan: the next call starts over.
			cur.store(r.text, nil, nil)
			return false, err
		}
		if next != nil || fresh || enough() {
			cur.store(r.text, params, next)
			return next == nil && fresh, nil
		}
		if budget > 0 {
			budget -= pages
			if budget <= 0 {
				cur.store(r.text, nil, nil)
				return false, nil
			}
		}
		params, token, fresh = r.fresh(), nil, true
	}
}

// reconcileScan runs one scan of a reconciler round: a bounded step of the
// named background scan, or with full the whole query from the start (for
// ReconcileOutbox, which promises everything pending).
func (p *Provider) reconcileScan(ctx context.Context, name string, full bool, r scanRequest, each func(raw []byte)) error {
	cur := p.scans.get(name)
	r.maxPages = p.opts.ScanPages
	if full {
		cur, r.maxPages = &scanCursor{}, 0
	}
	_, err := p.scan(ctx, cur, r, func(items [][]byte) {
		for _, it := range items {
			each(it)
		}
	})
	return err
}

// noParams is the parameter list of a scan whose query has none.
func noParams() queryParams { return nil }

// scanCursors holds one cursor per distinct query (discovery polls
// different slot windows and tag filters).
type scanCursors struct {
	mu sync.Mutex
	m  map[string]*scanCursor
}

// get returns the cursor for key, creating it; the map is bounded (a lost
// cursor only means a scan starts over).
func (s *scanCursors) get(key string) *scanCursor {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) > 256 {
		s.m = map[string]*scanCursor{}
	}
	c := s.m[key]
	if c == nil {
		c = &scanCursor{}
		s.m[key] = c
	}
	return c
}
