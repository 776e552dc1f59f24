package query

import (
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
