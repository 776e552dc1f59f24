package wirejson

import (
	"bytes"
	"encoding/json"
)

// Marshal is json.Marshal without HTML escaping, as serde_json writes:
// json.Marshal turns '<', '>' and '&' into six-byte \u escapes (also
// inside the output of a json.Marshaler), which makes a stored payload of
// HTML up to six times its size and its bytes differ from Rust's.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
