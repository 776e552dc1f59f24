package cdb_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/durable/replayer"
)

// replayerRegistry has "Order", calling A then B (B then A when swapped)
// and then waiting for the event "go".
func replayerRegistry(t *testing.T, swapped bool) *durable.Registry {
	reg := durable.NewRegistry()
	echo := func(_ durable.ActivityContext, in string) (string, error) { return in, nil }
	require.NoError(t, reg.AddActivity("A", echo))
	require.NoError(t, reg.AddActivity("B", echo))
	first, second := "A", "B"
	if swapped {
		first, second = "B", "A"
	}
	require.NoError(t, reg.AddOrchestration("Order", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if _, err := durable.CallActivity[string](ctx, first, in).Await(); err != nil {
			return "", err
		}
		if _, err := durable.CallActivity[string](ctx, second, in).Await(); err != nil {
			return "", err
		}
		return durable.WaitEvent[string](ctx, "go").Await()
	}))
	return reg
}

// TestReplayerOnCosmos records histories on the Cosmos provider (lagging
// replicas), one instance completed and one waiting, and replays them from
// the provider and from an export: the unchanged code passes, the
// reordered code is reported for both, and nothing is written.
func TestReplayerOnCosmos(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := newHarness(t, cdb.Options{})
	rt, err := durable.Start(ctx, h.p, replayerRegistry(t, false), nil)
	require.NoError(t, err)
	c := durable.NewClient(h.p)
	for _, id := range []string{"done-1", "wait-1"} {
		require.NoError(t, c.StartOrchestration(ctx, id, "Order", id))
	}
	for _, id := range []string{"done-1", "wait-1"} {
		require.Eventually(t, func() bool {
			events, err := h.p.Read(ctx, id)
			return err == nil && len(events) >= 6 // started, A, done, B, done, subscribed
		}, time.Minute, 5*time.Millisecond, id)
	}
	require.NoError(t, c.RaiseEvent(ctx, "done-1", "go", "now"))
	st, err := c.WaitForOrchestration(ctx, "done-1", durable.WaitOptions{Timeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, durable.StateCompleted, st.State)
	require.NoError(t, rt.Shutdown(context.WithoutCancel(ctx)))

	before := h.snapshot()
	path := filepath.Join(t.TempDir(), "histories.json")
	require.NoError(t, replayer.ExportToFile(ctx, path, replayer.FromProvider(h.p, replayer.Filter{})))
	for name, src := range map[string]replayer.Source{
		"provider": replayer.FromProvider(h.p, replayer.Filter{}),
		"export":   replayer.FromExportFile(path),
	} {
		rep, err := replayer.Replay(ctx, replayerRegistry(t, false), src)
		require.NoError(t, err, name)
		require.Len(t, rep.Results, 2, name)
		require.True(t, rep.OK(), "%s: %v", name, rep.Results)

		rep, err = replayer.Replay(ctx, replayerRegistry(t, true), src)
		require.NoError(t, err, name)
		require.Len(t, rep.Failures(), 2, name)
		for _, f := range rep.Failures() {
			require.Equal(t, replayer.StatusNondeterministic, f.Status, "%s: %s", name, f)
			require.Contains(t, f.Message, "schedule mismatch", name)
		}
	}
	h.requireUnchanged(before, "replaying wrote to the store")
}
