package duroxide

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/duroxide-go/cdb/internal/wirejson"
)

// addFixtureSeeds adds every line of the given testdata files to f.
func addFixtureSeeds(f *testing.F, files ...string) {
	for _, name := range files {
		for _, line := range readJSONL(f, name) {
			f.Add(line)
		}
	}
}

// checkStable asserts the fuzz invariant: once input decodes, encoding is
// valid JSON, and decoding the encoding gives a value that encodes to the
// same bytes.
func checkStable(t *testing.T, data []byte, decode func([]byte) (any, error), encode func(any) ([]byte, error)) {
	v, err := decode(data)
	if err != nil {
		return
	}
	out, err := encode(v)
	if err != nil {
		t.Fatalf("decoded %q to %#v, which does not encode: %v", data, v, err)
	}
	if !json.Valid(out) {
		t.Fatalf("encoding of %q is invalid JSON: %s", data, out)
	}
	v2, err := decode(out)
	if err != nil {
		t.Fatalf("own encoding %s does not decode: %v", out, err)
	}
	out2, err := encode(v2)
	if err != nil || !bytes.Equal(out, out2) {
		t.Fatalf("unstable round trip:\n%s\n%s (%v)", out, out2, err)
	}
}

func FuzzEventRoundTrip(f *testing.F) {
	addFixtureSeeds(f, "events.jsonl", "serde_events.jsonl")
	f.Add([]byte(`{"type":"KeyValuesCleared","event_id":1,"instance_id":"i","execution_id":1,"timestamp_ms":1,"duroxide_version":"v"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkStable(t, data,
			func(b []byte) (any, error) { return UnmarshalEvent(b) },
			func(v any) ([]byte, error) { return v.(Event).MarshalJSON() })
	})
}

func FuzzWorkItemRoundTrip(f *testing.F) {
	addFixtureSeeds(f, "workitems.jsonl", "serde_workitems.jsonl")
	f.Add([]byte(`{"CancelInstance":["i","r"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkStable(t, data,
			func(b []byte) (any, error) { return UnmarshalWorkItem(b) },
			func(v any) ([]byte, error) { return MarshalWorkItem(v.(WorkItem)) })
	})
}

func FuzzErrorDetailsRoundTrip(f *testing.F) {
	addFixtureSeeds(f, "errordetails.jsonl", "serde_errordetails.jsonl")
	f.Fuzz(func(t *testing.T, data []byte) {
		checkStable(t, data,
			func(b []byte) (any, error) { return UnmarshalErrorDetails(b) },
			func(v any) ([]byte, error) { return MarshalErrorDetails(v.(ErrorDetails)) })
	})
}

// FuzzString checks the string encoder against encoding/json: both must
// decode to the same Go string (invalid UTF-8 becomes U+FFFD), and the
// decoder must read back exactly what encoding/json reads.
func FuzzString(f *testing.F) {
	for _, s := range []string{"", nasty, "\xff\xfe", "\\u0041", `"`, "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc := appendString(nil, s)
		var want string
		std, _ := json.Marshal(s)
		if err := json.Unmarshal(std, &want); err != nil {
			t.Fatal(err)
		}
		var viaStd string
		if err := json.Unmarshal(enc, &viaStd); err != nil || viaStd != want {
			t.Fatalf("%q: encoding/json reads %s as %q, want %q (%v)", s, enc, viaStd, want, err)
		}
		d := newDecoder(enc, "string", wirejson.Options{})
		got, err := d.ReadString()
		if err != nil || got != want || d.Finish() != nil {
			t.Fatalf("%q: readString(%s) = %q, %v; want %q", s, enc, got, err, want)
		}
		// Our decoder also reads encoding/json's (HTML-escaped) form.
		d = newDecoder(std, "string", wirejson.Options{})
		if got, err := d.ReadString(); err != nil || got != want {
			t.Fatalf("%q: readString(%s) = %q, %v", s, std, got, err)
		}
	})
}
