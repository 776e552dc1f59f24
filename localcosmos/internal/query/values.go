package query

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
)

// undefinedType is the type of Cosmos's "undefined": the value of a missing
// property, of an operator applied to mismatched types, and of most functions
// given arguments of the wrong type. It is never emitted in results.
type undefinedType struct{}

var undefined any = undefinedType{}

func isUndef(v any) bool { _, ok := v.(undefinedType); return ok }

// canon converts Go values that are not in encoding/json's decoded shape
// (ints, float32, json.Number, typed slices and maps of those) into it, so
// that callers may pass parameters such as []string or int without thinking
// about how the server decoded them. Documents are expected in decoded shape
// already; property reads canon only scalars, which is cheap.
func canon(v any) any {
	switch x := v.(type) {
	case nil, bool, float64, string, map[string]any, undefinedType:
		return v
	case []any:
		return x
	case int:
		return float64(x)
	case int8:
		return float64(x)
	case int16:
		return float64(x)
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case uint:
		return float64(x)
	case uint8:
		return float64(x)
	case uint16:
		return float64(x)
	case uint32:
		return float64(x)
	case uint64:
		return float64(x)
	case float32:
		return float64(x)
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return undefined
		}
		return f
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	case []float64:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	case []int:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = float64(s)
		}
		return out
	case map[string]string:
		out := make(map[string]any, len(x))
		for k, s := range x {
			out[k] = s
		}
		return out
	}
	// Anything else (structs, other typed slices): round-trip through JSON,
	// which is what the HTTP layer would have done to it anyway.
	b, err := json.Marshal(v)
	if err != nil {
		return undefined
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return undefined
	}
	return out
}

// deepCanon applies canon recursively (used once per parameter value).
func deepCanon(v any) any {
	v = canon(v)
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCanon(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCanon(e)
		}
		return out
	}
	return v
}

// Type ranks used when values of different types must be ordered (ORDER BY,
// MIN/MAX): undefined < null < boolean < number < string < array < object.
// The gaps follow the SDKs' order-by item types (NoValue 0, Null 1,
// Boolean 2, Number 4, String 5).
const (
	rankUndefined = 0
	rankNull      = 1
	rankBool      = 2
	rankNumber    = 4
	rankString    = 5
	rankArray     = 6
	rankObject    = 7
)

func typeRank(v any) int {
	switch v.(type) {
	case nil:
		return rankNull
	case bool:
		return rankBool
	case float64:
		return rankNumber
	case string:
		return rankString
	case []any:
		return rankArray
	case map[string]any:
		return rankObject
	}
	return rankUndefined
}

// compareSameType orders two values of the same type rank. Arrays compare
// element-wise then by length; objects by their canonical encoding (only so
// that sorting is deterministic — Cosmos does not range-compare objects).
func compareSameType(a, b any) int {
	switch x := a.(type) {
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case float64:
		y := b.(float64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case string:
		return strings.Compare(x, b.(string))
	case []any:
		y := b.([]any)
		for i := 0; i < len(x) && i < len(y); i++ {
			if c := compareTotal(x[i], y[i]); c != 0 {
				return c
			}
		}
		return len(x) - len(y)
	case map[string]any:
		return strings.Compare(canonKey(x), canonKey(b))
	}
	return 0
}

// compareTotal is the total order used for sorting: type rank first, then value.
func compareTotal(a, b any) int {
	ra, rb := typeRank(a), typeRank(b)
	if ra != rb {
		return ra - rb
	}
	return compareSameType(a, b)
}

// deepEqual is Cosmos equality for two defined values of the same type:
// numbers by value, objects and arrays structurally (object key order does
// not matter).
func deepEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !deepEqual(canon(x[i]), canon(y[i])) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !deepEqual(canon(xv), canon(yv)) {
				return false
			}
		}
		return true
	}
	return false
}

// canonKey encodes a value canonically, with a type tag so that undefined,
// null, "1" and 1 all differ and with object keys sorted, so that values
// equal under deepEqual get equal keys. DISTINCT and GROUP BY hash on it.
func canonKey(v any) string {
	var b strings.Builder
	writeCanon(&b, v)
	return b.String()
}

func writeCanon(b *strings.Builder, v any) {
	switch x := canon(v).(type) {
	case undefinedType:
		b.WriteByte('U')
	case nil:
		b.WriteByte('N')
	case bool:
		if x {
			b.WriteByte('T')
		} else {
			b.WriteByte('F')
		}
	case float64:
		if x == 0 {
			x = 0 // fold -0 into 0: they are equal
		}
		b.WriteByte('n')
		b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
		b.WriteByte(';')
	case string:
		b.WriteByte('s')
		b.WriteString(strconv.Quote(x))
	case []any:
		b.WriteByte('[')
		for _, e := range x {
			writeCanon(b, e)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for _, k := range keys {
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			writeCanon(b, x[k])
			b.WriteByte(',')
		}
		b.WriteByte('}')
	}
}

// numberResult turns an arithmetic result into a query value. JSON has no
// NaN or infinities, so results that are not finite (1/0, 0/0) are undefined.
func numberResult(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return undefined
	}
	return f
}

// toInt32 is JavaScript's ToInt32, which the service's bitwise operators use.
func toInt32(f float64) int32 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	f = math.Trunc(f)
	f = math.Mod(f, 4294967296)
	if f < 0 {
		f += 4294967296
	}
	return int32(uint32(f))
}
