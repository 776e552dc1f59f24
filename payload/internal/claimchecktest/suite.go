// Package claimchecktest is the behaviour suite that payload/blobstore's
// and payload/filestore's tests run on their stores.
package claimchecktest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/duroxide-go/cdb/payload"
)

// Codec is what both stores' codecs are.
type Codec interface {
	payload.Codec
	payload.PayloadDeleter
}

// Backend opens codecs on one store and looks into it.
type Backend struct {
	// New returns a fresh codec (no cache shared with earlier ones) on the
	// same store, with the given threshold.
	New func(t *testing.T, threshold int) Codec
	// Objects lists the names (relative to the codec's) of the store.
	Objects func(t *testing.T) []string
	// Overwrite replaces the object under name.
	Overwrite func(t *testing.T, name string, data []byte)
}

// Run runs the suite.
func Run(t *testing.T, b Backend) {
	t.Run("RoundTripAndThresholdBoundary", func(t *testing.T) { roundTrip(t, b) })
	t.Run("RetryIsOneObject", func(t *testing.T) { retry(t, b) })
	t.Run("ConcurrentEncodeAndRestart", func(t *testing.T) { concurrent(t, b) })
	t.Run("BadReference", func(t *testing.T) { badReference(t, b) })
	t.Run("MissingAndCorrupt", func(t *testing.T) { missing(t, b) })
	t.Run("DeleteByInstanceAndExecution", func(t *testing.T) { deletes(t, b) })
	t.Run("FiftyMegabytes", func(t *testing.T) { large(t, b) })
}

func random(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func mustEncode(t *testing.T, c Codec, s payload.Scope, data []byte) []byte {
	t.Helper()
	enc, err := c.Encode(context.Background(), s, data)
	if err != nil {
		t.Fatalf("Encode(%d bytes): %v", len(data), err)
	}
	return enc
}

func mustDecode(t *testing.T, c Codec, s payload.Scope, enc []byte, want []byte) {
	t.Helper()
	got, err := c.Decode(context.Background(), s, enc)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Decode returned %d bytes, not the %d encoded", len(got), len(want))
	}
}

// refName is the object name in a reference, "" for an inline payload.
func refName(t *testing.T, enc []byte) string {
	t.Helper()
	if enc[0] == '=' {
		return ""
	}
	var r struct{ Name string }
	if enc[0] != '@' || json.Unmarshal(enc[1:], &r) != nil {
		t.Fatalf("encoded form %.40q is neither inline nor a reference", enc)
	}
	return r.Name
}

func objectsUnder(t *testing.T, b Backend, prefix string) []string {
	var out []string
	for _, n := range b.Objects(t) {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

func roundTrip(t *testing.T, b Backend) {
	c := b.New(t, 1000)
	s := payload.Scope{Instance: "rt", ExecutionID: 1}
	for _, n := range []int{0, 1, 999, 1000} {
		data := random(t, n)
		enc := mustEncode(t, c, s, data)
		if refName(t, enc) != "" || len(enc) != n+1 {
			t.Fatalf("%d bytes (at most the threshold) were not kept inline: %d encoded", n, len(enc))
		}
		mustDecode(t, c, s, enc, data)
	}
	if got := objectsUnder(t, b, "rt/"); len(got) != 0 {
		t.Fatalf("inline payloads wrote objects: %v", got)
	}
	data := random(t, 1001)
	enc := mustEncode(t, c, s, data)
	name := refName(t, enc)
	if name == "" || len(enc) > 300 {
		t.Fatalf("1001 bytes (over the threshold) were not replaced by a small reference: %d bytes", len(enc))
	}
	if got := objectsUnder(t, b, "rt/1/"); len(got) != 1 || got[0] != name {
		t.Fatalf("objects %v, want [%s]", got, name)
	}
	mustDecode(t, c, s, enc, data)
	mustDecode(t, b.New(t, 1000), payload.Scope{}, enc, data) // the reference, not the scope, names the object
}

func retry(t *testing.T, b Backend) {
	c := b.New(t, 10)
	s := payload.Scope{Instance: "retry", ExecutionID: 3}
	data := random(t, 100)
	first := mustEncode(t, c, s, data)
	second := mustEncode(t, b.New(t, 10), s, data)
	if !bytes.Equal(first, second) {
		t.Fatalf("a retried Encode gave another reference:\n%s\n%s", first, second)
	}
	if got := objectsUnder(t, b, "retry/"); len(got) != 1 {
		t.Fatalf("a retried Encode left %d objects, want 1: %v", len(got), got)
	}
}

func concurrent(t *testing.T, b Backend) {
	s := payload.Scope{Instance: "Con/Current", ExecutionID: 2}
	data := random(t, 4096)
	const n = 8
	encs := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		c := b.New(t, 64)
		wg.Add(1)
		go func() {
			defer wg.Done()
			encs[i], errs[i] = c.Encode(context.Background(), s, data)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("concurrent Encode %d: %v", i, errs[i])
		}
		if !bytes.Equal(encs[i], encs[0]) {
			t.Fatalf("concurrent Encodes of one payload gave different references")
		}
	}
	name := refName(t, encs[0])
	if got := objectsUnder(t, b, strings.SplitN(name, "/", 2)[0]+"/"); len(got) != 1 {
		t.Fatalf("%d concurrent Encodes left %d objects, want 1: %v", n, len(got), got)
	}
	mustDecode(t, b.New(t, 64), s, encs[0], data) // after a restart
}

func badReference(t *testing.T, b Backend) {
	c := b.New(t, 10)
	s := payload.Scope{Instance: "bad", ExecutionID: 1}
	sum := strings.Repeat("a", 64)
	for _, in := range []string{
		"",
		`{"plain":"json"}`,
		`@not json`,
		`@{"v":2,"name":"bad/1/` + sum + `","size":1,"sha256":"` + sum + `"}`,
		`@{"v":1,"name":"../../etc/passwd","size":1,"sha256":"` + sum + `"}`,
		`@{"v":1,"name":"bad/1/` + sum + `","size":1,"sha256":"short"}`,
		`@{"v":1,"name":"bad/1/` + sum + `","size":1,"sha256":"` + sum + `","extra":1}`,
	} {
		if _, err := c.Decode(context.Background(), s, []byte(in)); !errors.Is(err, payload.ErrCorrupt) {
			t.Errorf("Decode(%q) = %v, want payload.ErrCorrupt", in, err)
		}
	}
	if _, err := c.Encode(context.Background(), payload.Scope{}, random(t, 100)); !errors.Is(err, payload.ErrCorrupt) {
		t.Errorf("Encode of a large payload with no instance = %v, want payload.ErrCorrupt", err)
	}
}

func missing(t *testing.T, b Backend) {
	c := b.New(t, 10)
	s := payload.Scope{Instance: "gone", ExecutionID: 1}
	data := random(t, 100)
	enc := mustEncode(t, c, s, data)
	mustDecode(t, c, s, enc, data) // now cached
	b.Overwrite(t, refName(t, enc), random(t, 100))
	if _, err := b.New(t, 10).Decode(context.Background(), s, enc); !errors.Is(err, payload.ErrCorrupt) {
		t.Fatalf("Decode of an overwritten object = %v, want payload.ErrCorrupt", err)
	}
	if err := c.DeletePayloads(context.Background(), "gone", nil); err != nil {
		t.Fatal(err)
	}
	// c's cache held it: the delete must evict it, not serve it on.
	for _, cc := range []Codec{c, b.New(t, 10)} {
		if _, err := cc.Decode(context.Background(), s, enc); !errors.Is(err, payload.ErrMissing) {
			t.Fatalf("Decode after delete = %v, want payload.ErrMissing", err)
		}
	}
}

func deletes(t *testing.T, b Backend) {
	c := b.New(t, 10)
	ctx := context.Background()
	type kept struct {
		s    payload.Scope
		enc  []byte
		data []byte
	}
	var all []kept
	// "del/x" shares a prefix with "del" unless IDs are escaped.
	for _, inst := range []string{"del", "del/x", "delx"} {
		for _, e := range []uint64{0, 1, 2, 12} {
			s := payload.Scope{Instance: inst, ExecutionID: e}
			data := random(t, 50)
			all = append(all, kept{s, mustEncode(t, c, s, data), data})
		}
	}
	check := func(gone func(payload.Scope) bool) {
		t.Helper()
		fresh := b.New(t, 10)
		for _, k := range all {
			_, err := fresh.Decode(ctx, k.s, k.enc)
			if gone(k.s) != errors.Is(err, payload.ErrMissing) || !gone(k.s) && err != nil {
				t.Fatalf("%+v: Decode = %v, gone = %v", k.s, err, gone(k.s))
			}
		}
	}
	if err := c.DeletePayloads(ctx, "del", []uint64{1}); err != nil {
		t.Fatal(err)
	}
	check(func(s payload.Scope) bool { return s.Instance == "del" && s.ExecutionID == 1 })
	if err := c.DeletePayloads(ctx, "del", []uint64{}); err != nil {
		t.Fatal(err)
	}
	check(func(s payload.Scope) bool { return s.Instance == "del" && s.ExecutionID == 1 })
	if err := c.DeletePayloads(ctx, "del", nil); err != nil {
		t.Fatal(err)
	}
	check(func(s payload.Scope) bool { return s.Instance == "del" })
	if err := c.DeletePayloads(ctx, "del", nil); err != nil {
		t.Fatalf("deleting again: %v", err)
	}
}

func large(t *testing.T, b Backend) {
	if testing.Short() {
		t.Skip("skipped with -short, which asks for quick tests: this one moves a 50 MB payload; `go test ./...` (the README command) and .ci/run run it")
	}
	c := b.New(t, 0)
	s := payload.Scope{Instance: "large", ExecutionID: 1}
	data := random(t, 50<<20)
	enc := mustEncode(t, c, s, data)
	if len(enc) > 300 {
		t.Fatalf("a 50 MB payload encoded to %d bytes", len(enc))
	}
	mustDecode(t, b.New(t, 0), s, enc, data)
}
