package query

import (
	"math"
	"unicode/utf8"
)

// env is the evaluation context of one expression: the current input row
// (one value per FROM/JOIN source, indexed by rootExpr.slot), the
// parameters, and — while projecting an aggregate query — the rows of the
// current group.
type env struct {
	vars   []any
	params Params
	group  [][]any
}

// eval computes e under Cosmos semantics. It never fails: type mismatches,
// missing properties and bad arguments produce undefined, as in the service.
func (ev *env) eval(e expr) any {
	switch e := e.(type) {
	case *litExpr:
		return e.v
	case *rootExpr:
		return ev.vars[e.slot]
	case *paramExpr:
		// A parameter the request did not supply evaluates to undefined
		// rather than failing the query.
		if v, ok := ev.params[e.name]; ok {
			return v
		}
		return undefined
	case *propExpr:
		m, ok := ev.eval(e.obj).(map[string]any)
		if !ok {
			return undefined
		}
		v, ok := m[e.name]
		if !ok {
			return undefined
		}
		return canon(v)
	case *indexExpr:
		return index(ev.eval(e.obj), ev.eval(e.idx))
	case *arrayExpr:
		out := make([]any, 0, len(e.elems))
		for _, x := range e.elems {
			// JSON cannot hold undefined, so undefined elements are dropped.
			if v := ev.eval(x); !isUndef(v) {
				out = append(out, v)
			}
		}
		return out
	case *objectExpr:
		out := make(map[string]any, len(e.keys))
		for i, k := range e.keys {
			if v := ev.eval(e.vals[i]); !isUndef(v) {
				out[k] = v
			}
		}
		return out
	case *unaryExpr:
		return unary(e.op, ev.eval(e.x))
	case *binaryExpr:
		switch e.op {
		case opAnd:
			// Three-valued logic: false AND anything is false, even when
			// the other side is undefined or not a boolean.
			l := ev.eval(e.l)
			if l == false {
				return false
			}
			r := ev.eval(e.r)
			if r == false {
				return false
			}
			if l == true && r == true {
				return true
			}
			return undefined
		case opOr:
			l := ev.eval(e.l)
			if l == true {
				return true
			}
			r := ev.eval(e.r)
			if r == true {
				return true
			}
			if l == false && r == false {
				return false
			}
			return undefined
		}
		return binary(e.op, ev.eval(e.l), ev.eval(e.r))
	case *betweenExpr:
		x := ev.eval(e.x)
		ge := compare(opGe, x, ev.eval(e.lo))
		le := compare(opLe, x, ev.eval(e.hi))
		var r any
		switch {
		case ge == false || le == false:
			r = false
		case ge == true && le == true:
			r = true
		default:
			r = undefined
		}
		if e.not {
			return unary("NOT", r)
		}
		return r
	case *inExpr:
		x := ev.eval(e.x)
		if isUndef(x) {
			return undefined
		}
		found := false
		for _, item := range e.list {
			if v := ev.eval(item); typeRank(v) == typeRank(x) && deepEqual(x, v) {
				found = true
				break
			}
		}
		return found != e.not
	case *likeExpr:
		s, ok1 := ev.eval(e.x).(string)
		pat, ok2 := ev.eval(e.pat).(string)
		if !ok1 || !ok2 {
			return undefined
		}
		esc := rune(-1)
		if e.esc != "" {
			esc, _ = utf8.DecodeRuneInString(e.esc)
		}
		return likeMatch([]rune(s), []rune(pat), esc) != e.not
	case *condExpr:
		if ev.eval(e.c) == true {
			return ev.eval(e.a)
		}
		return ev.eval(e.b)
	case *coalesceExpr:
		if v := ev.eval(e.a); !isUndef(v) {
			return v
		}
		return ev.eval(e.b)
	case *callExpr:
		if e.agg != aggNone {
			return ev.aggregate(e)
		}
		args := make([]any, len(e.args))
		for i, a := range e.args {
			args[i] = ev.eval(a)
		}
		return e.fn.impl(args)
	}
	return undefined
}

// truthy reports whether a WHERE predicate keeps a row: only boolean true
// does; false, undefined and values of other types all drop it.
func truthy(v any) bool { b, ok := v.(bool); return ok && b }

func index(obj, idx any) any {
	switch o := obj.(type) {
	case map[string]any:
		if k, ok := idx.(string); ok {
			if v, ok := o[k]; ok {
				return canon(v)
			}
		}
	case []any:
		if f, ok := idx.(float64); ok && f >= 0 && f == math.Trunc(f) && f < float64(len(o)) {
			return canon(o[int(f)])
		}
	}
	return undefined
}

func unary(op string, x any) any {
	switch op {
	case "NOT":
		if b, ok := x.(bool); ok {
			return !b
		}
	case "-":
		if f, ok := x.(float64); ok {
			return -f
		}
	case "+":
		if f, ok := x.(float64); ok {
			return f
		}
	case "~":
		if f, ok := x.(float64); ok {
			return float64(^toInt32(f))
		}
	}
	return undefined
}

// compare applies a comparison operator.
//
// Anything compared with undefined is undefined, so "c.x = null" matches
// only explicit nulls and "undefined = null" matches nothing. Range
// comparisons (<, <=, >, >=) between different types, or between two arrays
// or two objects, are undefined too, so "c.n > 'a'" matches no numbers.
//
// Equality between two defined values of different types is false (and
// != is true). The service documentation's table calls it undefined, but
// that would make the ubiquitous "c.x != null" (which the .NET LINQ provider
// emits for x != null) match nothing at all, which is not what the service
// does; the vercel emulator, which the research probe found correct on null
// semantics, also answers false/true. Equality of arrays and objects is
// structural, ignoring object key order.
func compare(op binOp, a, b any) any {
	if isUndef(a) || isUndef(b) {
		return undefined
	}
	ra, rb := typeRank(a), typeRank(b)
	switch op {
	case opEq:
		return ra == rb && deepEqual(a, b)
	case opNe:
		return ra != rb || !deepEqual(a, b)
	}
	if ra != rb || ra == rankArray || ra == rankObject {
		return undefined
	}
	c := compareSameType(a, b)
	switch op {
	case opLt:
		return c < 0
	case opLe:
		return c <= 0
	case opGt:
		return c > 0
	case opGe:
		return c >= 0
	}
	return undefined
}

func binary(op binOp, a, b any) any {
	switch op {
	case opEq, opNe, opLt, opLe, opGt, opGe:
		return compare(op, a, b)
	case opConcat:
		// || concatenates strings only; + never does.
		x, ok1 := a.(string)
		y, ok2 := b.(string)
		if ok1 && ok2 {
			return x + y
		}
		return undefined
	}
	x, ok1 := a.(float64)
	y, ok2 := b.(float64)
	if !ok1 || !ok2 {
		return undefined
	}
	switch op {
	case opAdd:
		return numberResult(x + y)
	case opSub:
		return numberResult(x - y)
	case opMul:
		return numberResult(x * y)
	case opDiv:
		return numberResult(x / y)
	case opMod:
		return numberResult(math.Mod(x, y))
	case opBitAnd:
		return float64(toInt32(x) & toInt32(y))
	case opBitOr:
		return float64(toInt32(x) | toInt32(y))
	case opBitXor:
		return float64(toInt32(x) ^ toInt32(y))
	case opShl:
		return float64(toInt32(x) << (uint32(toInt32(y)) & 31))
	case opShr:
		return float64(toInt32(x) >> (uint32(toInt32(y)) & 31))
	case opUshr:
		return float64(uint32(toInt32(x)) >> (uint32(toInt32(y)) & 31))
	}
	return undefined
}

// likeMatch implements LIKE patterns: % (any run), _ (one character),
// [abc], [a-f] and [^abc] character classes, and an optional escape
// character. It compiles the pattern into elements and matches with dynamic
// programming, so adversarial patterns ("%a%a%a%b") stay O(len(s)·len(p)).
func likeMatch(s, p []rune, esc rune) bool {
	type elem struct {
		kind  byte // 'c' literal, '_' any one, '%' any run, '[' class
		r     rune
		class []rune
	}
	var pat []elem
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case esc >= 0 && c == esc && i+1 < len(p):
			i++
			pat = append(pat, elem{kind: 'c', r: p[i]})
		case c == '%':
			if len(pat) == 0 || pat[len(pat)-1].kind != '%' {
				pat = append(pat, elem{kind: '%'})
			}
		case c == '_':
			pat = append(pat, elem{kind: '_'})
		case c == '[':
			end := -1
			for j := i + 2; j < len(p); j++ {
				if p[j] == ']' {
					end = j
					break
				}
			}
			if end < 0 { // no closing bracket: a literal '['
				pat = append(pat, elem{kind: 'c', r: c})
				continue
			}
			pat = append(pat, elem{kind: '[', class: p[i+1 : end]})
			i = end
		default:
			pat = append(pat, elem{kind: 'c', r: c})
		}
	}
	// cur[j]: pattern prefix pat[:j] matches the input consumed so far.
	cur := make([]bool, len(pat)+1)
	next := make([]bool, len(pat)+1)
	cur[0] = true
	for j := 1; j <= len(pat) && pat[j-1].kind == '%'; j++ {
		cur[j] = true
	}
	for _, r := range s {
		clear(next)
		for j := 1; j <= len(pat); j++ {
			e := pat[j-1]
			switch e.kind {
			case '%':
				next[j] = next[j-1] || cur[j]
			case '_':
				next[j] = cur[j-1]
			case '[':
				next[j] = cur[j-1] && classMatch(e.class, r)
			default:
				next[j] = cur[j-1] && e.r == r
			}
		}
		cur, next = next, cur
	}
	return cur[len(pat)]
}

func classMatch(class []rune, r rune) bool {
	neg := len(class) > 0 && class[0] == '^'
	if neg {
		class = class[1:]
	}
	in := false
	for i := 0; i < len(class); i++ {
		if i+2 < len(class) && class[i+1] == '-' {
			if r >= class[i] && r <= class[i+2] {
				in = true
			}
			i += 2
			continue
		}
		if class[i] == r {
			in = true
		}
	}
	return in != neg
}

// aggregate evaluates an aggregate call over the current group. Undefined
// arguments are skipped by every aggregate. COUNT counts the rest; SUM and
// AVG become undefined if any argument is not a number; MIN and MAX order
// mixed types by type rank and become undefined on arrays or objects. Over
// no values COUNT and SUM give 0 and MIN, MAX and AVG give undefined.
func (ev *env) aggregate(c *callExpr) any {
	sub := env{params: ev.params}
	arg := c.args[0]
	switch c.agg {
	case aggCount:
		n := 0
		for _, d := range ev.group {
			sub.vars = d
			if !isUndef(sub.eval(arg)) {
				n++
			}
		}
		return float64(n)
	case aggSum, aggAvg:
		sum, n := 0.0, 0
		for _, d := range ev.group {
			sub.vars = d
			v := sub.eval(arg)
			if isUndef(v) {
				continue
			}
			f, ok := v.(float64)
			if !ok {
				return undefined
			}
			sum += f
			n++
		}
		if c.agg == aggAvg {
			if n == 0 {
				return undefined
			}
			return numberResult(sum / float64(n))
		}
		return numberResult(sum)
	case aggMin, aggMax:
		best := undefined
		for _, d := range ev.group {
			sub.vars = d
			v := sub.eval(arg)
			switch typeRank(v) {
			case rankUndefined:
				continue
			case rankArray, rankObject:
				return undefined
			}
			if isUndef(best) {
				best = v
				continue
			}
			cmp := compareTotal(v, best)
			if (c.agg == aggMin && cmp < 0) || (c.agg == aggMax && cmp > 0) {
				best = v
			}
		}
		return best
	}
	return undefined
}
