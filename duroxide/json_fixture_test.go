package duroxide

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// readJSONL returns the non-empty lines of a testdata file.
func readJSONL(t testing.TB, name string) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			lines = append(lines, append([]byte(nil), line...))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(lines) == 0 {
		t.Fatalf("%s is empty", name)
	}
	return lines
}

// Every example of duroxide.md §1.1 decodes and re-encodes to identical bytes.
func TestFixtureEventsRoundTripBytes(t *testing.T) {
	for _, file := range []string{"events.jsonl", "serde_events.jsonl"} {
		for i, line := range readJSONL(t, file) {
			e, err := UnmarshalEvent(line)
			if err != nil {
				t.Fatalf("%s:%d: decode: %v\n%s", file, i+1, err, line)
			}
			out, err := e.MarshalJSON()
			if err != nil {
				t.Fatalf("%s:%d: encode: %v", file, i+1, err)
			}
			if !bytes.Equal(out, line) {
				t.Errorf("%s:%d: round trip differs\n got: %s\nwant: %s", file, i+1, out, line)
			}
			if !json.Valid(out) {
				t.Errorf("%s:%d: invalid JSON", file, i+1)
			}
		}
	}
}

// Every example of duroxide.md §1.3 decodes and re-encodes to identical bytes.
func TestFixtureWorkItemsRoundTripBytes(t *testing.T) {
	for _, file := range []string{"workitems.jsonl", "serde_workitems.jsonl"} {
		for i, line := range readJSONL(t, file) {
			w, err := UnmarshalWorkItem(line)
			if err != nil {
				t.Fatalf("%s:%d: decode: %v\n%s", file, i+1, err, line)
			}
			out, err := MarshalWorkItem(w)
			if err != nil {
				t.Fatalf("%s:%d: encode: %v", file, i+1, err)
			}
			if !bytes.Equal(out, line) {
				t.Errorf("%s:%d: round trip differs\n got: %s\nwant: %s", file, i+1, out, line)
			}
			// The variant's own MarshalJSON gives the same bytes.
			out2, err := w.(json.Marshaler).MarshalJSON()
			if err != nil || !bytes.Equal(out2, line) {
				t.Errorf("%s:%d: %T.MarshalJSON = %s, %v", file, i+1, w, out2, err)
			}
		}
	}
}

// Every example of duroxide.md §1.2 decodes and re-encodes to identical bytes.
func TestFixtureErrorDetailsRoundTripBytes(t *testing.T) {
	for _, file := range []string{"errordetails.jsonl", "serde_errordetails.jsonl"} {
		for i, line := range readJSONL(t, file) {
			d, err := UnmarshalErrorDetails(line)
			if err != nil {
				t.Fatalf("%s:%d: decode: %v\n%s", file, i+1, err, line)
			}
			out, err := MarshalErrorDetails(d)
			if err != nil {
				t.Fatalf("%s:%d: encode: %v", file, i+1, err)
			}
			if !bytes.Equal(out, line) {
				t.Errorf("%s:%d: round trip differs\n got: %s\nwant: %s", file, i+1, out, line)
			}
		}
	}
}
