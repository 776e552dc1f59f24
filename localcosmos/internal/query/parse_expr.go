package query

import (
	"fmt"
)

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
