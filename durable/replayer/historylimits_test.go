package replayer_test

import (
	"context"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/durable/replayer"
	"github.com/duroxide-go/cdb/memprovider"
)

// rollRegistry has "Roll": it runs Step until ctx.ContinueAsNewSuggested,
// then sets its custom status and continues as new once.
func rollRegistry(t *testing.T) *durable.Registry {
	t.Helper()
	reg := durable.NewRegistry()
	must(t, reg.AddActivity("Step", func(_ durable.ActivityContext, in string) (string, error) { return in, nil }))
	must(t, reg.AddOrchestration("Roll", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		for !ctx.ContinueAsNewSuggested() {
			if _, err := durable.CallActivity[string](ctx, "Step", in).Await(); err != nil {
				return "", err
			}
		}
		ctx.SetCustomStatus("rolling over")
		if ctx.ExecutionID() == 1 {
			return "", durable.ContinueAsNew(ctx, in)
		}
		return "done", nil
	}))
	return reg
}

// Code that acts on ContinueAsNewSuggested replays with its runtime's
// HistoryLimits, not with the defaults.
func TestReplayWithTheRuntimesHistoryLimits(t *testing.T) {
	ctx := t.Context()
	limits := durable.HistoryLimits{Events: 10}
	p := memprovider.New()
	rt, err := durable.Start(ctx, p, rollRegistry(t), &durable.Options{HistoryLimits: limits, MinPollInterval: 10 * time.Millisecond})
	must(t, err)
	c := durable.NewClient(p)
	must(t, c.StartOrchestration(ctx, "roll-1", "Roll", "x"))
	st, err := c.WaitForOrchestration(ctx, "roll-1", durable.WaitOptions{Timeout: time.Minute})
	must(t, err)
	must(t, rt.Shutdown(context.WithoutCancel(ctx)))
	if st.State != durable.StateCompleted {
		t.Fatalf("roll-1: %v", st.State)
	}
	src := replayer.FromProvider(p, replayer.Filter{AllExecutions: true})
	replayer.RequireReplays(t, rollRegistry(t), src, replayer.Options{HistoryLimits: limits})
	rep, err := replayer.Replay(ctx, rollRegistry(t), src)
	must(t, err)
	if rep.OK() {
		t.Fatal("with the default limits nothing is suggested at 9 events, so the custom status does not replay")
	}
}
