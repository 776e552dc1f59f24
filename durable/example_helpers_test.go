package durable_test

import (
	"context"
	"log/slog"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/memprovider"
)

// startExample is the setup of Example (service) in one call: a runtime
// for reg on an in-memory provider, and a client for it. stop shuts the
// runtime down. The runtime's logs are discarded: they go to standard
// error, which the examples' output does not include.
func startExample(reg *durable.Registry) (c *durable.Client, stop func()) {
	p := memprovider.New()
	opts := &durable.Options{Logger: slog.New(slog.DiscardHandler)}
	rt, err := durable.Start(context.Background(), p, reg, opts)
	if err != nil {
		panic(err)
	}
	return durable.NewClient(p), func() { rt.Shutdown(context.Background()) }
}

// runExample starts instance id of orchestration name with input and
// waits for it to finish, as most examples do after registering their
// code.
func runExample(c *durable.Client, id, name string, input any) *durable.OrchestrationStatus {
	ctx := context.Background()
	if err := c.StartOrchestration(ctx, id, name, input); err != nil {
		panic(err)
	}
	st, err := c.WaitForOrchestration(ctx, id, durable.WaitOptions{Timeout: 30 * time.Second})
	if err != nil {
		panic(err)
	}
	return st
}

// must panics on a registration error, so that examples read as the
// happy path.
func must(err error) {
	if err != nil {
		panic(err)
	}
}
