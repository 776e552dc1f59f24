package cdb_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/durable"
)

// Payload sizes on Cosmos DB (2 MiB per document): an activity result too
// large to store fails that activity at once, with a message naming the
// size and the limit, and the orchestration decides what to do; HTML in a
// payload is stored as written, not escaped to six times its size.

// sizeRuntime starts a runtime on p with "Sized" (returns input n bytes
// of unit, counting runs) and "CallSized" (returns the result's length,
// or the activity's error as its output).
func sizeRuntime(t *testing.T, p *cdb.Provider, runs *atomic.Int32) *durable.Client {
	t.Helper()
	reg := durable.NewRegistry()
	require.NoError(t, reg.AddActivity("Sized", func(_ durable.ActivityContext, in string) (string, error) {
		runs.Add(1)
		unit, count, _ := strings.Cut(in, "*")
		n, err := strconv.Atoi(count)
		if err != nil {
			return "", err
		}
		return strings.Repeat(unit, n/len(unit)), nil
	}))
	require.NoError(t, reg.AddOrchestration("CallSized", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		out, err := durable.CallActivity[string](ctx, "Sized", in).Await()
		if err != nil {
			return "activity failed: " + err.Error(), nil
		}
		return strconv.Itoa(len(out)), nil
	}))
	rt, err := durable.Start(t.Context(), p, reg, &durable.Options{MinPollInterval: 10 * time.Millisecond, MaxIdlePollInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx))
	})
	return durable.NewClient(p)
}

// runSized runs CallSized on input and returns its output.
func runSized(t *testing.T, c *durable.Client, instance, input string) string {
	t.Helper()
	require.NoError(t, c.StartOrchestration(t.Context(), instance, "CallSized", input))
	st, err := c.WaitForOrchestration(t.Context(), instance, durable.WaitOptions{Timeout: 2 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, durable.StateCompleted, st.State, "the orchestration decides; it must not be failed for it: %s", st.FailureMessage())
	return st.Output
}

// TestOversizeActivityResultFailsTheActivity: results of 2.1 MB and 5 MB
// reach the orchestration as an activity failure naming the size and the
// limit, after one run.
func TestOversizeActivityResultFailsTheActivity(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	var runs atomic.Int32
	c := sizeRuntime(t, h.p, &runs)
	for i, size := range []int{2_100_000, 5_000_000} {
		out := runSized(t, c, fmt.Sprintf("oversize-%d", i), fmt.Sprintf("x*%d", size))
		require.Contains(t, out, "activity failed: ")
		require.Contains(t, out, "too large")
		require.Contains(t, out, strconv.Itoa(cdb.MaxDocumentBytes), "the message names the limit")
		require.Regexp(t, `\d{7} bytes`, out, "the message names the size")
		require.Equal(t, int32(i+1), runs.Load(), "the activity runs once: a re-run would produce the same result")
	}
}

// TestHTMLPayloadIsStoredUnescaped: a 1 MB HTML result is stored as about
// 1 MB (in its completion and its history event), not escaped to 3.5 MB.
func TestHTMLPayloadIsStoredUnescaped(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	var runs atomic.Int32
	c := sizeRuntime(t, h.p, &runs)
	const size = 1_000_000
	out := runSized(t, c, "html-1", fmt.Sprintf("<p>a&b</p>*%d", size))
	require.Equal(t, strconv.Itoa(size), out)
	largest := 0
	for _, d := range h.docsWhere("history", "html-1") {
		largest = max(largest, len(fmt.Sprint(d["eventData"])))
	}
	require.Greater(t, largest, size, "the result is in history")
	require.Less(t, largest, size+size/10, "the stored event is about the size of the result")
}
