package durable_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

// An operator finds the failed instances of one orchestration, page by
// page, then purges them: first as a dry run, reporting progress.
func ExampleClient_Search() {
	ctx := context.Background()
	p := memprovider.New()
	reg := durable.NewRegistry()
	if err := durable.RegisterOrchestration(reg, "Charge", func(_ *durable.OrchestrationContext, card string) (string, error) {
		if card == "expired" {
			return "", errors.New("card expired")
		}
		return "charged", nil
	}); err != nil {
		panic(err)
	}
	rt, err := durable.Start(ctx, p, reg, nil)
	if err != nil {
		panic(err)
	}
	defer rt.Shutdown(ctx)
	c := durable.NewClient(p)
	for i, card := range []string{"ok", "expired", "ok", "expired", "expired"} {
		id := fmt.Sprintf("charge-%d", i)
		if err := c.StartOrchestration(ctx, id, "Charge", card); err != nil {
			panic(err)
		}
		if _, err := c.WaitForOrchestration(ctx, id, durable.WaitOptions{Timeout: 30 * time.Second}); err != nil {
			panic(err)
		}
	}

	q := duroxide.InstanceQuery{Name: "Charge", States: []duroxide.InstanceState{duroxide.InstanceFailed}, OrderBy: duroxide.OrderCreatedAsc, PageSize: 2}
	for {
		page, err := c.Search(ctx, q)
		if err != nil {
			panic(err)
		}
		for _, s := range page.Instances {
			fmt.Println(s.InstanceID, s.State, s.Output)
		}
		if page.ContinuationToken == "" {
			break
		}
		q.ContinuationToken = page.ContinuationToken
	}

	q.ContinuationToken = ""
	dry, err := c.PurgeMany(ctx, q, durable.BulkOptions{DryRun: true})
	if err != nil {
		panic(err)
	}
	fmt.Println("would purge", dry.Done)
	res, err := c.PurgeMany(ctx, q, durable.BulkOptions{Progress: func(p durable.BulkProgress) {
		fmt.Printf("progress %d/%d\n", p.Examined, p.Total)
	}})
	if err != nil {
		panic(err)
	}
	fmt.Println("purged", res.Done, "instances")
	// Output:
	// charge-1 failed card expired
	// charge-3 failed card expired
	// charge-4 failed card expired
	// would purge 3
	// progress 2/3
	// progress 3/3
	// purged 3 instances
}
