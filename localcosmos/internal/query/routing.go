package query

// PartitionKeyFilter reports whether the WHERE clause pins the query to a
// single logical partition, and to which partition key values.
//
// pkPaths are the container's partition key paths ("/tenantId", or several
// for hierarchical keys). The query is pinned when, for every path, a
// top-level AND conjunct of the WHERE clause compares that document path
// with = to a literal or a supplied parameter (either side). The values are
// returned in pkPaths order.
//
// The gateway routes a cross-partition request whose filter resolves to one
// partition to that partition alone (azcosmos documents this on
// NewQueryItemsPager), and such a query may then use ORDER BY, TOP,
// aggregates and the rest. A server can call this before Validate and clear
// Options.CrossPartition when it returns true. OR, IN and inequality filters
// do not pin a partition here, which errs on the side of the gateway refusal.
func (q *Query) PartitionKeyFilter(pkPaths []string, params Params) ([]any, bool) {
	if q.where == nil || len(pkPaths) == 0 {
		return nil, false
	}
	var conj []expr
	var flatten func(e expr)
	flatten = func(e expr) {
		if b, ok := e.(*binaryExpr); ok && b.op == opAnd {
			flatten(b.l)
			flatten(b.r)
			return
		}
		conj = append(conj, e)
	}
	flatten(q.where)

	out := make([]any, len(pkPaths))
	for i, pk := range pkPaths {
		want := parseIndexPath(pk).segs
		found := false
		for _, c := range conj {
			b, ok := c.(*binaryExpr)
			if !ok || b.op != opEq {
				continue
			}
			for _, side := range [2][2]expr{{b.l, b.r}, {b.r, b.l}} {
				path, isPath := docPath(side[0])
				if !isPath || !equalSegs(path, want) {
					continue
				}
				var v any
				switch x := side[1].(type) {
				case *litExpr:
					v = x.v
				case *paramExpr:
					pv, ok := params[x.name]
					if !ok {
						continue
					}
					v = deepCanon(pv)
				default:
					continue
				}
				if isUndef(v) {
					continue
				}
				if found && (typeRank(out[i]) != typeRank(v) || !deepEqual(out[i], v)) {
					return nil, false // c.pk = 'a' AND c.pk = 'b': matches nothing, route nowhere special
				}
				out[i], found = v, true
			}
		}
		if !found {
			return nil, false
		}
	}
	return out, true
}

// EqualityFilter reports whether the WHERE clause admits only documents
// whose value at path (segments, such as ["type"]) is one of a few
// strings, and which: a top-level AND conjunct compares that document path
// with = to a string literal or a supplied string parameter (either side),
// or is an OR of such comparisons on that path. Every result of the query
// then comes from a document with one of those values, so a server may
// read only those documents (an index) and get the same results in the
// same order. ok is false when no conjunct has that form.
func (q *Query) EqualityFilter(path []string, params Params) (values []string, ok bool) {
	if q.where == nil || q.from == nil {
		return nil, false
	}
	var conj []expr
	var flatten func(e expr)
	flatten = func(e expr) {
		if b, isBin := e.(*binaryExpr); isBin && b.op == opAnd {
			flatten(b.l)
			flatten(b.r)
			return
		}
		conj = append(conj, e)
	}
	flatten(q.where)
	for _, c := range conj {
		if vs, ok := equalityValues(c, path, params); ok {
			return vs, true
		}
	}
	return nil, false
}

// equalityValues returns the strings e requires the document's path to be
// one of, if e is path = string or an OR of such comparisons.
func equalityValues(e expr, path []string, params Params) ([]string, bool) {
	b, ok := e.(*binaryExpr)
	if !ok {
		return nil, false
	}
	switch b.op {
	case opOr:
		l, ok := equalityValues(b.l, path, params)
		if !ok {
			return nil, false
		}
		r, ok := equalityValues(b.r, path, params)
		if !ok {
			return nil, false
		}
		return append(l, r...), true
	case opEq:
		for _, side := range [2][2]expr{{b.l, b.r}, {b.r, b.l}} {
			p, isPath := docPath(side[0])
			if !isPath || !equalSegs(p, path) {
				continue
			}
			switch x := side[1].(type) {
			case *litExpr:
				if s, isStr := x.v.(string); isStr {
					return []string{s}, true
				}
			case *paramExpr:
				if s, isStr := params[x.name].(string); isStr {
					return []string{s}, true
				}
			}
		}
	}
	return nil, false
}
