package duroxide

import (
	"encoding/json"
	"testing"
)

// serdeCase is one line of testdata/serde_decode_cases.jsonl: an input and
// what Rust serde_json (with types mirroring duroxide 0.1.31) did with it.
type serdeCase struct {
	T      string  `json:"t"`
	Input  string  `json:"input"`
	OK     bool    `json:"ok"`
	Output *string `json:"output"`
	Error  *string `json:"error"`
}

// decodeAndEncode runs the Go decoder and encoder for the wire type t.
func decodeAndEncode(t, input string) (string, error) {
	var out []byte
	var err error
	switch t {
	case "Event":
		var e Event
		if e, err = UnmarshalEvent([]byte(input)); err == nil {
			out, err = e.MarshalJSON()
		}
	case "WorkItem":
		var w WorkItem
		if w, err = UnmarshalWorkItem([]byte(input)); err == nil {
			out, err = MarshalWorkItem(w)
		}
	case "ErrorDetails":
		var d ErrorDetails
		if d, err = UnmarshalErrorDetails([]byte(input)); err == nil {
			out, err = MarshalErrorDetails(d)
		}
	default:
		panic("unknown wire type " + t)
	}
	return string(out), err
}

// The Go decoder accepts exactly what serde accepts, and re-encodes what it
// accepts to the bytes serde writes.
func TestSerdeDecodeConformance(t *testing.T) {
	lines := readJSONL(t, "serde_decode_cases.jsonl")
	for i, line := range lines {
		var c serdeCase
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		got, err := decodeAndEncode(c.T, c.Input)
		switch {
		case c.OK && err != nil:
			t.Errorf("line %d: %s %q: serde accepts (-> %s), Go fails: %v", i+1, c.T, c.Input, *c.Output, err)
		case !c.OK && err == nil:
			t.Errorf("line %d: %s %q: serde rejects (%s), Go accepts -> %s", i+1, c.T, c.Input, *c.Error, got)
		case c.OK && got != *c.Output:
			t.Errorf("line %d: %s %q:\n Go:    %s\n serde: %s", i+1, c.T, c.Input, got, *c.Output)
		}
	}
	t.Logf("%d serde decode cases", len(lines))
}
