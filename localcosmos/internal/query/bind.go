package query

import (
	"fmt"
	"math"
)

// bind checks the parsed query against its own FROM clause: every bare
// identifier must be the FROM alias, aggregates may only appear in SELECT,
// GROUP BY select lists may only use grouping expressions, and literal
// TOP/OFFSET/LIMIT counts must be non-negative integers.
func bind(q *Query) error {
	// Resolve every bare identifier to the slot of the source it names. A
	// source's own expression sees only the sources before it; the first
	// source's base identifier is the container name and denotes the document.
	slots := map[string]int{}
	var firstErr error
	var resolve func(e expr, visible int, container bool)
	resolve = func(e expr, visible int, container bool) {
		if e == nil || firstErr != nil {
			return
		}
		if r, ok := e.(*rootExpr); ok {
			if container {
				r.slot, r.doc = 0, true
				return
			}
			slot, ok := slots[r.name]
			if !ok || slot >= visible {
				firstErr = scError("SC2001", r.sp, fmt.Sprintf("Identifier '%s' could not be resolved.", r.name))
				return
			}
			r.slot = slot
			r.doc = slot == 0 && q.from.sources[0].expr == nil
			return
		}
		for _, c := range children(e) {
			resolve(c, visible, container)
		}
	}
	nsrc := 0
	if q.from != nil {
		nsrc = len(q.from.sources)
		for i, s := range q.from.sources {
			resolve(s.expr, i, i == 0)
			if firstErr != nil {
				return firstErr
			}
			if _, dup := slots[s.alias]; dup {
				return errorsError(fmt.Sprintf("The input set name or alias '%s' is specified more than once in the FROM clause.", s.alias))
			}
			if s.alias != "" {
				slots[s.alias] = i
			}
		}
	}
	for _, e := range q.allExprs() {
		resolve(e, nsrc, false)
	}
	if firstErr != nil {
		return firstErr
	}
	if q.sel.star && q.from == nil {
		return errorsError("'SELECT *' is not valid if FROM clause is omitted.")
	}
	if q.sel.star && nsrc > 1 {
		return errorsError("'SELECT *' is only valid with a single input set.")
	}
	if q.sel.star && len(q.groupBy) > 0 {
		return errorsError("'SELECT *' is not valid with GROUP BY.")
	}

	// Aggregates: only in the SELECT clause, and never nested.
	for _, e := range append(append([]expr{q.where}, q.groupBy...), q.orderExprs()...) {
		if a := findAgg(e); a != nil {
			return errorsError(fmt.Sprintf("Aggregate function '%s' is only allowed in the SELECT clause.", a.name))
		}
	}
	var nested error
	var checkAggs func(e expr)
	checkAggs = func(e expr) {
		if e == nil || nested != nil {
			return
		}
		if a, ok := e.(*callExpr); ok && a.agg != aggNone {
			q.hasAgg = true
			for _, arg := range a.args {
				if inner := findAgg(arg); inner != nil {
					nested = errorsError(fmt.Sprintf("Cannot perform an aggregate function on an expression containing an aggregate: '%s' inside '%s'.", inner.name, a.name))
				}
			}
			return
		}
		for _, c := range children(e) {
			checkAggs(c)
		}
	}
	for _, e := range q.selectExprs() {
		checkAggs(e)
	}
	if nested != nil {
		return nested
	}
	if q.hasAgg || len(q.groupBy) > 0 {
		keys := map[string]bool{}
		for _, g := range q.groupBy {
			keys[exprKey(g)] = true
		}
		for _, e := range q.selectExprs() {
			if bad := ungrouped(e, keys); bad != nil {
				return errorsError(fmt.Sprintf("Property reference '%s' is invalid in the select list because it is not contained in either an aggregate function or the GROUP BY clause.",
					q.text[bad.pos().start:bad.pos().end]))
			}
		}
		if len(q.orderBy) > 0 {
			return unsupportedError("ORDER BY combined with GROUP BY or aggregates")
		}
	}

	// Output property names must be unique in a non-VALUE select list.
	seen := map[string]bool{}
	for _, it := range q.sel.items {
		if seen[it.name] {
			return errorsError(fmt.Sprintf("The property name '%s' is specified more than once in the SELECT list.", it.name))
		}
		seen[it.name] = true
	}

	for _, c := range []*countSpec{q.top, q.offset, q.limit} {
		if c != nil && c.param == "" {
			if err := checkCount(c.num); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkCount enforces that TOP, OFFSET and LIMIT counts are non-negative integers.
func checkCount(n float64) *Error {
	if n < 0 || n != math.Trunc(n) || math.IsInf(n, 0) || n > math.MaxInt32 {
		return errorsError(fmt.Sprintf("The count value provided for a TOP, OFFSET or LIMIT clause must be a non-negative integer; got %v.", n))
	}
	return nil
}

// ungrouped returns the first sub-expression of e that reads the document
// outside of an aggregate and is not one of the GROUP BY expressions.
func ungrouped(e expr, groupKeys map[string]bool) expr {
	if e == nil {
		return nil
	}
	if c, ok := e.(*callExpr); ok && c.agg != aggNone {
		return nil
	}
	if groupKeys[exprKey(e)] {
		return nil
	}
	if isRef(e) {
		// An alias or a path below one that is not a grouping expression
		// (reported whole, "c.a.b", rather than just its alias).
		return e
	}
	for _, c := range children(e) {
		if bad := ungrouped(c, groupKeys); bad != nil {
			return bad
		}
	}
	return nil
}

// isRef reports whether e is an alias or a literal path below one (c, c.a,
// c["a"][0]).
func isRef(e expr) bool {
	switch e := e.(type) {
	case *rootExpr:
		return true
	case *propExpr:
		return isRef(e.obj)
	case *indexExpr:
		_, lit := e.idx.(*litExpr)
		return lit && isRef(e.obj)
	}
	return false
}

func (q *Query) selectExprs() []expr {
	if q.sel.value != nil {
		return []expr{q.sel.value}
	}
	out := make([]expr, 0, len(q.sel.items))
	for _, it := range q.sel.items {
		out = append(out, it.e)
	}
	return out
}

func (q *Query) orderExprs() []expr {
	out := make([]expr, 0, len(q.orderBy))
	for _, o := range q.orderBy {
		out = append(out, o.e)
	}
	return out
}

func (q *Query) allExprs() []expr {
	out := q.selectExprs()
	if q.where != nil {
		out = append(out, q.where)
	}
	out = append(out, q.groupBy...)
	return append(out, q.orderExprs()...)
}
