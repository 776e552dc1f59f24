package main

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/payload"
)

// TestChaosBigPayloadRun: the bigpayload kind with a file claim-check
// under kills and faults, with clocks apart: every instance
// completes with its model output, every payload over the threshold is a
// reference in the store, and the deleted half leaves no payload behind
// while the other half's all read back.
func TestChaosBigPayloadRun(t *testing.T) {
	// Two instances, the first with a 2.9 MB payload and a 1.9 MB event;
	// no -codec: under -race, with it, four instances killed every 3 s
	// had not finished in 4 minutes (1 done at 154 s; gzip and AES-GCM
	// of megabytes are slow under the race detector). The soak runs of
	// docs/reliability.md have -codec.
	rep := runChaos(t, "-processes", "2", "-orchestrations", "2", "-json", "-kinds", bigPayloadKind,
		"-large-payloads", "file", "-ramp", "1s", "-duration", "2m", "-timeout", "4m", "-kill-interval", "5s", "-clock-skew", "2s")
	require.Equal(t, 2, rep.Completed)
	require.Equal(t, 2, rep.IntendedDeliveries, "one large event each")
	// Per instance, twelve payloads over 4 KiB: the first execution's activity result and the SHA
	// activity's input, the KV value (in its event and in the KV store),
	// the child's input (scheduled, and the child's start and its
	// activity's input), the event, the continue-as-new input (and the
	// second execution's start), the second activity result and the
	// output.
	require.Equal(t, 2*12, rep.OffloadedPayloads)
	require.Zero(t, rep.InlineLargePayloads)
	require.Equal(t, 1, rep.PayloadDeletes)
	require.Zero(t, rep.LeftoverPayloads)
	require.Zero(t, rep.MissingPayloads)
	require.Positive(t, rep.PayloadFiles, "the kept instances' files")
}

// TestBigData: payloads are deterministic text of their drawn size, and
// the short run's instances have some over Cosmos DB's 2 MB.
func TestBigData(t *testing.T) {
	require.Greater(t, bigSize(0, 0), 2<<20, "TestChaosBigPayloadRun's first instance")
	over := 0
	for i := range 4 {
		for step := range 3 {
			n := bigSize(i, step)
			require.GreaterOrEqual(t, n, bigMinBytes)
			require.LessOrEqual(t, n, bigMaxBytes)
			if n > 2<<20 {
				over++
			}
		}
	}
	require.Positive(t, over)
	a := bigData(1, 0)
	require.Len(t, a, bigSize(1, 0))
	require.Equal(t, a, bigData(1, 0))
	require.NotEqual(t, a[:100], bigData(1, 1)[:100])
	require.NotContains(t, a, `"`)
	require.True(t, strings.HasPrefix(bigExpected(1), "bigpayload:1:"+shaHex(a)+":"))
}

// TestJudgeStored: the check counts references, and reports a payload
// over the threshold kept inline: plain (a worker without the codecs) or
// encoded by a chain without the claim-check (one without
// -large-payloads). Seen failing with judgeStored counting every
// encoded payload as offloaded.
func TestJudgeStored(t *testing.T) {
	ctx := context.Background()
	large, err := newLargeCodec(largeFile, t.TempDir(), 0, nil)
	require.NoError(t, err)
	d := &driver{large: large, refs: map[string]map[string]bool{}}
	big := bigData(0, 0)[:largeThreshold+1]
	ref, err := large.Encode(ctx, payload.Scope{Instance: "i", ExecutionID: 1}, []byte(big))
	require.NoError(t, err)
	small, err := large.Encode(ctx, payload.Scope{Instance: "i", ExecutionID: 1}, []byte("small"))
	require.NoError(t, err)
	env := func(names string, body []byte) string {
		return payload.Prefix + names + ":" + base64.RawURLEncoding.EncodeToString(body)
	}
	var r Report
	problems := d.judgeStored(&r, "i", "here", []string{
		env("gzip,aesgcm,filestore", ref), // offloaded
		env("filestore", small),           // small, inline: fine
		"small plain", "",                 // fine
		big,                             // plain and large
		env("gzip,aesgcm", []byte(big)), // encoded without the claim-check
	})
	require.Equal(t, 1, r.OffloadedPayloads)
	require.Equal(t, 2, r.InlineLargePayloads, "%v", problems)
	require.Len(t, problems, 2)
	require.Equal(t, map[string]bool{string(ref): true}, d.refs["i"])
}

func TestEscapeInstance(t *testing.T) {
	require.Equal(t, "chaos-bigpayload-2%3A%3Asub%3A%3A7", escapeInstance("chaos-bigpayload-2::sub::7"))
	require.Equal(t, "%41b", escapeInstance("Ab"), "upper case escaped, as FoldCase does")
}
