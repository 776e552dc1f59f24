package durabletest

import (
	"bytes"
	"errors"
	"strings"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/storedpayload"
	"github.com/duroxide-go/cdb/payload"
)

// Go-only (issue 34): payload codecs (payload.Wrap) on the store under
// test. The env's provider is the store itself; each test wraps it as a
// process configured with a codec would, so what is stored can be read
// both through the codec and as it is.
func payloadCodecTests() []sample {
	return []sample{
		{name: "codec_stores_every_payload_encoded", run: codecStoresEveryPayloadEncoded},
		{name: "codec_replays_a_history_written_without_it", run: codecReplaysUnencodedHistory},
		{name: "codec_key_rotation_keeps_old_payloads_readable", run: codecKeyRotation},
		{name: "codec_undecodable_history_is_retried_then_poisoned", run: codecUndecodablePoisons},
	}
}

// secretMark is in every payload the codec tests write, so the raw store
// can be searched for plaintext.
const secretMark = "s3cr3t"

func codecKey(id string, b byte) payload.Key {
	return payload.Key{ID: id, Secret: bytes.Repeat([]byte{b}, 32)}
}

// wrapped returns the env's store wrapped with gzip and AES-GCM under keys.
func (e *env) wrapped(keys ...payload.Key) duroxide.Provider {
	e.t.Helper()
	aes, err := payload.AESGCM(keys...)
	require.NoError(e.t, err)
	p, err := payload.Wrap(e.p, payload.Gzip(), aes)
	require.NoError(e.t, err)
	return p
}

// codecRegistry: "Everything" writes each kind of payload: an activity's
// input and result, a child's input and result, an event, a queue
// message, a KV value, a custom status, a continue-as-new input, and an
// output; "AwaitGo" waits for an event after an activity.
func codecRegistry(e *env) *durable.Registry {
	r := durable.NewRegistry()
	act(e.t, r, "Echo", func(_ durable.ActivityContext, in string) (string, error) { return "echo " + in, nil })
	orch(e.t, r, "Child", func(_ *durable.OrchestrationContext, in string) (string, error) { return "child " + in, nil })
	orch(e.t, r, "Everything", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if in == "first "+secretMark {
			ctx.SetCustomStatus("status " + secretMark)
			ctx.SetKVValue("k", "kv "+secretMark)
			return "", durable.ContinueAsNew(ctx, "second "+secretMark)
		}
		a, err := durable.CallActivity[string](ctx, "Echo", in).Await()
		if err != nil {
			return "", err
		}
		c, err := durable.CallSubOrchestration[string](ctx, "Child", a).Await()
		if err != nil {
			return "", err
		}
		ev, err := durable.WaitEvent[string](ctx, "go").Await()
		if err != nil {
			return "", err
		}
		q, err := durable.DequeueEvent[string](ctx, "q").Await()
		if err != nil {
			return "", err
		}
		return strings.Join([]string{c, ev, q}, "|"), nil
	})
	orch(e.t, r, "AwaitGo", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		a, err := durable.CallActivity[string](ctx, "Echo", in).Await()
		if err != nil {
			return "", err
		}
		ev, err := durable.WaitEvent[string](ctx, "go").Await()
		return a + "|" + ev, err
	})
	return r
}

// rawPayloads returns the payloads of one execution as the store holds
// them.
func (e *env) rawPayloads(instance string, exec uint64) []string {
	e.t.Helper()
	var out []string
	for _, ev := range e.rawHistory(instance, exec) {
		p, err := storedpayload.Of(ev)
		require.NoError(e.t, err)
		out = append(out, p...)
	}
	return out
}

// rawHistory reads one execution as the store holds it.
func (e *env) rawHistory(instance string, exec uint64) []duroxide.Event {
	e.t.Helper()
	h, err := e.p.ReadWithExecution(e.ctx, instance, exec)
	require.NoError(e.t, err)
	return h
}

func codecStoresEveryPayloadEncoded(e *env) {
	p := e.wrapped(codecKey("k1", 1))
	e.startOn(p, codecRegistry(e), fastOptions(nil))
	c := durable.NewClient(p)
	require.NoError(e.t, c.StartOrchestration(e.ctx, "codec-all", "Everything", "first "+secretMark))
	e.waitSubscription("codec-all", "go") // in the second execution
	require.NoError(e.t, c.RaiseEvent(e.ctx, "codec-all", "go", "event "+secretMark))
	require.NoError(e.t, c.EnqueueEvent(e.ctx, "codec-all", "q", "queued "+secretMark))
	st, err := c.WaitForOrchestration(e.ctx, "codec-all", durable.WaitOptions{Timeout: waitTimeout})
	require.NoError(e.t, err)
	require.Equal(e.t, durable.StateCompleted, st.State, "output %q", st.Output)
	require.Equal(e.t, "child echo second "+secretMark+"|event "+secretMark+"|queued "+secretMark, st.Output)
	require.NotNil(e.t, st.CustomStatus)
	require.Contains(e.t, *st.CustomStatus, "status "+secretMark, "custom status decoded")
	v, found, err := c.KVValue(e.ctx, "codec-all", "k")
	require.NoError(e.t, err)
	require.True(e.t, found)
	require.Contains(e.t, v, "kv "+secretMark, "KV value decoded")

	// In the store: every payload field of both executions and the
	// child's, the KV value, the custom status and the output are
	// encoded, and no plaintext is left.
	ids, err := e.p.Admin().ListInstances(e.ctx)
	require.NoError(e.t, err)
	n := 0
	for _, id := range ids {
		execs, err := e.p.Admin().ListExecutions(e.ctx, id)
		require.NoError(e.t, err)
		for _, x := range execs {
			for _, s := range e.rawPayloads(id, x) {
				n++
				require.True(e.t, s == "" || payload.IsEncoded(s), "%s/%d stores a payload unencoded: %q", id, x, s)
				require.NotContains(e.t, s, secretMark)
			}
		}
	}
	require.GreaterOrEqual(e.t, n, 12, "payload fields seen in the store")
	raw, found, err := e.p.KVValue(e.ctx, "codec-all", "k")
	require.NoError(e.t, err)
	require.True(e.t, found)
	require.True(e.t, payload.IsEncoded(raw), "raw KV value %q", raw)
	cs, err := e.p.CustomStatus(e.ctx, "codec-all", 0)
	require.NoError(e.t, err)
	require.True(e.t, cs != nil && cs.Status != nil && payload.IsEncoded(*cs.Status), "raw custom status %+v", cs)
	info, err := e.p.Admin().InstanceInfo(e.ctx, "codec-all")
	require.NoError(e.t, err)
	require.True(e.t, info.Output != nil && payload.IsEncoded(*info.Output), "raw output %v", info.Output)

	// Without the codec, the CLI's view: history is there, payloads are
	// envelopes, never an error.
	_, err = durable.NewClient(e.p).Status(e.ctx, "codec-all")
	require.NoError(e.t, err)

	// Delete goes through the wrapper too.
	_, err = c.DeleteInstance(e.ctx, "codec-all")
	require.NoError(e.t, err)
	exists, err := e.p.Admin().InstanceInfo(e.ctx, "codec-all")
	require.True(e.t, err != nil || exists == nil, "deleted instance still there")
}

func codecReplaysUnencodedHistory(e *env) {
	// A process without a codec runs the instance to its wait.
	before := e.startOn(e.p, codecRegistry(e), fastOptions(nil))
	plain := durable.NewClient(e.p)
	require.NoError(e.t, plain.StartOrchestration(e.ctx, "codec-old", "AwaitGo", "old"))
	e.waitSubscription("codec-old", "go")
	shutdownRuntime(e, before)

	// The codec is configured; the history written before it replays.
	p := e.wrapped(codecKey("k1", 1))
	e.startOn(p, codecRegistry(e), fastOptions(nil))
	c := durable.NewClient(p)
	require.NoError(e.t, c.RaiseEvent(e.ctx, "codec-old", "go", "new"))
	st, err := c.WaitForOrchestration(e.ctx, "codec-old", durable.WaitOptions{Timeout: waitTimeout})
	require.NoError(e.t, err)
	require.Equal(e.t, durable.StateCompleted, st.State, "output %q", st.Output)
	require.Equal(e.t, "echo old|new", st.Output)

	var plainSeen, encodedSeen int
	for _, s := range e.rawPayloads("codec-old", 1) {
		if payload.IsEncoded(s) {
			encodedSeen++
		} else if s != "" {
			plainSeen++
		}
	}
	require.Positive(e.t, plainSeen, "the old payloads stay as written")
	require.Positive(e.t, encodedSeen, "the new payloads are encoded")
}

// parkAwaitGo starts AwaitGo as id on the store behind keys, waits until
// it waits for "go", and stops the runtime.
func (e *env) parkAwaitGo(id string, keys ...payload.Key) {
	e.t.Helper()
	rt := e.startOn(e.wrapped(keys...), codecRegistry(e), fastOptions(nil))
	require.NoError(e.t, durable.NewClient(e.wrapped(keys...)).StartOrchestration(e.ctx, id, "AwaitGo", "v1"))
	e.waitSubscription(id, "go")
	shutdownRuntime(e, rt)
}

func codecKeyRotation(e *env) {
	k1, k2 := codecKey("k1", 1), codecKey("k2", 2)
	e.parkAwaitGo("codec-rot", k1)

	// Rotated: k2 encrypts, k1 still decrypts.
	rotated := e.wrapped(k2, k1)
	e.startOn(rotated, codecRegistry(e), fastOptions(nil))
	c := durable.NewClient(rotated)
	require.NoError(e.t, c.RaiseEvent(e.ctx, "codec-rot", "go", "v2"))
	st, err := c.WaitForOrchestration(e.ctx, "codec-rot", durable.WaitOptions{Timeout: waitTimeout})
	require.NoError(e.t, err)
	require.Equal(e.t, "echo v1|v2", st.Output)

	// The history holds payloads of both keys: either key alone fails on
	// the other's, with the typed error.
	for _, only := range []payload.Key{k1, k2} {
		_, err := e.wrapped(only).Read(e.ctx, "codec-rot")
		require.True(e.t, errors.Is(err, payload.ErrUnknownKey), "reading with %s only: %v", only.ID, err)
	}
}

func codecUndecodablePoisons(e *env) {
	k1, k2 := codecKey("k1", 1), codecKey("k2", 2)
	e.parkAwaitGo("codec-lost", k1)

	// k1 is lost: the next turn cannot read its history; it is retried,
	// then poisoned, never run on undecoded payloads.
	lost := e.wrapped(k2)
	e.startOn(lost, codecRegistry(e), fastOptions(func(o *durable.Options) { o.MaxAttempts = 2 }))
	require.NoError(e.t, durable.NewClient(lost).RaiseEvent(e.ctx, "codec-lost", "go", "v2"))
	both := durable.NewClient(e.wrapped(k2, k1))
	st, err := both.WaitForOrchestration(e.ctx, "codec-lost", durable.WaitOptions{Timeout: waitTimeout})
	require.NoError(e.t, err)
	d := poisonDetails(e, st)
	require.Equal(e.t, duroxide.PoisonFailedDeserialization, d.MessageType.Kind)
	require.Contains(e.t, d.MessageType.Error, "not configured", "the poison names the missing key: %q", d.MessageType.Error)
}
