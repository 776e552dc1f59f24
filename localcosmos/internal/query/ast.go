package query

import (
	"strconv"
	"strings"
)

// Query is one parsed Cosmos NoSQL query. It is immutable after Parse and
// safe for concurrent use, so a server may cache it by query text.
type Query struct {
	text     string
	distinct bool
	top      *countSpec
	sel      selectClause
	from     *fromClause // nil when the query has no FROM clause ("SELECT 1")
	where    expr
	groupBy  []expr
	orderBy  []orderItem
	offset   *countSpec
	limit    *countSpec
	hasAgg   bool // an aggregate function appears in the SELECT clause
}

// Text returns the query text Parse was given.
func (q *Query) Text() string { return q.text }

// countSpec is the argument of TOP, OFFSET or LIMIT: a number literal or a
// parameter resolved at execution time.
type countSpec struct {
	num   float64
	param string // "@name" when the count is a parameter
	sp    span
}

type selectClause struct {
	star  bool
	value expr // SELECT VALUE <value>
	items []selectItem
}

type selectItem struct {
	e    expr
	name string // output property name: the alias, the last path segment, or "$n"
}

// fromClause lists the input sources: the container (or a path inside each
// document, or an array iterated with IN) followed by any JOINs. Each source
// binds an alias; a row of the input set holds one value per source.
type fromClause struct {
	sources []source
}

type source struct {
	alias string
	// expr computes the source's value from the sources before it. It is nil
	// for a plain "FROM c", whose value is the document itself; for the first
	// source its base identifier names the container and denotes the document.
	expr expr
	iter bool // "alias IN expr": one row per element of the array
}

type orderItem struct {
	e    expr
	desc bool
}

// expr is a scalar expression node.
type expr interface{ pos() span }

type (
	// litExpr is a constant: number, string, bool, null, undefined.
	litExpr struct {
		v  any
		sp span
	}
	// paramExpr is a reference to a query parameter such as @id.
	paramExpr struct {
		name string
		sp   span
	}
	// rootExpr is a bare identifier: a FROM or JOIN alias, resolved by bind
	// to the slot of its source in the input row.
	rootExpr struct {
		name string
		slot int
		doc  bool // the alias denotes the whole document (plain "FROM c")
		sp   span
	}
	// propExpr is obj.name (or obj["name"] with a literal string).
	propExpr struct {
		obj  expr
		name string
		sp   span
	}
	// indexExpr is obj[idx] with a computed index.
	indexExpr struct {
		obj, idx expr
		sp       span
	}
	arrayExpr struct {
		elems []expr
		sp    span
	}
	objectExpr struct {
		keys []string
		vals []expr
		sp   span
	}
	unaryExpr struct {
		op string // "-", "+", "~", "NOT"
		x  expr
		sp span
	}
	binaryExpr struct {
		op   binOp
		l, r expr
		sp   span
	}
	betweenExpr struct {
		x, lo, hi expr
		not       bool
		sp        span
	}
	inExpr struct {
		x    expr
		list []expr
		not  bool
		sp   span
	}
	likeExpr struct {
		x, pat expr
		esc    string // escape character, "" when absent
		not    bool
		sp     span
	}
	condExpr struct {
		c, a, b expr
		sp      span
	}
	coalesceExpr struct {
		a, b expr
		sp   span
	}
	callExpr struct {
		name string // upper case
		args []expr
		fn   *funcDef // nil for aggregates
		agg  aggKind  // aggNone for scalar functions
		sp   span
	}
)

func (e *litExpr) pos() span      { return e.sp }
func (e *paramExpr) pos() span    { return e.sp }
func (e *rootExpr) pos() span     { return e.sp }
func (e *propExpr) pos() span     { return e.sp }
func (e *indexExpr) pos() span    { return e.sp }
func (e *arrayExpr) pos() span    { return e.sp }
func (e *objectExpr) pos() span   { return e.sp }
func (e *unaryExpr) pos() span    { return e.sp }
func (e *binaryExpr) pos() span   { return e.sp }
func (e *betweenExpr) pos() span  { return e.sp }
func (e *inExpr) pos() span       { return e.sp }
func (e *likeExpr) pos() span     { return e.sp }
func (e *condExpr) pos() span     { return e.sp }
func (e *coalesceExpr) pos() span { return e.sp }
func (e *callExpr) pos() span     { return e.sp }

// binOp is a binary operator. Logical AND/OR are binary operators too; their
// three-valued logic lives in eval.
type binOp int

const (
	opMul binOp = iota
	opDiv
	opMod
	opAdd
	opSub
	opShl
	opShr
	opUshr
	opLt
	opLe
	opGt
	opGe
	opEq
	opNe
	opBitAnd
	opBitXor
	opBitOr
	opConcat
	opAnd
	opOr
)

var binOpText = [...]string{"*", "/", "%", "+", "-", "<<", ">>", ">>>", "<", "<=", ">", ">=", "=", "!=", "&", "^", "|", "||", "AND", "OR"}

type aggKind int

const (
	aggNone aggKind = iota
	aggCount
	aggSum
	aggMin
	aggMax
	aggAvg
)

var aggNames = map[string]aggKind{"COUNT": aggCount, "SUM": aggSum, "MIN": aggMin, "MAX": aggMax, "AVG": aggAvg}

// exprKey renders an expression canonically (no positions, normalised
// spelling) so two expressions can be compared structurally, which GROUP BY
// needs to check that selected expressions are grouping expressions.
func exprKey(e expr) string {
	var b strings.Builder
	writeExpr(&b, e)
	return b.String()
}

func writeExpr(b *strings.Builder, e expr) {
	switch e := e.(type) {
	case *litExpr:
		b.WriteString(canonKey(e.v))
	case *paramExpr:
		b.WriteString(e.name)
	case *rootExpr:
		b.WriteString("$" + e.name)
	case *propExpr:
		writeExpr(b, e.obj)
		b.WriteString("[" + strconv.Quote(e.name) + "]")
	case *indexExpr:
		writeExpr(b, e.obj)
		b.WriteByte('[')
		writeExpr(b, e.idx)
		b.WriteByte(']')
	case *arrayExpr:
		b.WriteByte('[')
		for i, x := range e.elems {
			if i > 0 {
				b.WriteByte(',')
			}
			writeExpr(b, x)
		}
		b.WriteByte(']')
	case *objectExpr:
		b.WriteByte('{')
		for i, k := range e.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(k) + ":")
			writeExpr(b, e.vals[i])
		}
		b.WriteByte('}')
	case *unaryExpr:
		b.WriteString("(" + e.op + " ")
		writeExpr(b, e.x)
		b.WriteByte(')')
	case *binaryExpr:
		b.WriteByte('(')
		writeExpr(b, e.l)
		b.WriteString(" " + binOpText[e.op] + " ")
		writeExpr(b, e.r)
		b.WriteByte(')')
	case *betweenExpr:
		b.WriteByte('(')
		writeExpr(b, e.x)
		if e.not {
			b.WriteString(" NOT")
		}
		b.WriteString(" BETWEEN ")
		writeExpr(b, e.lo)
		b.WriteString(" AND ")
		writeExpr(b, e.hi)
		b.WriteByte(')')
	case *inExpr:
		b.WriteByte('(')
		writeExpr(b, e.x)
		if e.not {
			b.WriteString(" NOT")
		}
		b.WriteString(" IN (")
		for i, x := range e.list {
			if i > 0 {
				b.WriteByte(',')
			}
			writeExpr(b, x)
		}
		b.WriteString("))")
	case *likeExpr:
		b.WriteByte('(')
		writeExpr(b, e.x)
		if e.not {
			b.WriteString(" NOT")
		}
		b.WriteString(" LIKE ")
		writeExpr(b, e.pat)
		if e.esc != "" {
			b.WriteString(" ESCAPE " + strconv.Quote(e.esc))
		}
		b.WriteByte(')')
	case *condExpr:
		b.WriteByte('(')
		writeExpr(b, e.c)
		b.WriteString(" ? ")
		writeExpr(b, e.a)
		b.WriteString(" : ")
		writeExpr(b, e.b)
		b.WriteByte(')')
	case *coalesceExpr:
		b.WriteByte('(')
		writeExpr(b, e.a)
		b.WriteString(" ?? ")
		writeExpr(b, e.b)
		b.WriteByte(')')
	case *callExpr:
		b.WriteString(e.name + "(")
		for i, x := range e.args {
			if i > 0 {
				b.WriteByte(',')
			}
			writeExpr(b, x)
		}
		b.WriteByte(')')
	}
}

// children returns the direct sub-expressions of e, for tree walks.
func children(e expr) []expr {
	switch e := e.(type) {
	case *propExpr:
		return []expr{e.obj}
	case *indexExpr:
		return []expr{e.obj, e.idx}
	case *arrayExpr:
		return e.elems
	case *objectExpr:
		return e.vals
	case *unaryExpr:
		return []expr{e.x}
	case *binaryExpr:
		return []expr{e.l, e.r}
	case *betweenExpr:
		return []expr{e.x, e.lo, e.hi}
	case *inExpr:
		return append([]expr{e.x}, e.list...)
	case *likeExpr:
		return []expr{e.x, e.pat}
	case *condExpr:
		return []expr{e.c, e.a, e.b}
	case *coalesceExpr:
		return []expr{e.a, e.b}
	case *callExpr:
		return e.args
	}
	return nil
}

// findAgg returns the first aggregate call in e, or nil.
func findAgg(e expr) *callExpr {
	if e == nil {
		return nil
	}
	if c, ok := e.(*callExpr); ok && c.agg != aggNone {
		return c
	}
	for _, ch := range children(e) {
		if a := findAgg(ch); a != nil {
			return a
		}
	}
	return nil
}

// docPath returns the property path of e when e is the document alias
// followed by property names and literal indexes (c.a.b, c["a"], c.a[0]); ok
// is false for anything computed or rooted at a JOIN alias. ORDER BY and
// index-policy checks work on these paths.
func docPath(e expr) (path []string, ok bool) {
	switch e := e.(type) {
	case *rootExpr:
		return nil, e.doc
	case *propExpr:
		p, ok := docPath(e.obj)
		if !ok {
			return nil, false
		}
		return append(p, e.name), true
	case *indexExpr:
		p, ok := docPath(e.obj)
		if !ok {
			return nil, false
		}
		lit, isLit := e.idx.(*litExpr)
		if !isLit {
			return nil, false
		}
		switch v := lit.v.(type) {
		case float64:
			return append(p, strconv.FormatFloat(v, 'f', -1, 64)), true
		case string:
			return append(p, v), true
		}
	}
	return nil, false
}
