package query

import (
	"fmt"
	"slices"
)

// Params holds the query parameters by name including the "@" ("@id"), with
// values as encoding/json decodes them (float64 numbers, []any, map[string]any).
// Other Go shapes ([]string, int, structs) are converted on use. A parameter
// the query references but Params lacks evaluates to undefined.
type Params map[string]any

// IndexPolicy is the part of a container's indexing policy that decides which
// queries the service can serve. Paths use the policy syntax ("/*",
// "/name/?", "/address/*", "/\"_etag\"/?"). The zero value means the default
// policy: everything indexed, no composite indexes.
type IndexPolicy struct {
	CompositeIndexes [][]CompositePath
	ExcludedPaths    []string
	IncludedPaths    []string
}

// CompositePath is one path of a composite index; Order is "ascending"
// (the default when empty) or "descending".
type CompositePath struct {
	Path  string
	Order string
}

// Options describe how the request reached the service.
type Options struct {
	// CrossPartition is true when the query was sent without a partition key
	// (azcosmos NewPartitionKey()), so the gateway has to fan it out.
	CrossPartition bool
	// Index is the container's indexing policy.
	Index IndexPolicy
}

// Execute runs the query over docs, which must be given in the order the
// service would read them (insertion order within the partition or
// partitions), and returns every result in order: whole documents for
// SELECT *, projected objects or values otherwise. WHERE, GROUP BY,
// aggregates, ORDER BY, DISTINCT, OFFSET/LIMIT and TOP are applied; paging is
// left to the caller. Returned values may share structure with docs, so
// neither should be mutated while the other is in use.
//
// Execute assumes Validate has accepted the query for the same Options; its
// own errors are about parameter values (for example TOP @n with @n not a
// non-negative integer).
func (q *Query) Execute(docs []map[string]any, params Params, opts Options) ([]any, error) {
	cp := make(Params, len(params))
	for k, v := range params {
		cp[k] = deepCanon(v)
	}
	ev := &env{params: cp}

	top, err := q.resolveCount(q.top, cp, "TOP")
	if err != nil {
		return nil, err
	}
	offset, err := q.resolveCount(q.offset, cp, "OFFSET")
	if err != nil {
		return nil, err
	}
	limit, err := q.resolveCount(q.limit, cp, "LIMIT")
	if err != nil {
		return nil, err
	}

	rows := q.inputRows(ev, docs)
	if q.where != nil {
		kept := rows[:0:0]
		for _, r := range rows {
			ev.vars = r
			if truthy(ev.eval(q.where)) {
				kept = append(kept, r)
			}
		}
		rows = kept
	}

	// Without DISTINCT or aggregation the first offset+limit (or top) rows
	// of the (sorted) input are all that can be returned, so projection can
	// stop there.
	want := -1
	if q.limit != nil {
		want = offset + limit
	}
	if q.top != nil && (want < 0 || top < want) {
		want = top
	}
	if q.distinct {
		want = -1
	}

	var out []any
	if q.hasAgg || len(q.groupBy) > 0 {
		out = q.projectGroups(ev, rows)
	} else {
		if len(q.orderBy) > 0 {
			rows = q.sortRows(ev, rows, opts.Index)
		}
		size := len(rows)
		if want >= 0 {
			size = min(size, want)
		}
		out = make([]any, 0, size)
		for _, r := range rows {
			if want >= 0 && len(out) >= want {
				break
			}
			ev.vars = r
			if v := q.project(ev); !isUndef(v) {
				out = append(out, v)
			}
		}
	}

	if q.distinct {
		seen := make(map[string]bool, len(out))
		kept := out[:0]
		for _, v := range out {
			k := canonKey(v)
			if !seen[k] {
				seen[k] = true
				kept = append(kept, v)
			}
		}
		out = kept
	}
	if q.offset != nil {
		out = out[min(offset, len(out)):]
		out = out[:min(limit, len(out))]
	}
	if q.top != nil {
		out = out[:min(top, len(out))]
	}
	if out == nil {
		out = []any{}
	}
	return out, nil
}

// inputRows builds the input set: one row per document for a plain FROM,
// fanned out by IN and JOIN sources, or a single empty row for a query
// without FROM ("SELECT 1"). A row holds one value per source.
func (q *Query) inputRows(ev *env, docs []map[string]any) [][]any {
	if q.from == nil {
		return [][]any{nil}
	}
	srcs := q.from.sources
	if len(srcs) == 1 && srcs[0].expr == nil {
		// The common case: one row per document, in one allocation.
		backing := make([]any, len(docs))
		rows := make([][]any, len(docs))
		for i, d := range docs {
			backing[i] = d
			rows[i] = backing[i : i+1 : i+1]
		}
		return rows
	}
	var rows [][]any
	var expand func(vars []any, i int)
	expand = func(vars []any, i int) {
		if i == len(srcs) {
			rows = append(rows, slices.Clone(vars))
			return
		}
		s := srcs[i]
		v := vars[i] // the document, for the first source
		if s.expr != nil {
			ev.vars = vars
			v = ev.eval(s.expr)
		}
		if s.iter {
			// Iterating something that is not an array yields no rows.
			arr, _ := v.([]any)
			for _, el := range arr {
				vars[i] = canon(el)
				expand(vars, i+1)
			}
			return
		}
		if isUndef(v) {
			return
		}
		vars[i] = v
		expand(vars, i+1)
	}
	for _, d := range docs {
		vars := make([]any, len(srcs))
		vars[0] = d
		expand(vars, 0)
	}
	return rows
}

// resolveCount returns the value of a TOP/OFFSET/LIMIT argument, reading
// parameters; a parameter that is missing or not a non-negative integer is
// a 400 like any other invalid count.
func (q *Query) resolveCount(c *countSpec, params Params, clause string) (int, error) {
	if c == nil {
		return 0, nil
	}
	n := c.num
	if c.param != "" {
		v, ok := params[c.param]
		f, isNum := v.(float64)
		if !ok || !isNum {
			return 0, errorsError(fmt.Sprintf("The %s count parameter '%s' must be a non-negative integer.", clause, c.param))
		}
		n = f
	}
	if err := checkCount(n); err != nil {
		return 0, err
	}
	return int(n), nil
}

// project computes the SELECT clause for the current row; undefined means
// the row produces no result (SELECT VALUE of undefined).
func (q *Query) project(ev *env) any {
	switch {
	case q.sel.star:
		return ev.vars[0]
	case q.sel.value != nil:
		return ev.eval(q.sel.value)
	}
	obj := make(map[string]any, len(q.sel.items))
	for _, it := range q.sel.items {
		// Undefined fields are left out; a row whose fields are all
		// undefined still yields {}.
		if v := ev.eval(it.e); !isUndef(v) {
			obj[it.name] = v
		}
	}
	return obj
}

// projectGroups evaluates an aggregate query. Without GROUP BY all rows form
// one group, which exists even when there are no rows (so COUNT gives 0);
// with GROUP BY there is one group per distinct key, in order of first
// appearance, and no rows means no groups.
func (q *Query) projectGroups(ev *env, rows [][]any) []any {
	type group struct {
		first []any
		rows  [][]any
	}
	var groups []*group
	if len(q.groupBy) == 0 {
		// With no rows the select list can only hold aggregates and
		// constants (bind enforces it), so an all-undefined row is safe.
		g := &group{rows: rows, first: make([]any, q.sourceCount())}
		for i := range g.first {
			g.first[i] = undefined
		}
		if len(rows) > 0 {
			g.first = rows[0]
		}
		groups = []*group{g}
	} else {
		byKey := map[string]*group{}
		for _, r := range rows {
			ev.vars = r
			key := ""
			for _, g := range q.groupBy {
				key += canonKey(ev.eval(g)) + "|"
			}
			g, ok := byKey[key]
			if !ok {
				g = &group{first: r}
				byKey[key] = g
				groups = append(groups, g)
			}
			g.rows = append(g.rows, r)
		}
	}
	out := make([]any, 0, len(groups))
	for _, g := range groups {
		// Grouping expressions are constant within a group, so non-aggregate
		// parts of the select list are evaluated on the group's first row.
		ev.vars = g.first
		ev.group = g.rows
		if v := q.project(ev); !isUndef(v) {
			out = append(out, v)
		}
	}
	ev.group = nil
	return out
}

// sortRows orders rows for ORDER BY. Values of different types order by
// type rank (undefined < null < false < true < numbers < strings). With a
// single ORDER BY item served by the range index, rows whose sort value is
// undefined are left out, unless the indexing policy explicitly includes
// that path with "/path/?"; a multi-item ORDER BY is served by a composite
// index and always keeps them. Both rules are from the service's ORDER BY
// documentation ("Documents with missing fields"). Arrays and objects are not
// range-indexed values, so they count as undefined here. Ties keep input order.
func (q *Query) sortRows(ev *env, rows [][]any, pol IndexPolicy) [][]any {
	n := len(q.orderBy)
	keepUndefined := n > 1
	if n == 1 {
		if path, ok := docPath(q.orderBy[0].e); ok {
			keepUndefined = pol.explicitlyIncludes(path)
		}
	}
	type keyed struct {
		row  []any
		keys []any
		pos  int // input position: the tie-breaker that keeps the sort stable
	}
	items := make([]keyed, 0, len(rows))
	for _, r := range rows {
		ev.vars = r
		keys := make([]any, n)
		skip := false
		for i, o := range q.orderBy {
			v := ev.eval(o.e)
			if r := typeRank(v); r == rankArray || r == rankObject {
				v = undefined
			}
			if isUndef(v) && !keepUndefined {
				skip = true
				break
			}
			keys[i] = v
		}
		if !skip {
			items = append(items, keyed{r, keys, len(items)})
		}
	}
	// pdqsort with an explicit position tie-break is stable and much faster
	// than SortStableFunc's in-place merge on these structs.
	slices.SortFunc(items, func(a, b keyed) int {
		for i, o := range q.orderBy {
			c := compareTotal(a.keys[i], b.keys[i])
			if c != 0 {
				if o.desc {
					return -c
				}
				return c
			}
		}
		return a.pos - b.pos
	})
	out := make([][]any, len(items))
	for i, it := range items {
		out[i] = it.row
	}
	return out
}

func (q *Query) sourceCount() int {
	if q.from == nil {
		return 0
	}
	return len(q.from.sources)
}
