package durable_test

import (
	"context"
	"fmt"

	"github.com/duroxide-go/cdb/durable"
)

// An orchestration keeps small state in its KV store: it is recorded in
// history (so replay rebuilds it), kept across continue-as-new, and
// readable by clients while the instance runs and after it ends.
func ExampleSetKVValue() {
	type progress struct {
		Done  int `json:"done"`
		Total int `json:"total"`
	}
	reg := durable.NewRegistry()
	must(durable.RegisterOrchestration(reg, "Import", func(ctx *durable.OrchestrationContext, files []string) (string, error) {
		for i := range files {
			durable.SetKVValue(ctx, "progress", progress{Done: i + 1, Total: len(files)})
		}
		durable.SetKVValue(ctx, "last", files[len(files)-1])
		p, _, err := durable.KVValue[progress](ctx, "progress")
		return fmt.Sprintf("%d/%d", p.Done, p.Total), err
	}))
	c, stop := startExample(reg)
	defer stop()

	st := runExample(c, "import-1", "Import", []string{"a.csv", "b.csv"})
	fmt.Println(st.State, st.Output)
	ctx := context.Background()
	p, found, err := durable.ClientKVValue[progress](ctx, c, "import-1", "progress")
	must(err)
	fmt.Println(found, p.Done, p.Total)
	raw, _, err := c.KVValue(ctx, "import-1", "progress")
	must(err)
	fmt.Println(raw)
	last, _, err := c.KVValue(ctx, "import-1", "last")
	must(err)
	fmt.Println(last)
	// Output:
	// Completed 2/2
	// true 2 2
	// {"done":2,"total":2}
	// b.csv
}

// Custom status tells clients where a running instance is. Each change
// bumps its version, so a client can wait for the next one.
func ExampleOrchestrationContext_SetCustomStatus() {
	reg := durable.NewRegistry()
	must(durable.RegisterOrchestration(reg, "Onboard", func(ctx *durable.OrchestrationContext, user string) (string, error) {
		ctx.SetCustomStatus("creating account")
		if _, err := durable.WaitEvent[string](ctx, "Continue").Await(); err != nil {
			return "", err
		}
		ctx.SetCustomStatus("sending welcome mail")
		return "onboarded " + user, nil
	}))
	c, stop := startExample(reg)
	defer stop()

	ctx := context.Background()
	must(c.StartOrchestration(ctx, "onboard-1", "Onboard", "bob"))
	st, err := c.WaitForStatusChange(ctx, "onboard-1", 0)
	must(err)
	fmt.Println(st.CustomStatusVersion, *st.CustomStatus)
	must(c.RaiseEvent(ctx, "onboard-1", "Continue", ""))
	st, err = c.WaitForOrchestration(ctx, "onboard-1")
	must(err)
	fmt.Println(st.CustomStatusVersion, *st.CustomStatus, "/", st.State, st.Output)
	// Output:
	// 1 creating account
	// 2 sending welcome mail / Completed onboarded bob
}
