package query

import (
	"strings"
)

// Validate reports what the real service refuses about this query before
// running it, given how the request arrived:
//
//   - ORDER BY items must be document paths (c.a.b), not computed
//     expressions: 400 "Unsupported ORDER BY clause. ORDER BY item expression
//     could not be mapped to a document path."
//   - For a cross-partition request, anything that needs state across
//     partitions — ORDER BY, TOP, OFFSET/LIMIT, aggregates (including
//     SELECT VALUE COUNT(1)), DISTINCT, GROUP BY — is refused by the gateway
//     with 400, substatus 1004 and GatewayCrossPartitionMessage, because
//     azcosmos v1.5.0 has no client-side query engine to do that work.
//   - An ORDER BY on several items needs a composite index with the same
//     paths in the same sequence and either the same directions or all of
//     them reversed: 400 "The order by query does not have a corresponding
//     composite index that it can be served from."
//   - A single-item ORDER BY needs its path to be indexed: 400 "The index
//     path corresponding to the specified order-by item is excluded."
//
// The checks run in that order, mirroring where the service finds them
// (query plan, then gateway routing, then the partition's index).
func (q *Query) Validate(opts Options) error {
	paths := make([][]string, len(q.orderBy))
	for i, o := range q.orderBy {
		p, ok := docPath(o.e)
		if !ok || len(p) == 0 {
			return errorsError("Unsupported ORDER BY clause. ORDER BY item expression could not be mapped to a document path.")
		}
		paths[i] = p
	}

	if opts.CrossPartition && q.needsCrossPartitionState() {
		return gatewayError()
	}

	switch len(paths) {
	case 0:
	case 1:
		if !opts.Index.indexes(paths[0]) {
			return errorsError("The index path corresponding to the specified order-by item is excluded.")
		}
	default:
		if !opts.Index.hasComposite(paths, q.orderBy) {
			return errorsError("The order by query does not have a corresponding composite index that it can be served from.")
		}
	}
	return nil
}

// needsCrossPartitionState reports whether the query uses a feature the
// gateway cannot serve across partitions (the query-plan features TOP,
// ORDER BY, OFFSET/LIMIT, aggregates, DISTINCT and GROUP BY).
func (q *Query) needsCrossPartitionState() bool {
	return q.top != nil || len(q.orderBy) > 0 || q.offset != nil || q.hasAgg || q.distinct || len(q.groupBy) > 0
}

// indexPath is a parsed indexing-policy path such as /a/"b c"/[]/?.
type indexPath struct {
	segs     []string
	terminal string // "?" (the scalar at this path), "*" (everything below), or "" (composite paths)
}

func parseIndexPath(s string) indexPath {
	var ip indexPath
	s = strings.TrimSpace(s)
	for _, seg := range splitIndexPath(s) {
		if seg == "?" || seg == "*" {
			ip.terminal = seg
			break
		}
		ip.segs = append(ip.segs, seg)
	}
	return ip
}

// splitIndexPath splits on "/" outside double quotes and unquotes segments
// ("/\"_etag\"/?" -> ["_etag", "?"]).
func splitIndexPath(s string) []string {
	var out []string
	var cur strings.Builder
	inQuote, started := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			inQuote = !inQuote
		case c == '/' && !inQuote:
			if started {
				out = append(out, cur.String())
				cur.Reset()
			}
			started = true
		default:
			cur.WriteByte(c)
		}
	}
	if started && cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

func segMatch(pattern, seg string) bool {
	if pattern == "[]" {
		// Array-element wildcard: matches any numeric index.
		for i := 0; i < len(seg); i++ {
			if !isDigit(seg[i]) {
				return false
			}
		}
		return seg != ""
	}
	return pattern == seg
}

// matches reports whether the policy path covers the scalar value at path,
// and how specific the match is (longer paths and "?" beat "*").
func (ip indexPath) matches(path []string) (bool, int) {
	switch ip.terminal {
	case "?":
		if len(path) != len(ip.segs) {
			return false, 0
		}
	case "*":
		if len(path) < len(ip.segs) {
			return false, 0
		}
	default:
		return false, 0
	}
	for i, s := range ip.segs {
		if !segMatch(s, path[i]) {
			return false, 0
		}
	}
	spec := 2 * len(ip.segs)
	if ip.terminal == "?" {
		spec++
	}
	return true, spec
}

// indexes reports whether the policy range-indexes the value at path. When
// an included and an excluded path both match, the more specific one wins,
// as the indexing-policy documentation describes; a tie goes to exclusion.
func (pol IndexPolicy) indexes(path []string) bool {
	included := pol.IncludedPaths
	if len(included) == 0 {
		// The service fills in "/*" when a policy lists no included paths.
		included = []string{"/*"}
	}
	best := func(list []string) int {
		b := -1
		for _, s := range list {
			if ok, spec := parseIndexPath(s).matches(path); ok && spec > b {
				b = spec
			}
		}
		return b
	}
	inc, exc := best(included), best(pol.ExcludedPaths)
	return inc >= 0 && inc > exc
}

// explicitlyIncludes reports whether the policy lists path itself as an
// included scalar path ("/lastName/?"), which makes single-item ORDER BY
// return documents where the property is undefined.
func (pol IndexPolicy) explicitlyIncludes(path []string) bool {
	for _, s := range pol.IncludedPaths {
		ip := parseIndexPath(s)
		if ip.terminal == "?" && len(ip.segs) == len(path) {
			if ok, _ := ip.matches(path); ok && !strings.Contains(s, "[]") {
				return true
			}
		}
	}
	return false
}

// hasComposite reports whether some composite index serves a multi-item
// ORDER BY: exactly the same paths in the same sequence, with the same
// directions or every direction reversed.
func (pol IndexPolicy) hasComposite(paths [][]string, items []orderItem) bool {
	for _, ci := range pol.CompositeIndexes {
		if len(ci) != len(paths) {
			continue
		}
		same, reversed := true, true
		for i, cp := range ci {
			ip := parseIndexPath(cp.Path)
			if !equalSegs(ip.segs, paths[i]) {
				same, reversed = false, false
				break
			}
			desc := strings.EqualFold(cp.Order, "descending")
			if desc != items[i].desc {
				same = false
			} else {
				reversed = false
			}
		}
		if same || reversed {
			return true
		}
	}
	return false
}

func equalSegs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
