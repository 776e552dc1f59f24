package cli_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/cmd/duroxide/cli"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/demo"
	"github.com/duroxide-go/cdb/memprovider"
	"github.com/duroxide-go/cdb/payload"
)

// heartbeatRegistry has "Beat": its activity heartbeats {"page":7} and
// runs until release is closed.
func heartbeatRegistry(t *testing.T, release <-chan struct{}) *durable.Registry {
	t.Helper()
	r := durable.NewRegistry()
	must(t, r.AddActivity("Copy", func(ctx durable.ActivityContext, _ string) (string, error) {
		if err := ctx.Heartbeat(map[string]int{"page": 7}); err != nil {
			return "", err
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "copied", nil
	}))
	must(t, r.AddOrchestration("Beat", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.CallActivity[string](ctx, "Copy", "").Await()
	}))
	return r
}

// waitHeartbeat waits until the store holds instance's heartbeat.
func waitHeartbeat(t *testing.T, c *durable.Client, instance string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		hs, err := c.ActivityHeartbeats(t.Context(), instance)
		must(t, err)
		if len(hs) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no heartbeat stored for %s", instance)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestShowListsActivityHeartbeats: a running activity's last heartbeat
// (stored by its lock renewal) shows in `show` and `show -json`, on both
// providers, and is gone once the activity completed.
func TestShowListsActivityHeartbeats(t *testing.T) {
	for name, p := range map[string]duroxide.Provider{"memprovider": memprovider.New(), "cosmos": demo.CosmosProvider(t)} {
		t.Run(name, func(t *testing.T) {
			release := make(chan struct{})
			demo.StartRuntime(t, p, heartbeatRegistry(t, release), &durable.Options{WorkerLockTimeout: 2 * time.Second})
			done := sync.OnceFunc(func() { close(release) })
			t.Cleanup(done) // before the runtime's shutdown, should the test fail
			e := &opsEnv{t: t, p: p, c: durable.NewClient(p), switches: new(switches)}
			must(t, e.c.StartOrchestration(t.Context(), "hb-1", "Beat", ""))
			waitHeartbeat(t, e.c, "hb-1")
			out, _ := e.want(cli.ExitOK, "show", "hb-1")
			if !strings.Contains(out, `Heartbeat      Copy #2: {"page":7} (at `) {
				t.Fatalf("show lacks the heartbeat:\n%s", out)
			}
			js, _ := e.want(cli.ExitOK, "show", "-json", "hb-1")
			if !strings.Contains(js, `"heartbeats": [`) || !strings.Contains(js, `"details": "{\"page\":7}"`) || !strings.Contains(js, `"activity_id": 2`) {
				t.Fatalf("show -json lacks the heartbeat:\n%s", js)
			}
			done()
			e.terminal("hb-1")
			if out, _ := e.want(cli.ExitOK, "show", "hb-1"); strings.Contains(out, "Heartbeat") {
				t.Fatalf("the activity completed, show still lists its heartbeat:\n%s", out)
			}
		})
	}
}

// TestShowDecodesHeartbeatsThroughTheCodec: heartbeat details stored by a
// runtime over payload.Wrap are an envelope in the store; `show` decodes
// them with the configured codec and prints the placeholder without it.
func TestShowDecodesHeartbeatsThroughTheCodec(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, 32)
	aes, err := payload.AESGCM(payload.Key{ID: "k1", Secret: secret})
	must(t, err)
	store := memprovider.New()
	p, err := payload.Wrap(store, payload.Gzip(), aes)
	must(t, err)
	release := make(chan struct{})
	demo.StartRuntime(t, p, heartbeatRegistry(t, release), &durable.Options{WorkerLockTimeout: 2 * time.Second})
	t.Cleanup(sync.OnceFunc(func() { close(release) }))
	c := durable.NewClient(p)
	must(t, c.StartOrchestration(t.Context(), "hb-codec", "Beat", ""))
	waitHeartbeat(t, c, "hb-codec")

	show := func(codec, keys string) string {
		t.Setenv(payload.EnvCodec, codec)
		t.Setenv(payload.EnvCodecKeys, keys)
		var out, errOut bytes.Buffer
		cmd := cli.Command{Stdout: &out, Stderr: &errOut, Open: func(context.Context) (duroxide.Provider, func() error, error) {
			return store, nil, nil
		}}
		if code := cmd.Run(t.Context(), []string{"show", "hb-codec"}); code != cli.ExitOK {
			t.Fatalf("show: exit %d\n%s\n%s", code, out.String(), errOut.String())
		}
		return out.String()
	}
	if out := show("", ""); strings.Contains(out, "page") || !strings.Contains(out, "Heartbeat      Copy #2: <encoded payload (gzip,aesgcm): codec not configured") {
		t.Errorf("without a codec, the heartbeat must be the placeholder:\n%s", out)
	}
	if out := show("gzip,aesgcm", "k1="+base64.StdEncoding.EncodeToString(secret)); !strings.Contains(out, `Heartbeat      Copy #2: {"page":7} (at `) {
		t.Errorf("with the codec, show must print the decoded details:\n%s", out)
	}
}
