package limits

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/duroxide-go/cdb/internal/wirejson"
)

// encodedLenCases holds every class of byte the string encoder treats
// differently: safe ASCII, the two-byte escapes, other control bytes,
// DEL, HTML-sensitive bytes, multi-byte runes, U+2028/U+2029, a non-BMP
// rune and invalid UTF-8 (alone, truncated, at the end).
var encodedLenCases = []string{
	"", "plain", `quote " and \ backslash`, "\b\f\n\r\t", "\x00\x01\x1f\x7f",
	"<a href='x'>&amp;</a>", "ünïcødé 日本語", "line\u2028para\u2029", "emoji 😀",
	"bad \xff byte", "truncated \xe2\x80", "\xe2", "\xed\xa0\x80 surrogate", strings.Repeat("<&>", 100),
}

// TestEncodedLenMatchesTheEncoder: EncodedLen counts what the stores'
// encoder writes, and HTMLEscapedLen what encoding/json.Marshal makes of
// a Marshaler's output first, byte for byte, on every class of input and
// on random bytes.
func TestEncodedLenMatchesTheEncoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	inputs := append([]string(nil), encodedLenCases...)
	for range 2000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		inputs = append(inputs, string(b))
	}
	for _, s := range inputs {
		checkEncodedLen(t, s)
	}
}

// FuzzEncodedLen: the same on fuzzed strings.
func FuzzEncodedLen(f *testing.F) {
	for _, s := range encodedLenCases {
		f.Add(s)
	}
	f.Fuzz(checkEncodedLen)
}

func checkEncodedLen(t *testing.T, s string) {
	enc, err := wirejson.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := EncodedLen(s); got != len(enc) {
		t.Fatalf("EncodedLen(%q) = %d, the encoder writes %d bytes", s, got, len(enc))
	}
	// A Marshaler's compact output holding s, as a history event's is.
	js := append(append([]byte(`{"k":`), enc...), '}')
	viaMarshal, err := json.Marshal(rawJSON(js))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := HTMLEscapedLen(js), len(encode(string(viaMarshal))); got != want {
		t.Fatalf("HTMLEscapedLen(%q) = %d, want %d", js, got, want)
	}
}

// rawJSON is a json.Marshaler returning its bytes.
type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }
