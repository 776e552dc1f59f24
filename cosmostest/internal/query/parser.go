package query

import (
	"fmt"
	"math"
	"strconv"
)

// Parse parses one Cosmos NoSQL query.
//
// Syntax errors are reported first, as the service does, as *Error with
// Status 400 and an SC1001 message ("Syntax error, incorrect syntax near
// 'X'."). A query that is syntactically valid can still fail to compile:
// identifiers other than the FROM alias (SC2001), unknown functions (SC2005),
// wrong argument counts (SC2050), misplaced aggregates and invalid GROUP BY
// select lists are all reported here too. Constructs the real service
// accepts but this fake does not implement (subqueries, EXISTS/ARRAY,
// user-defined functions, ORDER BY RANK, ORDER BY with GROUP BY) return a
// 400 whose message starts with "cosmostest:", so nobody mistakes the gap
// for service behaviour.
func Parse(text string) (*Query, error) {
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	p := &parser{src: text, toks: toks}
	q, err := p.parseQuery()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.syntaxErrAt(t)
	}
	if p.unsupported != nil {
		return nil, p.unsupported
	}
	if p.semantic != nil {
		return nil, p.semantic
	}
	q.text = text
	if err := bind(q); err != nil {
		return nil, err
	}
	return q, nil
}

type parser struct {
	src  string
	toks []token
	i    int

	// Errors found while parsing that are not syntax errors. The service
	// reports syntax errors before semantic ones, so these are held back
	// until the whole text has parsed.
	semantic    *Error
	unsupported *Error
}

func (p *parser) peek() token        { return p.toks[p.i] }
func (p *parser) peekAt(n int) token { return p.toks[min(p.i+n, len(p.toks)-1)] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) isKw(kw string) bool {
	t := p.peek()
	return t.kind == tKeyword && t.text == kw
}

func (p *parser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == tPunct && t.text == s
}

func (p *parser) acceptKw(kw string) bool {
	if p.isKw(kw) {
		p.i++
		return true
	}
	return false
}

func (p *parser) acceptPunct(s string) bool {
	if p.isPunct(s) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectKw(kw string) error {
	if !p.acceptKw(kw) {
		return p.syntaxErrAt(p.peek())
	}
	return nil
}

func (p *parser) expectPunct(s string) error {
	if !p.acceptPunct(s) {
		return p.syntaxErrAt(p.peek())
	}
	return nil
}

// syntaxErrAt reports a syntax error at token t. At end of input the error
// points at the last real token, since "near ”" would tell the user nothing.
func (p *parser) syntaxErrAt(t token) *Error {
	if t.kind == tEOF && p.i > 0 {
		t = p.toks[p.i-1]
		for j := len(p.toks) - 2; j >= 0; j-- {
			if p.toks[j].kind != tEOF {
				t = p.toks[j]
				break
			}
		}
	}
	return syntaxError(t.sp, p.src[t.sp.start:t.sp.end])
}

func (p *parser) noteSemantic(e *Error) {
	if p.semantic == nil {
		p.semantic = e
	}
}

func (p *parser) noteUnsupported(what string) {
	if p.unsupported == nil {
		p.unsupported = unsupportedError(what)
	}
}

// isIdentTok reports whether t can serve as an identifier: a plain
// identifier, or one of the keywords ALL, FIRST and LAST, which the grammar
// allows in identifier position.
func isIdentTok(t token) bool {
	return t.kind == tIdent || (t.kind == tKeyword && (t.text == "ALL" || t.text == "FIRST" || t.text == "LAST"))
}

// identText returns the identifier as written (keywords keep their source spelling).
func (p *parser) identText(t token) string { return p.src[t.sp.start:t.sp.end] }

func (p *parser) parseQuery() (*Query, error) {
	q := &Query{}
	if err := p.expectKw("SELECT"); err != nil {
		return nil, err
	}
	if p.acceptKw("DISTINCT") {
		q.distinct = true
	}
	if p.acceptKw("TOP") {
		c, err := p.parseCount()
		if err != nil {
			return nil, err
		}
		q.top = c
	}
	if err := p.parseSelection(q); err != nil {
		return nil, err
	}
	if p.acceptKw("FROM") {
		f, err := p.parseFrom()
		if err != nil {
			return nil, err
		}
		q.from = f
	}
	if p.acceptKw("WHERE") {
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		q.where = e
	}
	if p.acceptKw("GROUP") {
		if err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		for {
			e, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			q.groupBy = append(q.groupBy, e)
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	if p.acceptKw("ORDER") {
		if err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		if p.isKw("RANK") {
			p.noteUnsupported("ORDER BY RANK")
			p.next()
		}
		for {
			e, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			item := orderItem{e: e}
			if p.acceptKw("DESC") {
				item.desc = true
			} else {
				p.acceptKw("ASC")
			}
			q.orderBy = append(q.orderBy, item)
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	if p.acceptKw("OFFSET") {
		off, err := p.parseCount()
		if err != nil {
			return nil, err
		}
		// The grammar has no OFFSET without LIMIT (and no LIMIT alone).
		if err := p.expectKw("LIMIT"); err != nil {
			return nil, err
		}
		lim, err := p.parseCount()
		if err != nil {
			return nil, err
		}
		q.offset, q.limit = off, lim
	}
	return q, nil
}

// parseCount parses the argument of TOP, OFFSET or LIMIT, which the grammar
// restricts to a number literal or a parameter (no expressions).
func (p *parser) parseCount() (*countSpec, error) {
	t := p.peek()
	switch t.kind {
	case tNumber:
		p.next()
		return &countSpec{num: t.num, sp: t.sp}, nil
	case tParam:
		p.next()
		return &countSpec{param: t.text, sp: t.sp}, nil
	case tPunct:
		// The grammar's number literal carries its own sign, so "TOP -1"
		// parses and is then rejected as a negative count.
		if (t.text == "-" || t.text == "+") && p.peekAt(1).kind == tNumber {
			p.next()
			n := p.next()
			v := n.num
			if t.text == "-" {
				v = -v
			}
			return &countSpec{num: v, sp: span{t.sp.start, n.sp.end}}, nil
		}
	}
	return nil, p.syntaxErrAt(t)
}

func (p *parser) parseSelection(q *Query) error {
	if p.acceptPunct("*") {
		q.sel.star = true
		return nil
	}
	if p.acceptKw("VALUE") {
		e, err := p.parseExpr()
		if err != nil {
			return err
		}
		q.sel.value = e
		return nil
	}
	unnamed := 0
	for {
		e, err := p.parseExpr()
		if err != nil {
			return err
		}
		item := selectItem{e: e}
		if p.acceptKw("AS") {
			t := p.peek()
			if !isIdentTok(t) {
				return p.syntaxErrAt(t)
			}
			p.next()
			item.name = p.identText(t)
		} else {
			// Unaliased items are named after their last property; anything
			// else gets "$1", "$2", ... in order, as the service does.
			switch x := e.(type) {
			case *propExpr:
				item.name = x.name
			case *rootExpr:
				item.name = x.name
			default:
				unnamed++
				item.name = "$" + strconv.Itoa(unnamed)
			}
		}
		q.sel.items = append(q.sel.items, item)
		if !p.acceptPunct(",") {
			return nil
		}
	}
}

func (p *parser) parseFrom() (*fromClause, error) {
	f := &fromClause{}
	src, err := p.parseSource()
	if err != nil {
		return nil, err
	}
	if _, bare := src.expr.(*rootExpr); bare && !src.iter {
		src.expr = nil // "FROM c": the document itself
	}
	f.sources = append(f.sources, src)
	for p.acceptKw("JOIN") {
		src, err := p.parseSource()
		if err != nil {
			return nil, err
		}
		f.sources = append(f.sources, src)
	}
	return f, nil
}

// parseSource parses one collection expression of FROM or JOIN:
//
//	name [path] [[AS] alias]     the value at the path (the document for a bare name)
//	alias IN name [path]         one row per element of the array at the path
//	'(' subquery ')' [[AS] alias] (not implemented)
func (p *parser) parseSource() (source, error) {
	t := p.peek()
	if t.kind == tPunct && t.text == "(" {
		p.noteUnsupported("a subquery in FROM or JOIN")
		if err := p.skipParens(); err != nil {
			return source{}, err
		}
		alias, err := p.optionalAlias("")
		return source{alias: alias}, err
	}
	if !isIdentTok(t) {
		return source{}, p.syntaxErrAt(t)
	}
	p.next()
	name := p.identText(t)
	if p.acceptKw("IN") {
		ct := p.peek()
		if !isIdentTok(ct) {
			return source{}, p.syntaxErrAt(ct)
		}
		p.next()
		e, err := p.parseCollectionPath(&rootExpr{name: p.identText(ct), sp: ct.sp})
		if err != nil {
			return source{}, err
		}
		return source{alias: name, expr: e, iter: true}, nil
	}
	base := &rootExpr{name: name, sp: t.sp}
	e, err := p.parseCollectionPath(base)
	if err != nil {
		return source{}, err
	}
	def := name
	if e != base {
		// "FROM c.children" is known by its last property name.
		def = ""
		if pe, ok := e.(*propExpr); ok {
			def = pe.name
		}
	}
	alias, err := p.optionalAlias(def)
	if err != nil {
		return source{}, err
	}
	return source{alias: alias, expr: e}, nil
}

// parseCollectionPath parses the path after a collection name, which the
// grammar limits to ".name", "[number]" and "['name']".
func (p *parser) parseCollectionPath(e expr) (expr, error) {
	for {
		switch {
		case p.acceptPunct("."):
			t := p.peek()
			if !isIdentTok(t) {
				return nil, p.syntaxErrAt(t)
			}
			p.next()
			e = &propExpr{obj: e, name: p.identText(t), sp: span{e.pos().start, t.sp.end}}
		case p.acceptPunct("["):
			t := p.next()
			end := p.peek()
			if (t.kind != tNumber && t.kind != tString) || !p.acceptPunct("]") {
				if t.kind != tNumber && t.kind != tString {
					return nil, p.syntaxErrAt(t)
				}
				return nil, p.syntaxErrAt(end)
			}
			sp := span{e.pos().start, end.sp.end}
			if t.kind == tString {
				e = &propExpr{obj: e, name: t.str, sp: sp}
			} else {
				e = &indexExpr{obj: e, idx: &litExpr{v: t.num, sp: t.sp}, sp: sp}
			}
		default:
			return e, nil
		}
	}
}

// optionalAlias consumes "[AS] alias" after a collection and returns the
// alias, or def when there is none.
func (p *parser) optionalAlias(def string) (string, error) {
	if p.acceptKw("AS") {
		t := p.peek()
		if !isIdentTok(t) {
			return "", p.syntaxErrAt(t)
		}
		p.next()
		return p.identText(t), nil
	}
	if t := p.peek(); isIdentTok(t) {
		p.next()
		return p.identText(t), nil
	}
	return def, nil
}

// skipParens skips a balanced parenthesised group starting at "(".
func (p *parser) skipParens() error {
	depth := 0
	for {
		t := p.next()
		switch {
		case t.kind == tEOF:
			return p.syntaxErrAt(t)
		case t.kind == tPunct && t.text == "(":
			depth++
		case t.kind == tPunct && t.text == ")":
			depth--
			if depth == 0 {
				return nil
			}
		}
	}
}

// Expression grammar, loosest binding first:
//
//	cond      := coalesce [ '?' expr ':' expr ]
//	coalesce  := or { '??' or }
//	or        := and { OR and }
//	and       := predicate { AND predicate }
//	predicate := binary [ [NOT] IN '(' list ')' | [NOT] LIKE binary [ESCAPE str] | [NOT] BETWEEN binary AND binary ]
//	binary    := unary { op unary }   by precedence: || < | < ^ < & < = != <> < relational < shifts < + - < * / %
//	unary     := ('-' | '+' | '~' | NOT) unary | postfix
//
// As in the service grammar, NOT is a unary operator that binds tighter than
// comparisons: "NOT c.a = 1" means "(NOT c.a) = 1". Write NOT (c.a = 1).
// BETWEEN is accepted wherever a predicate is (the service grammar only has
// it at the top of an expression, which real queries rarely notice).
func (p *parser) parseExpr() (expr, error) {
	c, err := p.parseCoalesce()
	if err != nil {
		return nil, err
	}
	if !p.acceptPunct("?") {
		return c, nil
	}
	a, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if err := p.expectPunct(":"); err != nil {
		return nil, err
	}
	b, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	return &condExpr{c: c, a: a, b: b, sp: span{c.pos().start, b.pos().end}}, nil
}

func (p *parser) parseCoalesce() (expr, error) {
	l, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	for p.acceptPunct("??") {
		r, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		l = &coalesceExpr{a: l, b: r, sp: span{l.pos().start, r.pos().end}}
	}
	return l, nil
}

func (p *parser) parseOr() (expr, error) {
	l, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for p.acceptKw("OR") {
		r, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		l = &binaryExpr{op: opOr, l: l, r: r, sp: span{l.pos().start, r.pos().end}}
	}
	return l, nil
}

func (p *parser) parseAnd() (expr, error) {
	l, err := p.parsePredicate()
	if err != nil {
		return nil, err
	}
	for p.acceptKw("AND") {
		r, err := p.parsePredicate()
		if err != nil {
			return nil, err
		}
		l = &binaryExpr{op: opAnd, l: l, r: r, sp: span{l.pos().start, r.pos().end}}
	}
	return l, nil
}

func (p *parser) parsePredicate() (expr, error) {
	x, err := p.parseBinary(1)
	if err != nil {
		return nil, err
	}
	not := false
	if p.isKw("NOT") {
		if n := p.peekAt(1); n.kind == tKeyword && (n.text == "IN" || n.text == "LIKE" || n.text == "BETWEEN") {
			p.next()
			not = true
		}
	}
	switch {
	case p.acceptKw("IN"):
		if err := p.expectPunct("("); err != nil {
			return nil, err
		}
		if p.isKw("SELECT") {
			p.noteUnsupported("a subquery in IN")
			p.i--
			if err := p.skipParens(); err != nil {
				return nil, err
			}
			return &inExpr{x: x, not: not, sp: x.pos()}, nil
		}
		list, err := p.parseList(")")
		if err != nil {
			return nil, err
		}
		end := p.toks[p.i-1].sp.end
		if len(list) == 0 {
			return nil, p.syntaxErrAt(p.toks[p.i-1])
		}
		return &inExpr{x: x, list: list, not: not, sp: span{x.pos().start, end}}, nil
	case p.acceptKw("LIKE"):
		pat, err := p.parseBinary(1)
		if err != nil {
			return nil, err
		}
		e := &likeExpr{x: x, pat: pat, not: not, sp: span{x.pos().start, pat.pos().end}}
		if p.acceptKw("ESCAPE") {
			t := p.next()
			if t.kind != tString {
				return nil, p.syntaxErrAt(t)
			}
			e.esc = t.str
			e.sp.end = t.sp.end
		}
		return e, nil
	case p.acceptKw("BETWEEN"):
		lo, err := p.parseBinary(1)
		if err != nil {
			return nil, err
		}
		if err := p.expectKw("AND"); err != nil {
			return nil, err
		}
		hi, err := p.parseBinary(1)
		if err != nil {
			return nil, err
		}
		return &betweenExpr{x: x, lo: lo, hi: hi, not: not, sp: span{x.pos().start, hi.pos().end}}, nil
	}
	return x, nil
}

// binaryOps maps operator symbols to their operator and precedence level
// (higher binds tighter), following the order of the service grammar.
var binaryOps = map[string]struct {
	op   binOp
	prec int
}{
	"||": {opConcat, 1},
	"|":  {opBitOr, 2},
	"^":  {opBitXor, 3},
	"&":  {opBitAnd, 4},
	"=":  {opEq, 5}, "!=": {opNe, 5}, "<>": {opNe, 5},
	"<": {opLt, 6}, "<=": {opLe, 6}, ">": {opGt, 6}, ">=": {opGe, 6},
	"<<": {opShl, 7}, ">>": {opShr, 7}, ">>>": {opUshr, 7},
	"+": {opAdd, 8}, "-": {opSub, 8},
	"*": {opMul, 9}, "/": {opDiv, 9}, "%": {opMod, 9},
}

func (p *parser) parseBinary(minPrec int) (expr, error) {
	l, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tPunct {
			return l, nil
		}
		info, ok := binaryOps[t.text]
		if !ok || info.prec < minPrec {
			return l, nil
		}
		p.next()
		r, err := p.parseBinary(info.prec + 1) // left-associative
		if err != nil {
			return nil, err
		}
		l = &binaryExpr{op: info.op, l: l, r: r, sp: span{l.pos().start, r.pos().end}}
	}
}

func (p *parser) parseUnary() (expr, error) {
	t := p.peek()
	op := ""
	switch {
	case t.kind == tPunct && (t.text == "-" || t.text == "+" || t.text == "~"):
		op = t.text
	case t.kind == tKeyword && t.text == "NOT":
		op = "NOT"
	default:
		return p.parsePostfix()
	}
	p.next()
	x, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	sp := span{t.sp.start, x.pos().end}
	// Fold a sign into a number literal: the service grammar lexes "-1" as
	// one literal, and folding keeps constants constant for TOP-like checks.
	if lit, ok := x.(*litExpr); ok {
		if n, isNum := lit.v.(float64); isNum && (op == "-" || op == "+") {
			if op == "-" {
				n = -n
			}
			return &litExpr{v: n, sp: sp}, nil
		}
	}
	return &unaryExpr{op: op, x: x, sp: sp}, nil
}

func (p *parser) parsePostfix() (expr, error) {
	e, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	for {
		switch {
		case p.acceptPunct("."):
			t := p.peek()
			if !isIdentTok(t) {
				// Reserved words cannot follow a dot: "c.value" is a syntax
				// error on the real service too (use c["value"]).
				return nil, p.syntaxErrAt(t)
			}
			p.next()
			e = &propExpr{obj: e, name: p.identText(t), sp: span{e.pos().start, t.sp.end}}
		case p.acceptPunct("["):
			idx, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			end := p.peek()
			if err := p.expectPunct("]"); err != nil {
				return nil, err
			}
			sp := span{e.pos().start, end.sp.end}
			if lit, ok := idx.(*litExpr); ok {
				if s, isStr := lit.v.(string); isStr {
					e = &propExpr{obj: e, name: s, sp: sp}
					continue
				}
			}
			e = &indexExpr{obj: e, idx: idx, sp: sp}
		default:
			return e, nil
		}
	}
}

func (p *parser) parsePrimary() (expr, error) {
	t := p.peek()
	switch t.kind {
	case tNumber:
		p.next()
		return &litExpr{v: t.num, sp: t.sp}, nil
	case tString:
		p.next()
		return &litExpr{v: t.str, sp: t.sp}, nil
	case tParam:
		p.next()
		return &paramExpr{name: t.text, sp: t.sp}, nil
	case tIdent:
		p.next()
		if p.isPunct("(") {
			return p.parseCall(t, p.identText(t))
		}
		return &rootExpr{name: t.text, sp: t.sp}, nil
	case tKeyword:
		switch t.text {
		case "TRUE", "FALSE", "NULL", "UNDEFINED":
			p.next()
			var v any
			switch t.text {
			case "TRUE":
				v = true
			case "FALSE":
				v = false
			case "UNDEFINED":
				v = undefined
			}
			return &litExpr{v: v, sp: t.sp}, nil
		case "LEFT", "RIGHT":
			// LEFT and RIGHT are reserved but still name string functions.
			if p.peekAt(1).kind == tPunct && p.peekAt(1).text == "(" {
				p.next()
				return p.parseCall(t, t.text)
			}
		case "ALL", "FIRST", "LAST", "EXISTS", "ARRAY":
			if n := p.peekAt(1); n.kind == tPunct && n.text == "(" {
				if p.peekAt(2).kind == tKeyword && p.peekAt(2).text == "SELECT" {
					p.next()
					p.noteUnsupported(t.text + " (subquery)")
					if err := p.skipParens(); err != nil {
						return nil, err
					}
					return &litExpr{v: undefined, sp: t.sp}, nil
				}
				return nil, p.syntaxErrAt(p.peekAt(1))
			}
			if isIdentTok(t) {
				p.next()
				return &rootExpr{name: p.identText(t), sp: t.sp}, nil
			}
		case "UDF":
			if p.peekAt(1).kind == tPunct && p.peekAt(1).text == "." && isIdentTok(p.peekAt(2)) &&
				p.peekAt(3).kind == tPunct && p.peekAt(3).text == "(" {
				p.next()
				p.next()
				name := p.next()
				p.noteUnsupported("user-defined functions (udf." + p.identText(name) + ")")
				if _, err := p.parseCall(name, p.identText(name)); err != nil && p.semantic == nil {
					return nil, err
				}
				return &litExpr{v: undefined, sp: t.sp}, nil
			}
		}
	case tPunct:
		switch t.text {
		case "[":
			p.next()
			elems, err := p.parseList("]")
			if err != nil {
				return nil, err
			}
			return &arrayExpr{elems: elems, sp: span{t.sp.start, p.toks[p.i-1].sp.end}}, nil
		case "{":
			return p.parseObject()
		case "(":
			if n := p.peekAt(1); n.kind == tKeyword && n.text == "SELECT" {
				p.noteUnsupported("a scalar subquery")
				if err := p.skipParens(); err != nil {
					return nil, err
				}
				return &litExpr{v: undefined, sp: t.sp}, nil
			}
			p.next()
			e, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			if err := p.expectPunct(")"); err != nil {
				return nil, err
			}
			return e, nil
		}
	}
	return nil, p.syntaxErrAt(t)
}

// parseList parses "expr, expr, ... <close>" (possibly empty) after the opener.
func (p *parser) parseList(closer string) ([]expr, error) {
	var out []expr
	if p.acceptPunct(closer) {
		return out, nil
	}
	for {
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
		if p.acceptPunct(closer) {
			return out, nil
		}
		if err := p.expectPunct(","); err != nil {
			return nil, err
		}
	}
}

// parseObject parses an object constructor. Keys may be string literals (as
// in the grammar) or bare identifiers (as in the service documentation's
// examples, e.g. SELECT VALUE { firstName: e.name.first }).
func (p *parser) parseObject() (expr, error) {
	start := p.next()
	o := &objectExpr{}
	if !p.acceptPunct("}") {
		for {
			k := p.peek()
			var key string
			switch {
			case k.kind == tString:
				key = k.str
			case isIdentTok(k):
				key = p.identText(k)
			default:
				return nil, p.syntaxErrAt(k)
			}
			p.next()
			if err := p.expectPunct(":"); err != nil {
				return nil, err
			}
			v, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			o.keys = append(o.keys, key)
			o.vals = append(o.vals, v)
			if p.acceptPunct("}") {
				break
			}
			if err := p.expectPunct(","); err != nil {
				return nil, err
			}
		}
	}
	o.sp = span{start.sp.start, p.toks[p.i-1].sp.end}
	return o, nil
}

// parseCall parses the argument list of a function call whose name token has
// been consumed, and resolves the function. Unknown names and wrong argument
// counts are semantic errors, reported after the whole text has parsed.
func (p *parser) parseCall(nameTok token, name string) (expr, error) {
	p.next() // "("
	args, err := p.parseList(")")
	if err != nil {
		return nil, err
	}
	sp := span{nameTok.sp.start, p.toks[p.i-1].sp.end}
	c := &callExpr{name: upper(name), args: args, sp: sp}
	if k, ok := aggNames[c.name]; ok {
		c.agg = k
		if len(args) != 1 {
			p.noteSemantic(scError("SC2050", sp, fmt.Sprintf("The %s function requires 1 argument(s).", c.name)))
		}
		return c, nil
	}
	fn, ok := functions[c.name]
	if !ok {
		p.noteSemantic(scError("SC2005", nameTok.sp, fmt.Sprintf("'%s' is not a recognized built-in function name.", name)))
		return c, nil
	}
	c.fn = fn
	if len(args) < fn.minArgs || (fn.maxArgs >= 0 && len(args) > fn.maxArgs) {
		p.noteSemantic(scError("SC2050", sp, fmt.Sprintf("The %s function requires %s argument(s).", c.name, fn.arity())))
	}
	return c, nil
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}

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
