package embedded

import (
	"bytes"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable"
)

// A rewind after the store was closed and opened again replays the failed
// execution's KV read against the KV it started with: the baseline the
// Failed ack kept is in the data directory (kv_undo documents), not in
// the process.
func TestRewindAfterReopenReplaysKVReads(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	var fixed atomic.Bool
	reg := durable.NewRegistry()
	must(t, durable.RegisterActivity(reg, "Flaky", func(_ durable.ActivityContext, in string) (string, error) {
		if !fixed.Load() {
			return "", errors.New("not yet")
		}
		return in, nil
	}))
	must(t, durable.RegisterOrchestration(reg, "SetOnce", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if _, seen, err := durable.KVValue[string](ctx, "once"); err != nil {
			return "", err
		} else if !seen {
			durable.SetKVValue(ctx, "once", "v")
		}
		return durable.CallActivity[string](ctx, "Flaky", in).Await()
	}))
	wait := durable.WaitOptions{Timeout: time.Minute}

	st := open(t, &Options{DataDir: dir, Log: &bytes.Buffer{}})
	rt, err := durable.Start(t.Context(), st.Provider, reg, nil)
	must(t, err)
	c := durable.NewClient(st.Provider)
	must(t, c.StartOrchestration(t.Context(), "kv-rewind", "SetOnce", "x"))
	status, err := c.WaitForOrchestration(t.Context(), "kv-rewind", wait)
	must(t, err)
	if status.State != durable.StateFailed {
		t.Fatalf("first execution: %s, want failed", status.State)
	}
	must(t, rt.Shutdown(t.Context()))
	must(t, st.Close())

	fixed.Store(true)
	st = open(t, &Options{DataDir: dir, Log: &bytes.Buffer{}})
	defer st.Close()
	rt, err = durable.Start(t.Context(), st.Provider, reg, nil)
	must(t, err)
	defer func() { must(t, rt.Shutdown(t.Context())) }()
	c = durable.NewClient(st.Provider)
	must(t, c.Rewind(t.Context(), "kv-rewind", durable.RewindOptions{Reason: "fixed"}))
	deadline := time.Now().Add(time.Minute)
	for {
		x, err := c.ListExecutions(t.Context(), "kv-rewind")
		must(t, err)
		if len(x) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no rewound execution: executions %v", x)
		}
		time.Sleep(20 * time.Millisecond)
	}
	status, err = c.WaitForOrchestration(t.Context(), "kv-rewind", wait)
	must(t, err)
	if status.State != durable.StateCompleted {
		t.Fatalf("rewound execution: %s (%s), want completed", status.State, status.FailureMessage())
	}
}
