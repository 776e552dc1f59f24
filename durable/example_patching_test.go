package durable_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

// shipCode registers "Ship": it packs, then waits for "go". With the
// patch, new instances (and ones that had not packed yet) also send a
// receipt; one that packed under the old code keeps the old branch.
func shipCode(patched bool) *durable.Registry {
	reg := durable.NewRegistry()
	must(durable.RegisterActivity(reg, "Pack", func(_ durable.ActivityContext, order string) (string, error) {
		return order + " packed", nil
	}))
	must(durable.RegisterActivity(reg, "SendReceipt", func(_ durable.ActivityContext, order string) (string, error) {
		return order + " receipted", nil
	}))
	must(durable.RegisterOrchestration(reg, "Ship", func(ctx *durable.OrchestrationContext, order string) (string, error) {
		out, err := durable.CallActivity[string](ctx, "Pack", order).Await()
		if err != nil {
			return "", err
		}
		if patched && ctx.Patched("send-receipt") {
			if out, err = durable.CallActivity[string](ctx, "SendReceipt", out).Await(); err != nil {
				return "", err
			}
		}
		_, err = durable.WaitEvent[string](ctx, "go").Await()
		return out, err
	}))
	return reg
}

// An instance started by the old code replays the old branch after the
// patched code is deployed; a new instance takes the new one.
func ExampleOrchestrationContext_Patched() {
	ctx := context.Background()
	p := memprovider.New()
	c := durable.NewClient(p)
	run := func(reg *durable.Registry) (stop func()) {
		rt, err := durable.Start(ctx, p, reg, &durable.Options{Logger: slog.New(slog.DiscardHandler)})
		must(err)
		return func() { rt.Shutdown(ctx) }
	}
	waiting := func(id string) { // until it packed and waits for "go"
		for {
			if h, err := p.Read(ctx, id); err == nil && len(h) > 0 {
				if _, ok := h[len(h)-1].Kind.(duroxide.ExternalSubscribed); ok {
					return
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	stop := run(shipCode(false)) // the code before the change
	must(c.StartOrchestration(ctx, "order-1", "Ship", "order 1"))
	waiting("order-1")
	stop()

	defer run(shipCode(true))() // the patched code
	must(c.StartOrchestration(ctx, "order-2", "Ship", "order 2"))
	waiting("order-2")
	for _, id := range []string{"order-1", "order-2"} {
		must(c.RaiseEvent(ctx, id, "go", ""))
		st, err := c.WaitForOrchestration(ctx, id, durable.WaitOptions{Timeout: 30 * time.Second})
		must(err)
		fmt.Println(id+":", st.Output)
	}
	// Output:
	// order-1: order 1 packed
	// order-2: order 2 packed receipted
}

// Once no running instance takes the old branch (the replayer's
// Report.OldPatchBranches is empty), the branch goes and DeprecatePatch
// stays in its place, so histories with the marker still replay.
func ExampleOrchestrationContext_DeprecatePatch() {
	reg := durable.NewRegistry()
	must(durable.RegisterActivity(reg, "SendReceipt", func(_ durable.ActivityContext, order string) (string, error) {
		return order + " receipted", nil
	}))
	must(durable.RegisterOrchestration(reg, "Ship", func(ctx *durable.OrchestrationContext, order string) (string, error) {
		ctx.DeprecatePatch("send-receipt")
		return durable.CallActivity[string](ctx, "SendReceipt", order).Await()
	}))
	c, stop := startExample(reg)
	defer stop()

	st := runExample(c, "order-3", "Ship", "order 3")
	fmt.Println(st.Output)
	// Output: order 3 receipted
}

// A loop that would grow its history for ever continues as new when the
// runtime suggests it, against Options.HistoryLimits (here 20 events;
// by default the Cosmos DB store's limits).
func ExampleOrchestrationContext_ContinueAsNewSuggested() {
	reg := durable.NewRegistry()
	must(durable.RegisterActivity(reg, "Poll", func(_ durable.ActivityContext, n int) (int, error) { return n + 1, nil }))
	must(durable.RegisterOrchestration(reg, "Monitor", func(ctx *durable.OrchestrationContext, n int) (string, error) {
		for n < 25 {
			if ctx.ContinueAsNewSuggested() {
				return "", durable.ContinueAsNew(ctx, n)
			}
			var err error
			if n, err = durable.CallActivity[int](ctx, "Poll", n).Await(); err != nil {
				return "", err
			}
		}
		size := ctx.HistorySize()
		return fmt.Sprintf("polled %d times; execution %d holds %d events", n, ctx.ExecutionID(), size.Events), nil
	}))
	p := memprovider.New()
	opts := &durable.Options{Logger: slog.New(slog.DiscardHandler), HistoryLimits: durable.HistoryLimits{Events: 20}}
	rt, err := durable.Start(context.Background(), p, reg, opts)
	must(err)
	defer rt.Shutdown(context.Background())

	st := runExample(durable.NewClient(p), "monitor-1", "Monitor", 0)
	fmt.Println(st.Output)
	// Output: polled 25 times; execution 4 holds 9 events
}
