package payload_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/leaktest"
	"github.com/duroxide-go/cdb/memprovider"
	"github.com/duroxide-go/cdb/payload"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

func key(id string, b byte) payload.Key {
	return payload.Key{ID: id, Secret: bytes.Repeat([]byte{b}, 32)}
}

func aes(t *testing.T, keys ...payload.Key) payload.Codec {
	t.Helper()
	c, err := payload.AESGCM(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var sc = payload.Scope{Instance: "i", ExecutionID: 1}

func TestCodecsRoundTripDeterministically(t *testing.T) {
	ctx := context.Background()
	in := []byte(strings.Repeat(`{"a":"secret value"}`, 50))
	for _, c := range []payload.Codec{payload.Gzip(), aes(t, key("k1", 1))} {
		a, err := c.Encode(ctx, sc, in)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := c.Encode(ctx, sc, in)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: encoding is not deterministic", c.Name())
		}
		if bytes.Contains(a, []byte("secret")) {
			t.Errorf("%s: encoded payload holds the plaintext", c.Name())
		}
		if c.Name() == "gzip" && len(a) > len(in)/10 {
			t.Errorf("gzip: %d bytes of repetitive JSON compress only to %d", len(in), len(a))
		}
		out, err := c.Decode(ctx, sc, a)
		if err != nil || !bytes.Equal(out, in) {
			t.Errorf("%s: round trip: %v", c.Name(), err)
		}
	}
	other, _ := aes(t, key("k1", 1)).Encode(ctx, sc, []byte("another"))
	same, _ := aes(t, key("k1", 1)).Encode(ctx, sc, []byte("anothes"))
	if bytes.Equal(other[:3+12], same[:3+12]) {
		t.Error("two plaintexts share a nonce")
	}
}

func TestAESGCMRotationAndErrors(t *testing.T) {
	ctx := context.Background()
	old := aes(t, key("k1", 1))
	enc, _ := old.Encode(ctx, sc, []byte("v"))
	rotated := aes(t, key("k2", 2), key("k1", 1))
	if out, err := rotated.Decode(ctx, sc, enc); err != nil || string(out) != "v" {
		t.Fatalf("old key after rotation: %q, %v", out, err)
	}
	enc2, _ := rotated.Encode(ctx, sc, []byte("v"))
	if _, err := old.Decode(ctx, sc, enc2); !errors.Is(err, payload.ErrUnknownKey) {
		t.Fatalf("new key's payload under the old codec: %v, want ErrUnknownKey", err)
	}
	tampered := bytes.Clone(enc)
	tampered[len(tampered)-1] ^= 1
	if _, err := old.Decode(ctx, sc, tampered); !errors.Is(err, payload.ErrCorrupt) {
		t.Fatalf("tampered: %v, want ErrCorrupt", err)
	}
	if _, err := old.Decode(ctx, sc, enc[:4]); !errors.Is(err, payload.ErrCorrupt) {
		t.Fatalf("truncated: %v, want ErrCorrupt", err)
	}
	// A payload's key ID is authenticated: naming another key fails.
	wrongKey := aes(t, payload.Key{ID: "k1", Secret: bytes.Repeat([]byte{9}, 32)})
	if _, err := wrongKey.Decode(ctx, sc, enc); !errors.Is(err, payload.ErrCorrupt) {
		t.Fatalf("wrong secret: %v, want ErrCorrupt", err)
	}
	for _, bad := range [][]payload.Key{nil, {{ID: "", Secret: make([]byte, 32)}}, {{ID: "a", Secret: make([]byte, 10)}}, {key("a", 1), key("a", 2)}} {
		if _, err := payload.AESGCM(bad...); !errors.Is(err, payload.ErrInvalidCodec) {
			t.Errorf("AESGCM(%v): %v, want ErrInvalidCodec", bad, err)
		}
	}
}

func TestKeysAreNeverPrinted(t *testing.T) {
	k := payload.Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("key", "key", k)
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s", k, k, k, k), logged.String(), fmt.Sprint([]payload.Key{k})} {
		if strings.Contains(s, "0123456789") || strings.Contains(s, "48 49 50") {
			t.Errorf("secret printed: %s", s)
		}
	}
}

func TestWrapRefusesBadConfiguration(t *testing.T) {
	p := memprovider.New()
	for name, codecs := range map[string][]payload.Codec{
		"none":      nil,
		"duplicate": {payload.Gzip(), payload.Gzip()},
		"nil":       {nil},
	} {
		if _, err := payload.Wrap(p, codecs...); !errors.Is(err, payload.ErrInvalidCodec) {
			t.Errorf("%s: %v, want ErrInvalidCodec", name, err)
		}
	}
	if _, err := payload.Wrap(nil, payload.Gzip()); !errors.Is(err, payload.ErrInvalidCodec) {
		t.Errorf("nil provider: %v", err)
	}
	type partial struct {
		duroxide.Provider
		duroxide.ClientWriter
	}
	if _, err := payload.Wrap(partial{p, p}, payload.Gzip()); !errors.Is(err, payload.ErrUnsupportedProvider) {
		t.Errorf("part of the client writes: %v, want ErrUnsupportedProvider", err)
	}
}

// capabilities are the optional interfaces the runtime and the Client
// detect, with whether the wrapper must mirror the inner provider.
var capabilities = []struct {
	name   string
	has    func(duroxide.Provider) bool
	mirror bool
}{
	{"ClientWriter", func(p duroxide.Provider) bool { _, ok := p.(duroxide.ClientWriter); return ok }, true},
	{"DelayedStartWriter", func(p duroxide.Provider) bool { _, ok := p.(duroxide.DelayedStartWriter); return ok }, true},
	{"NextExecutionWriter", func(p duroxide.Provider) bool { _, ok := p.(duroxide.NextExecutionWriter); return ok }, true},
	{"SignalStarter", func(p duroxide.Provider) bool { _, ok := p.(duroxide.SignalStarter); return ok }, true},
	{"PendingNoter", func(p duroxide.Provider) bool { _, ok := p.(duroxide.PendingNoter); return ok }, true},
	{"InstanceFetcher", func(p duroxide.Provider) bool { _, ok := p.(duroxide.InstanceFetcher); return ok }, true},
	{"SuspensionReader", func(p duroxide.Provider) bool { _, ok := p.(duroxide.SuspensionReader); return ok }, true},
	{"PendingRequestReader", func(p duroxide.Provider) bool { _, ok := p.(duroxide.PendingRequestReader); return ok }, true},
	{"StatusReader", func(p duroxide.Provider) bool { _, ok := p.(duroxide.StatusReader); return ok }, true},
	{"EnqueueNotifier", func(p duroxide.Provider) bool { _, ok := p.(duroxide.EnqueueNotifier); return ok }, false},
	{"InstanceEndNotifier", func(p duroxide.Provider) bool { _, ok := p.(duroxide.InstanceEndNotifier); return ok }, false},
	{"WorkAckFetcher", func(p duroxide.Provider) bool { _, ok := p.(duroxide.WorkAckFetcher); return ok }, false},
	{"WorkHandOff", func(p duroxide.Provider) bool { _, ok := p.(duroxide.WorkHandOff); return ok }, false},
	{"DispatchRefuser", func(p duroxide.Provider) bool { _, ok := p.(duroxide.DispatchRefuser); return ok }, false},
	{"HeartbeatRecorder", func(p duroxide.Provider) bool { _, ok := p.(duroxide.HeartbeatRecorder); return ok }, true},
	{"HeartbeatReader", func(p duroxide.Provider) bool { _, ok := p.(duroxide.HeartbeatReader); return ok }, false},
}

// CheckCapabilities fails t unless w has exactly the mirrored
// capabilities of inner, and every other one.
func checkCapabilities(t *testing.T, inner, w duroxide.Provider) {
	t.Helper()
	for _, c := range capabilities {
		want := !c.mirror || c.has(inner)
		if got := c.has(w); got != want {
			t.Errorf("%T wrapped: %s = %v, want %v", inner, c.name, got, want)
		}
	}
}

func TestWrapKeepsCapabilities(t *testing.T) {
	type bare struct{ duroxide.Provider }
	type fetchOnly struct {
		duroxide.Provider
		duroxide.InstanceFetcher
	}
	type statusOnly struct {
		duroxide.Provider
		duroxide.StatusReader
	}
	mem := memprovider.New()
	for _, inner := range []duroxide.Provider{mem, bare{mem}, fetchOnly{mem, mem}, statusOnly{mem, nil}} {
		w, err := payload.Wrap(inner, payload.Gzip())
		if err != nil {
			t.Fatal(err)
		}
		checkCapabilities(t, inner, w)
	}
}

func TestCodecsFromEnvRefusesBadConfigurationWithoutPrintingKeys(t *testing.T) {
	const secretB64 = "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI=" // 32 bytes
	for name, env := range map[string]map[string]string{
		"unknown codec": {payload.EnvCodec: "zstd"},
		"no keys":       {payload.EnvCodec: "aesgcm"},
		"not base64":    {payload.EnvCodec: "aesgcm", payload.EnvCodecKeys: "k1=" + secretB64 + "!"},
		"short key":     {payload.EnvCodec: "aesgcm", payload.EnvCodecKeys: "k1=c2VjcmV0"},
	} {
		_, err := payload.CodecsFromEnv(func(k string) string { return env[k] })
		if !errors.Is(err, payload.ErrInvalidCodec) {
			t.Errorf("%s: %v, want ErrInvalidCodec", name, err)
		} else if strings.Contains(err.Error(), "c2VjcmV0") {
			t.Errorf("%s: the error prints the key: %v", name, err)
		}
	}
	if codecs, err := payload.CodecsFromEnv(func(string) string { return "" }); err != nil || codecs != nil {
		t.Errorf("unset: %v, %v", codecs, err)
	}
}

func TestDisplayRefusesToStoreAPlaceholder(t *testing.T) {
	ctx := context.Background()
	p, err := payload.WrapForDisplay(memprovider.New())
	if err != nil {
		t.Fatal(err)
	}
	ph := payload.Placeholder(payload.Prefix+"aesgcm:AAAA", payload.ErrUnknownKey)
	err = p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: "i", Orchestration: "o", Input: ph, ExecutionID: 1}, 0)
	if !errors.Is(err, payload.ErrUnknownCodec) {
		t.Fatalf("storing a placeholder: %v", err)
	}
}
