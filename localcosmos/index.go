package localcosmos

import (
	"sort"

	"github.com/duroxide-go/cdb/localcosmos/internal/query"
)

// Secondary index.
//
// Without one, a cross-partition query reads every document of the
// container, and a store that keeps finished work (histories, completed
// instances) makes every discovery poll slower than the last. Each
// container therefore keeps its documents grouped by the string value of
// one property, "type" — the property every cross-partition query of the
// duroxide provider pins (c.type = 'orch_queue' ...) — each group in
// creation order. A cross-partition or range-addressed query whose WHERE
// clause requires type to be one of some strings
// (query.EqualityFilter) reads only those groups, merged back into
// creation order: the documents it skips could not produce a result, so
// the results, their order and their paging are those of a full scan
// (TestIndexedQueriesMatchFullScan). Only the request charge, which
// counts the documents read, is lower, as on the service, whose queries
// are served from its index.

// indexedPath is the property the container index groups documents by.
var indexedPath = []string{"type"}

// indexKey is the index group of body: its type if that is a string.
func indexKey(body map[string]any) (string, bool) {
	s, ok := body[indexedPath[0]].(string)
	return s, ok
}

// indexPut files d in the index, replacing prev (the document it
// replaces, or nil).
func (c *container) indexPut(d, prev *document) {
	k, ok := indexKey(d.body)
	if prev != nil {
		if pk, pok := indexKey(prev.body); pok && ok && pk == k && prev.seq == d.seq {
			// Same group, same place: replaced in place below.
		} else {
			c.indexRemove(prev)
		}
	}
	if !ok {
		return
	}
	if c.byType == nil {
		c.byType = map[string][]*document{}
	}
	c.byType[k] = putSorted(c.byType[k], d)
}

// indexRemove takes d out of the index.
func (c *container) indexRemove(d *document) {
	k, ok := indexKey(d.body)
	if !ok {
		return
	}
	s := removeSorted(c.byType[k], d.seq)
	if len(s) == 0 {
		delete(c.byType, k)
		return
	}
	c.byType[k] = s
}

// scanDocs returns the documents a query over the whole container must
// read, in creation order: those of the index groups its filter pins, or
// every document. The result may be c.all itself; callers do not modify
// it.
func (c *container) scanDocs(q *query.Query, params query.Params) []*document {
	if c.db.st.fullScan {
		return c.all
	}
	values, ok := q.EqualityFilter(indexedPath, params)
	if !ok {
		return c.all
	}
	var lists [][]*document
	seen := map[string]bool{}
	for _, v := range values {
		if !seen[v] && len(c.byType[v]) > 0 {
			lists = append(lists, c.byType[v])
		}
		seen[v] = true
	}
	switch len(lists) {
	case 0:
		return nil
	case 1:
		return lists[0]
	}
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	out := make([]*document, 0, n)
	for _, l := range lists {
		out = append(out, l...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}
