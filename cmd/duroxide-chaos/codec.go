package main

import (
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/payload"
)

// -codec: the soak's store behind payload codecs, and the check that the
// raw store holds every payload encoded.

// wrapWithCodec puts the driver's store behind gzip and AES-GCM under a
// key made for this run, and returns the environment that gives the
// workers the same codecs (payload.CodecsFromEnv).
func (d *driver) wrapWithCodec() ([]string, error) {
	secret := make([]byte, 32)
	if _, err := crand.Read(secret); err != nil {
		return nil, err
	}
	env := []string{payload.EnvCodec + "=gzip,aesgcm", payload.EnvCodecKeys + "=soak=" + base64.StdEncoding.EncodeToString(secret)}
	codecs, err := payload.CodecsFromEnv(func(k string) string {
		for _, kv := range env {
			if name, v, _ := strings.Cut(kv, "="); name == k {
				return v
			}
		}
		return ""
	})
	if err != nil {
		return nil, err
	}
	w, err := payload.Wrap(d.p, codecs...)
	if err != nil {
		return nil, err
	}
	d.store, d.admin = w, w.Admin()
	return env, nil
}

// checkEncoded counts how execution e of id stores its payloads, read
// from the store itself: with -codec every non-empty one must be encoded.
func (d *driver) checkEncoded(ctx context.Context, r *Report, id string, e uint64) []string {
	raw, err := d.p.ReadHistoryWithExecutionID(ctx, id, e)
	if err != nil {
		return []string{fmt.Sprintf("%s#%d: raw history: %v", id, e, err)}
	}
	var problems []string
	for _, ev := range raw {
		payloads, err := storedPayloads(ev)
		if err != nil {
			return append(problems, fmt.Sprintf("%s#%d: event %d: %v", id, e, ev.EventID, err))
		}
		plain := 0
		for _, s := range payloads {
			switch {
			case s == "":
			case payload.IsEncoded(s):
				r.EncodedPayloads++
			default:
				r.PlainPayloads++
				plain++
			}
		}
		if plain > 0 {
			problems = append(problems, fmt.Sprintf("%s#%d: event %d stores %d payloads unencoded", id, e, ev.EventID, plain))
		}
	}
	return problems
}

// payloadFields are the JSON fields of a stored history event that hold a
// payload (duroxide's names; error details and cancel reasons are not
// payloads). The checker reads the event's serialized form rather than
// the codec's own list, so a kind the codec forgets is caught.
var payloadFields = map[string]bool{
	"input": true, "output": true, "result": true, "data": true,
	"value": true, "status": true, "initial_custom_status": true,
}

// storedPayloads returns the payloads of ev, carried-forward events'
// included.
func storedPayloads(ev duroxide.Event) ([]string, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	var out []string
	collectPayloads(v, &out)
	return out, nil
}

func collectPayloads(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, f := range x {
			if s, ok := f.(string); ok && payloadFields[k] {
				*out = append(*out, s)
			} else if k == "carry_forward_events" {
				collectCarried(f, out)
			} else {
				collectPayloads(f, out)
			}
		}
	case []any:
		for _, f := range x {
			collectPayloads(f, out)
		}
	}
}

// collectCarried adds the data of carried-forward events, which duroxide
// stores as [name, data] pairs.
func collectCarried(v any, out *[]string) {
	pairs, _ := v.([]any)
	for _, p := range pairs {
		if pair, ok := p.([]any); ok && len(pair) == 2 {
			if s, ok := pair[1].(string); ok {
				*out = append(*out, s)
			}
		}
	}
}
