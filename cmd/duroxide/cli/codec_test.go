package cli_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/cmd/duroxide/cli"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
	"github.com/duroxide-go/cdb/payload"
)

// The CLI decodes payloads through the codecs DUROXIDE_CODEC and
// DUROXIDE_CODEC_KEYS configure, and shows a placeholder saying what is
// missing without them.
func TestShowDecodesThroughTheConfiguredCodec(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	secret := bytes.Repeat([]byte{7}, 32)
	reg := durable.NewRegistry()
	must(t, reg.AddOrchestration("Hello", func(_ *durable.OrchestrationContext, in string) (string, error) {
		return "hello " + in, nil
	}))
	store := completeThroughCodec(ctx, t, secret, reg, "Hello")

	run := func(codec, keys string, args ...string) (int, string) {
		t.Setenv(payload.EnvCodec, codec)
		t.Setenv(payload.EnvCodecKeys, keys)
		var out, errOut bytes.Buffer
		cmd := cli.Command{Stdout: &out, Stderr: &errOut, Open: func(context.Context) (duroxide.Provider, func() error, error) {
			return store, nil, nil
		}}
		return cmd.Run(ctx, args), out.String() + errOut.String()
	}
	show := func(codec, keys string) string {
		t.Setenv(payload.EnvCodec, codec)
		t.Setenv(payload.EnvCodecKeys, keys)
		var out, errOut bytes.Buffer
		cmd := cli.Command{Stdout: &out, Stderr: &errOut, Open: func(context.Context) (duroxide.Provider, func() error, error) {
			return store, nil, nil
		}}
		if code := cmd.Run(ctx, []string{"show", "greet-1"}); code != cli.ExitOK {
			t.Fatalf("show with %s=%q: exit %d\n%s\n%s", payload.EnvCodec, codec, code, out.String(), errOut.String())
		}
		return out.String()
	}
	if out := show("", ""); strings.Contains(out, "classified") || !strings.Contains(out, "<encoded payload (gzip,aesgcm): codec not configured: set DUROXIDE_CODEC>") {
		t.Errorf("without a codec, show must print the placeholder and nothing of the payload:\n%s", out)
	}
	if out := show("gzip,aesgcm", "k0="+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))); strings.Contains(out, "classified") || !strings.Contains(out, "key not configured") {
		t.Errorf("with another key, show must say the key is missing:\n%s", out)
	}
	if out := show("gzip,aesgcm", "k1="+base64.StdEncoding.EncodeToString(secret)); !strings.Contains(out, "hello classified") {
		t.Errorf("with the codec, show must print the decoded output:\n%s", out)
	}

	// export reads strictly: envelopes as stored without a codec, the
	// payloads with it, and with a key missing the instance's read error
	// (an export records what it could not read), never a placeholder.
	good := "k1=" + base64.StdEncoding.EncodeToString(secret)
	if code, out := run("", "", "export"); code != cli.ExitOK || !strings.Contains(out, payload.Prefix+"gzip,aesgcm:") || strings.Contains(out, "classified") {
		t.Errorf("export without a codec: exit %d, want the stored envelopes:\n%s", code, out)
	}
	if code, out := run("gzip,aesgcm", good, "export"); code != cli.ExitOK || !strings.Contains(out, "hello classified") {
		t.Errorf("export with the codec: exit %d, want the payloads:\n%s", code, out)
	}
	if code, out := run("gzip,aesgcm", "k0="+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)), "export"); code != cli.ExitOK || !strings.Contains(out, `"read_error"`) || !strings.Contains(out, "not configured") || strings.Contains(out, "<encoded payload") {
		t.Errorf("export with another key: exit %d, want the read error naming the key:\n%s", code, out)
	}
}

// replay reads histories strictly, as export does: through the configured
// codec the recorded code replays; with the key missing the command fails
// and names it instead of replaying envelopes as if they were payloads.
func TestReplayDecodesThroughTheConfiguredCodec(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	secret := bytes.Repeat([]byte{9}, 32)
	reg := durable.NewRegistry()
	must(t, reg.AddOrchestration("Greet", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallActivity[string](ctx, "Upper", in).Await()
	}))
	must(t, durable.RegisterActivity(reg, "Upper", func(_ durable.ActivityContext, in string) (string, error) {
		return strings.ToUpper(in), nil
	}))
	store := completeThroughCodec(ctx, t, secret, reg, "Greet")

	replay := func(keys string) (int, string) {
		t.Setenv(payload.EnvCodec, "gzip,aesgcm")
		t.Setenv(payload.EnvCodecKeys, keys)
		code, stdout, stderr := run(t, reg, store, "replay", "-v")
		return code, stdout + stderr
	}
	if code, out := replay("k1=" + base64.StdEncoding.EncodeToString(secret)); code != cli.ExitOK || !strings.Contains(out, "1 ok, 0 failed") {
		t.Errorf("replay with the codec: exit %d, want the execution replayed:\n%s", code, out)
	}
	if code, out := replay("k0=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))); code == cli.ExitOK || !strings.Contains(out, "not configured") || strings.Contains(out, "classified") {
		t.Errorf("replay with another key: exit %d, want a failure naming the missing key:\n%s", code, out)
	}
}

// completeThroughCodec runs instance greet-1 of orchestration, input
// "classified", to completion on a runtime over payload.Wrap (gzip, then
// AES-GCM under key k1 with secret), and returns the store beneath the
// codecs: what the CLI opens holds only envelopes, so a test of the
// CLI's decoding cannot pass by reading plain payloads.
func completeThroughCodec(ctx context.Context, t *testing.T, secret []byte, reg *durable.Registry, orchestration string) *memprovider.Provider {
	t.Helper()
	aes, err := payload.AESGCM(payload.Key{ID: "k1", Secret: secret})
	must(t, err)
	store := memprovider.New()
	p, err := payload.Wrap(store, payload.Gzip(), aes)
	must(t, err)
	rt, err := durable.Start(ctx, p, reg, nil)
	must(t, err)
	c := durable.NewClient(p)
	must(t, c.StartOrchestration(ctx, "greet-1", orchestration, "classified"))
	_, err = c.WaitForOrchestration(ctx, "greet-1", durable.WaitOptions{Timeout: 30 * time.Second})
	must(t, err)
	must(t, rt.Shutdown(ctx))
	return store
}
