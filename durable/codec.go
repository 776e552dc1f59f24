package durable

import (
	"bytes"
	"encoding/json"

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
