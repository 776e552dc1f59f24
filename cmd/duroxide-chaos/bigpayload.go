package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/duroxide-go/cdb/durable"
)

// The bigpayload kind (-kinds bigpayload, with -large-payloads): payloads
// of 8 KiB to 3 MB through every path a payload takes, some above the
// 2 MB a Cosmos DB document holds, which only a claim-check
// (largepayloads.go) can store. Instance i's first execution makes
// payload (i, 0) in an activity, hands it to a second activity that
// returns its SHA-256, to a child that does the same, and its first
// 48 KiB to its KV store (the runtime's limit is 64 KiB); it waits for the event the driver raises, payload (i, 2), and
// continues as new once with payload (i, 0) as its input. The second
// execution checks that input and completes with its sums and payload
// (i, 1), made by an activity: an output of up to 3 MB.
const (
	bigPayloadKind = "bigpayload"
	bigChildName   = "ChaosBigChild"
	actBigMake     = "ChaosBigMake"
	actBigSHA      = "ChaosBigSHA"
	bigKVKey       = "big"
	bigMinBytes    = 8 << 10
	bigMaxBytes    = 3 << 20
	// bigKVBytes bounds the KV value: the runtime refuses values over
	// 64 KiB, whatever the store.
	bigKVBytes = 48 << 10
)

// bigStep names one payload of the kind: instance index and step.
type bigStep struct {
	Index int `json:"index"`
	Step  int `json:"step"`
}

// bigSize is the size of payload (i, step), drawn from [bigMinBytes,
// bigMaxBytes] by a hash of both, so a third of them are above 2 MB.
func bigSize(i, step int) int {
	r := rand.New(rand.NewPCG(uint64(i)+0xb16, uint64(step)+0xda7a))
	return bigMinBytes + r.IntN(bigMaxBytes-bigMinBytes+1)
}

// bigData is payload (i, step): bigSize(i, step) characters of base64
// of a ChaCha8 stream seeded by (i, step). Text, so it travels as a JSON
// string unchanged; random, so compression leaves it above 2 MB.
func bigData(i, step int) string {
	n := bigSize(i, step)
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(i))
	binary.LittleEndian.PutUint64(seed[8:], uint64(step))
	raw := make([]byte, n*3/4+3)
	_, _ = rand.NewChaCha8(seed).Read(raw)
	return base64.StdEncoding.EncodeToString(raw)[:n]
}

// shaHex is the hex SHA-256 of s.
func shaHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// bigSums is what the first execution passes on and the output begins
// with: the index, the sums of payload (i, 0) (by the activity and the
// child) and of the event's payload (i, 2).
func bigSums(i int) string {
	p := shaHex(bigData(i, 0))
	return fmt.Sprintf("%d:%s:%s:%s", i, p, p, shaHex(bigData(i, 2)))
}

// bigExpected is the output instance i completes with.
func bigExpected(i int) string { return "bigpayload:" + bigSums(i) + ":" + bigData(i, 1) }

// bigEventPayload is the event the driver raises for instance i.
func bigEventPayload(i int) string { return bigData(i, 2) }

// bigPayload runs one execution of the kind.
func bigPayload(ctx *durable.OrchestrationContext, in orchInput) (string, error) {
	i := in.Index
	if in.Round == 1 {
		// The continue-as-new input must be what the first execution's
		// activity summed (the payload itself is made only in activities:
		// a seeded generator is still a generator to durablecheck).
		if parts := strings.Split(in.Sums, ":"); len(parts) != 4 || shaHex(in.Blob) != parts[1] {
			return "", fmt.Errorf("continue-as-new input of %d bytes does not match its sums %q", len(in.Blob), in.Sums)
		}
		out, err := durable.CallActivity[string](ctx, actBigMake, bigStep{Index: i, Step: 1}).Await()
		if err != nil {
			return "", err
		}
		return "bigpayload:" + in.Sums + ":" + out, nil
	}
	p, err := durable.CallActivity[string](ctx, actBigMake, bigStep{Index: i, Step: 0}).Await()
	if err != nil {
		return "", err
	}
	sum, err := durable.CallActivity[string](ctx, actBigSHA, p).Await()
	if err != nil {
		return "", err
	}
	kv := p[:min(len(p), bigKVBytes)]
	ctx.SetKVValue(bigKVKey, kv)
	child, err := durable.CallSubOrchestration[string](ctx, bigChildName, p).Await()
	if err != nil {
		return "", err
	}
	ctx.SetCustomStatus(statusWaiting)
	ev, err := durable.WaitEvent[string](ctx, eventName).Await()
	if err != nil {
		return "", err
	}
	if v, ok := ctx.KVValue(bigKVKey); !ok || v != kv {
		return "", fmt.Errorf("KV %s read back %d bytes (found %v), want the %d set", bigKVKey, len(v), ok, len(kv))
	}
	return "", durable.ContinueAsNew(ctx, orchInput{Kind: in.Kind, Index: i, Round: 1, Blob: p,
		Sums: fmt.Sprintf("%d:%s:%s:%s", i, sum, child, shaHex(ev))})
}

// bigChild is the kind's sub-orchestration: its input's SHA-256, by an
// activity.
func bigChild(ctx *durable.OrchestrationContext, p string) (string, error) {
	return durable.CallActivity[string](ctx, actBigSHA, p).Await()
}

// registerBigPayload registers the kind's child and activities.
func registerBigPayload(reg *durable.Registry, log *activityLog) []error {
	return []error{
		durable.RegisterOrchestration(reg, bigChildName, bigChild),
		durable.RegisterActivity(reg, actBigMake, func(ctx durable.ActivityContext, in bigStep) (string, error) {
			return bigData(in.Index, in.Step), log.record(ctx)
		}),
		durable.RegisterActivity(reg, actBigSHA, func(ctx durable.ActivityContext, p string) (string, error) {
			return shaHex(p), log.record(ctx)
		}),
	}
}
