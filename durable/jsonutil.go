package durable

import (
	"bytes"
	"encoding/json"
	"strings"
)

// jsonUnmarshal decodes s into v.
func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// jsonString renders s as a JSON string without HTML escaping, as serde
// writes it.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
