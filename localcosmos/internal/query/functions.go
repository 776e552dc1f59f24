package query

import (
	"math"
	"strconv"
	"strings"
	"unicode"
)

// funcDef is a built-in scalar function. Arguments arrive evaluated (there
// are no side effects, so IIF evaluating both branches is harmless); a
// function returns undefined when an argument has the wrong type, which is
// the service's rule for built-ins.
type funcDef struct {
	minArgs, maxArgs int // maxArgs < 0: variadic
	impl             func(args []any) any
}

func (f *funcDef) arity() string {
	switch {
	case f.maxArgs < 0:
		return "at least " + strconv.Itoa(f.minArgs)
	case f.minArgs == f.maxArgs:
		return strconv.Itoa(f.minArgs)
	}
	return strconv.Itoa(f.minArgs) + " to " + strconv.Itoa(f.maxArgs)
}

// functions is the catalogue of supported built-ins, keyed by upper-case
// name (function names are case-insensitive). Anything else is a 400
// "'NAME' is not a recognized built-in function name.", as on the service.
var functions map[string]*funcDef

func init() {
	typeCheck := func(pred func(any) bool) *funcDef {
		return &funcDef{1, 1, func(a []any) any { return pred(a[0]) }}
	}
	functions = map[string]*funcDef{
		// Type checking: always a boolean, even for undefined input.
		"IS_DEFINED":   typeCheck(func(v any) bool { return !isUndef(v) }),
		"IS_NULL":      typeCheck(func(v any) bool { return v == nil }),
		"IS_BOOL":      typeCheck(func(v any) bool { _, ok := v.(bool); return ok }),
		"IS_NUMBER":    typeCheck(func(v any) bool { _, ok := v.(float64); return ok }),
		"IS_STRING":    typeCheck(func(v any) bool { _, ok := v.(string); return ok }),
		"IS_ARRAY":     typeCheck(func(v any) bool { _, ok := v.([]any); return ok }),
		"IS_OBJECT":    typeCheck(func(v any) bool { _, ok := v.(map[string]any); return ok }),
		"IS_PRIMITIVE": typeCheck(func(v any) bool { r := typeRank(v); return r >= rankNull && r <= rankString }),

		"IIF": {3, 3, func(a []any) any {
			// The third argument is returned for anything but boolean true.
			if a[0] == true {
				return a[1]
			}
			return a[2]
		}},

		// Arrays.
		"ARRAY_CONTAINS": {2, 3, arrayContains},
		"ARRAY_LENGTH": {1, 1, func(a []any) any {
			if arr, ok := a[0].([]any); ok {
				return float64(len(arr))
			}
			return undefined
		}},
		"ARRAY_CONCAT": {2, -1, func(a []any) any {
			var out []any
			for _, x := range a {
				arr, ok := x.([]any)
				if !ok {
					return undefined
				}
				out = append(out, arr...)
			}
			if out == nil {
				out = []any{}
			}
			return out
		}},
		"ARRAY_SLICE": {2, 3, arraySlice},

		// Strings. Positions and lengths count Unicode code points.
		"CONCAT": {2, -1, func(a []any) any {
			var b strings.Builder
			for _, x := range a {
				s, ok := x.(string)
				if !ok {
					return undefined
				}
				b.WriteString(s)
			}
			return b.String()
		}},
		"CONTAINS":   {2, 3, stringPredicate(strings.Contains)},
		"STARTSWITH": {2, 3, stringPredicate(strings.HasPrefix)},
		"ENDSWITH":   {2, 3, stringPredicate(strings.HasSuffix)},
		"STRINGEQUALS": {2, 3, stringPredicate(func(a, b string) bool {
			return a == b
		})},
		"INDEX_OF": {2, 3, func(a []any) any {
			s, ok1 := a[0].(string)
			sub, ok2 := a[1].(string)
			if !ok1 || !ok2 {
				return undefined
			}
			rs, rsub := []rune(s), []rune(sub)
			start := 0
			if len(a) == 3 {
				f, ok := a[2].(float64)
				if !ok {
					return undefined
				}
				start = int(f)
			}
			if start < 0 || start > len(rs) {
				return float64(-1)
			}
			for i := start; i+len(rsub) <= len(rs); i++ {
				if string(rs[i:i+len(rsub)]) == sub {
					return float64(i)
				}
			}
			return float64(-1)
		}},
		"LENGTH": {1, 1, func(a []any) any {
			if s, ok := a[0].(string); ok {
				return float64(len([]rune(s)))
			}
			return undefined
		}},
		"LOWER":   stringMap(strings.ToLower),
		"UPPER":   stringMap(strings.ToUpper),
		"TRIM":    stringMap(func(s string) string { return strings.TrimFunc(s, unicode.IsSpace) }),
		"LTRIM":   stringMap(func(s string) string { return strings.TrimLeftFunc(s, unicode.IsSpace) }),
		"RTRIM":   stringMap(func(s string) string { return strings.TrimRightFunc(s, unicode.IsSpace) }),
		"REVERSE": stringMap(func(s string) string { r := []rune(s); reverse(r); return string(r) }),
		"LEFT": {2, 2, func(a []any) any {
			s, ok1 := a[0].(string)
			n, ok2 := a[1].(float64)
			if !ok1 || !ok2 {
				return undefined
			}
			r := []rune(s)
			return string(r[:clamp(int(n), 0, len(r))])
		}},
		"RIGHT": {2, 2, func(a []any) any {
			s, ok1 := a[0].(string)
			n, ok2 := a[1].(float64)
			if !ok1 || !ok2 {
				return undefined
			}
			r := []rune(s)
			return string(r[len(r)-clamp(int(n), 0, len(r)):])
		}},
		"SUBSTRING": {3, 3, func(a []any) any {
			s, ok1 := a[0].(string)
			start, ok2 := a[1].(float64)
			length, ok3 := a[2].(float64)
			if !ok1 || !ok2 || !ok3 {
				return undefined
			}
			r := []rune(s)
			from := clamp(int(start), 0, len(r))
			to := clamp(from+max(int(length), 0), from, len(r))
			return string(r[from:to])
		}},
		"REPLACE": {3, 3, func(a []any) any {
			s, ok1 := a[0].(string)
			old, ok2 := a[1].(string)
			repl, ok3 := a[2].(string)
			if !ok1 || !ok2 || !ok3 {
				return undefined
			}
			if old == "" {
				return s
			}
			return strings.ReplaceAll(s, old, repl)
		}},
		"REPLICATE": {2, 2, func(a []any) any {
			s, ok1 := a[0].(string)
			n, ok2 := a[1].(float64)
			// The service returns undefined rather than build a result
			// longer than 10,000 characters.
			if !ok1 || !ok2 || n < 0 || float64(len([]rune(s)))*math.Trunc(n) > 10000 {
				return undefined
			}
			return strings.Repeat(s, int(n))
		}},

		// Math.
		"ABS":     mathFunc(math.Abs),
		"CEILING": mathFunc(math.Ceil),
		"FLOOR":   mathFunc(math.Floor),
		"ROUND":   mathFunc(math.Round), // half away from zero, as the service rounds
		"TRUNC":   mathFunc(math.Trunc),
		"SQRT":    mathFunc(math.Sqrt),
		"SIGN": mathFunc(func(f float64) float64 {
			switch {
			case f > 0:
				return 1
			case f < 0:
				return -1
			}
			return 0
		}),
		"POWER": {2, 2, func(a []any) any {
			x, ok1 := a[0].(float64)
			y, ok2 := a[1].(float64)
			if !ok1 || !ok2 {
				return undefined
			}
			return numberResult(math.Pow(x, y))
		}},
	}
}

func mathFunc(f func(float64) float64) *funcDef {
	return &funcDef{1, 1, func(a []any) any {
		if x, ok := a[0].(float64); ok {
			return numberResult(f(x))
		}
		return undefined
	}}
}

func stringMap(f func(string) string) *funcDef {
	return &funcDef{1, 1, func(a []any) any {
		if s, ok := a[0].(string); ok {
			return f(s)
		}
		return undefined
	}}
}

// stringPredicate builds CONTAINS/STARTSWITH/ENDSWITH/STRINGEQUALS, whose
// optional third argument is a boolean "ignore case".
func stringPredicate(pred func(s, sub string) bool) func([]any) any {
	return func(a []any) any {
		s, ok1 := a[0].(string)
		sub, ok2 := a[1].(string)
		if !ok1 || !ok2 {
			return undefined
		}
		if len(a) == 3 {
			ic, ok := a[2].(bool)
			if !ok {
				return undefined
			}
			if ic {
				s, sub = strings.ToLower(s), strings.ToLower(sub)
			}
		}
		return pred(s, sub)
	}
}

// arrayContains implements ARRAY_CONTAINS(arr, value[, partial]). With
// partial true an object element matches when it contains every property of
// the searched object with an equal value.
func arrayContains(a []any) any {
	arr, ok := a[0].([]any)
	if !ok {
		return undefined
	}
	partial := false
	if len(a) == 3 {
		b, ok := a[2].(bool)
		if !ok {
			return undefined
		}
		partial = b
	}
	want := a[1]
	if isUndef(want) {
		return false
	}
	for _, el := range arr {
		el = canon(el)
		if partial {
			wm, ok1 := want.(map[string]any)
			em, ok2 := el.(map[string]any)
			if ok1 && ok2 {
				if containsAll(em, wm) {
					return true
				}
				continue
			}
		}
		if typeRank(el) == typeRank(want) && deepEqual(el, want) {
			return true
		}
	}
	return false
}

func containsAll(have, want map[string]any) bool {
	for k, wv := range want {
		hv, ok := have[k]
		if !ok {
			return false
		}
		hv, wv = canon(hv), canon(wv)
		if typeRank(hv) != typeRank(wv) || !deepEqual(hv, wv) {
			return false
		}
	}
	return true
}

// arraySlice implements ARRAY_SLICE(arr, start[, length]); a negative start
// counts from the end.
func arraySlice(a []any) any {
	arr, ok := a[0].([]any)
	start, ok2 := a[1].(float64)
	if !ok || !ok2 {
		return undefined
	}
	n := len(arr)
	from := int(start)
	if from < 0 {
		from = max(n+from, 0)
	}
	from = min(from, n)
	to := n
	if len(a) == 3 {
		l, ok := a[2].(float64)
		if !ok {
			return undefined
		}
		to = clamp(from+max(int(l), 0), from, n)
	}
	out := make([]any, to-from)
	copy(out, arr[from:to])
	return out
}

func clamp(v, lo, hi int) int { return min(max(v, lo), hi) }

func reverse(r []rune) {
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
}
