package durable

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/duroxide-go/cdb/internal/wirejson"
)

// The typed codec turns a typed value into the text a history stores and
// back, byte for byte as Rust duroxide's _typed_codec::Json does, so typed
// Go code and typed Rust code store the same payloads. It is the one rule for every
// typed value, KV values included (Rust's set_kv_value_typed quotes strings
// instead; Decode reads both):
//   - encode: a value whose JSON is a string is stored as the raw text
//     (the string "World" is stored as World, not "World"); anything else
//     as compact JSON with object keys sorted (serde_json's Value map is a
//     BTreeMap) and without HTML escaping (serde_json does not escape <>&).
//   - decode: parse the text as JSON into the target; if that fails, treat
//     the raw text as a JSON string value (so a raw World decodes into a
//     string).

// Encode converts a typed value into the raw payload stored in history.
func Encode(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, err := marshalNoEscape(v)
	if err != nil {
		return "", err
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	if len(b) > 0 && (b[0] == '{' || b[0] == '[') {
		return canonicalJSON(b)
	}
	return string(b), nil
}

// Decode converts a raw payload into T (see Encode for the rules).
func Decode[T any](s string) (T, error) {
	var v T
	if err := json.Unmarshal([]byte(s), &v); err == nil {
		return v, nil
	} else if q, qerr := json.Marshal(s); qerr == nil {
		var v2 T
		if json.Unmarshal(q, &v2) == nil {
			return v2, nil
		}
		return v, err
	} else {
		return v, err
	}
}

// marshalNoEscape is json.Marshal without HTML escaping or a trailing
// newline.
func marshalNoEscape(v any) ([]byte, error) { return wirejson.Marshal(v) }

// canonicalJSON re-encodes a JSON document with sorted object keys,
// keeping numbers as written.
func canonicalJSON(b []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return "", err
	}
	out, err := marshalNoEscape(tree)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// ErrUnsupportedType is matched (errors.Is) by the error of
// RegisterOrchestration, RegisterOrchestrationVersion and RegisterActivity
// when the function's input or output type is one the typed codec (JSON)
// cannot carry: a channel, a func, a complex number, an unsafe pointer,
// or a map whose keys are none of string, integer or
// encoding.TextMarshaler, at any depth that encoding/json reaches. Such a
// registration would fail every call at run time instead. The error is a
// *RegistrationError naming the type and where in it the problem is.
var ErrUnsupportedType = errors.New("durable: the typed codec (JSON) cannot carry this type")

var (
	jsonMarshaler    = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshaler  = reflect.TypeFor[json.Unmarshaler]()
	textMarshaler    = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshaler  = reflect.TypeFor[encoding.TextUnmarshaler]()
	customCodecFaces = []reflect.Type{jsonMarshaler, jsonUnmarshaler, textMarshaler, textUnmarshaler}
)

// codecCarries returns nil if the typed codec can encode and decode
// values of t, else a description of the part of t it cannot (e.g.
// "field Done: chan struct {}"). A type with its own JSON or text
// (un)marshaling is trusted; an interface type is checked at run time
// by encoding/json, as its dynamic value is not known here.
func codecCarries(t reflect.Type) error {
	return carries(t, map[reflect.Type]bool{})
}

func carries(t reflect.Type, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil // a recursive type: checked where it started
	}
	seen[t] = true
	for _, face := range customCodecFaces {
		if t.Implements(face) || reflect.PointerTo(t).Implements(face) {
			return nil
		}
	}
	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer:
		return fmt.Errorf("%s", t)
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return carries(t.Elem(), seen)
	case reflect.Map:
		k := t.Key()
		switch k.Kind() {
		case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		default:
			if !k.Implements(textMarshaler) {
				return fmt.Errorf("map key %s (want a string, an integer or an encoding.TextMarshaler)", k)
			}
		}
		if err := carries(t.Elem(), seen); err != nil {
			return fmt.Errorf("map value: %w", err)
		}
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if tag := f.Tag.Get("json"); tag == "-" {
				continue
			}
			ft := f.Type
			if f.Anonymous && ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if !f.IsExported() && !(f.Anonymous && ft.Kind() == reflect.Struct) {
				continue // encoding/json ignores it
			}
			if err := carries(f.Type, seen); err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
	}
	return nil
}

// checkCodecTypes refuses a typed registration whose input or output type
// the codec cannot carry (ErrUnsupportedType).
func checkCodecTypes[In, Out any](kind, name string) error {
	for _, side := range []struct {
		what string
		t    reflect.Type
	}{{"input", reflect.TypeFor[In]()}, {"output", reflect.TypeFor[Out]()}} {
		if err := codecCarries(side.t); err != nil {
			return &RegistrationError{Kind: kind, Name: name, Err: ErrUnsupportedType,
				Reason: fmt.Sprintf("its %s type %s cannot be carried by the typed codec (JSON): %v", side.what, side.t, err)}
		}
	}
	return nil
}
