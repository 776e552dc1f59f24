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
