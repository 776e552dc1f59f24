package duroxide

import (
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/duroxide-go/cdb/internal/wirejson"
)

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string escaped exactly like serde_json:
// only '"', '\\' and control characters below U+0020 are escaped. Invalid
// UTF-8 is replaced by U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"':
				b = append(b, '\\', '"')
			case '\\':
				b = append(b, '\\', '\\')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\uFFFD"...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendField appends ,"name": (or "name": right after '{').
func appendKey(b []byte, name string) []byte {
	if c := b[len(b)-1]; c != '{' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

func appendStrField(b []byte, name, v string) []byte {
	return appendString(appendKey(b, name), v)
}

func appendU64Field(b []byte, name string, v uint64) []byte {
	return strconv.AppendUint(appendKey(b, name), v, 10)
}

func appendBoolField(b []byte, name string, v bool) []byte {
	return strconv.AppendBool(appendKey(b, name), v)
}

// appendOptStrField writes an always-present Option<String> (null if nil).
func appendOptStrField(b []byte, name string, v *string) []byte {
	b = appendKey(b, name)
	if v == nil {
		return append(b, "null"...)
	}
	return appendString(b, *v)
}

// appendOptU64Field writes an always-present Option<u64> (null if nil).
func appendOptU64Field(b []byte, name string, v *uint64) []byte {
	b = appendKey(b, name)
	if v == nil {
		return append(b, "null"...)
	}
	return strconv.AppendUint(b, *v, 10)
}

// appendSkipStrField writes an Option<String> with skip_serializing_if.
func appendSkipStrField(b []byte, name string, v *string) []byte {
	if v == nil {
		return b
	}
	return appendString(appendKey(b, name), *v)
}

// appendSkipU64Field writes an Option<u64> with skip_serializing_if.
func appendSkipU64Field(b []byte, name string, v *uint64) []byte {
	if v == nil {
		return b
	}
	return strconv.AppendUint(appendKey(b, name), *v, 10)
}

// appendCarry writes [[name,data],...]; nil writes [].
func appendCarry(b []byte, evs []CarryForwardEvent) []byte {
	b = append(b, '[')
	for i, c := range evs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendCarryForwardEvent(b, c)
	}
	return append(b, ']')
}

func appendCarryForwardEvent(b []byte, c CarryForwardEvent) []byte {
	b = append(b, '[')
	b = appendString(b, c.Name)
	b = append(b, ',')
	b = appendString(b, c.Data)
	return append(b, ']')
}

// deref returns the value a non-nil pointer points to, so that encoders
// accept &ActivityCompleted{...} as well as ActivityCompleted{...}. ok is
// false for a nil pointer or a non-pointer.
func deref(v any) (elem any, isPtr, isNil bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer {
		return nil, false, false
	}
	if rv.IsNil() {
		return nil, true, true
	}
	return rv.Elem().Interface(), true, false
}

// MarshalJSON encodes the pair as the two-element array [name,data].
func (c CarryForwardEvent) MarshalJSON() ([]byte, error) {
	return appendCarryForwardEvent(make([]byte, 0, 8+len(c.Name)+len(c.Data)), c), nil
}

// UnmarshalJSON decodes the two-element array [name,data].
func (c *CarryForwardEvent) UnmarshalJSON(data []byte) error {
	d := newDecoder(data, "CarryForwardEvent", wirejson.Options{})
	v, err := d.carryForwardEvent()
	if err == nil {
		err = d.Finish()
	}
	if err != nil {
		return d.typed(err)
	}
	*c = v
	return nil
}
