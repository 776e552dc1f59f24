package durable_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/duroxide-go/cdb/durable"
)

// Fan out to activities, fan in with Join, and race an activity against a
// durable timer with Select (the loser is cancelled).
func Example_fanOutAndTimeout() {
	orchestration := func(ctx *durable.OrchestrationContext, items []string) (string, error) {
		futs := make([]*durable.Future[int], len(items))
		for i, item := range items {
			futs[i] = durable.CallActivity[int](ctx, "Measure", item)
		}
		total := 0
		for _, r := range durable.Join(ctx, futs...) {
			if r.Err != nil {
				return "", r.Err
			}
			total += r.Value
		}

		report := durable.CallActivity[string](ctx, "Report", fmt.Sprint(total))
		if ctx.Select(report, durable.NewTimer(ctx, 30*time.Second)) == 1 {
			return "", errors.New("report timed out")
		}
		return report.Await()
	}
	_ = orchestration // register it with durable.RegisterOrchestration
}

// Concurrent multi-step work goes in durable.Go blocks, never in go
// statements: blocks run one at a time, in a deterministic order.
func Example_goBlocks() {
	orchestration := func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		billing := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
			id, err := durable.CallActivity[string](ctx, "CreateInvoice", "").Await()
			if err != nil {
				return "", err
			}
			return durable.CallActivity[string](ctx, "SendInvoice", id).Await()
		})
		shipping := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
			return durable.CallActivity[string](ctx, "Ship", "").Await()
		})
		ctx.WaitAll(billing, shipping)
		b, err := billing.Await()
		if err != nil {
			return "", err
		}
		s, err := shipping.Await()
		return b + "/" + s, err
	}
	_ = orchestration
}
