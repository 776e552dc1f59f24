package main

import (
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/duroxide-go/cdb/internal/storedpayload"
	"github.com/duroxide-go/cdb/payload"
)

// -codec: the soak's store behind payload codecs, and the check that the
// raw store holds every payload encoded.

// runCodecs returns gzip and AES-GCM under a key made for this run, and
// the environment that gives the workers the same codecs
// (payload.CodecsFromEnv).
func runCodecs() ([]payload.Codec, []string, error) {
	secret := make([]byte, 32)
	if _, err := crand.Read(secret); err != nil {
		return nil, nil, err
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
		return nil, nil, err
	}
	return codecs, env, nil
}

// wrapWithCodecs puts the driver's store behind -codec's codecs, then
// -large-payloads' claim-check (the order payload's doc gives:
// compression, encryption, external storage), and returns the
// environment that gives the workers the same chain.
func (d *driver) wrapWithCodecs(ctx context.Context) ([]string, error) {
	var codecs []payload.Codec
	var env []string
	if d.cfg.Codec {
		c, e, err := runCodecs()
		if err != nil {
			return nil, err
		}
		codecs, env = c, e
	}
	if d.cfg.LargePayloads != "" {
		large, e, err := d.setUpLargePayloads(ctx)
		if err != nil {
			return nil, err
		}
		codecs, env = append(codecs, large), append(env, e...)
	}
	if len(codecs) == 0 {
		return nil, nil
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
		payloads, err := storedpayload.Of(ev)
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
