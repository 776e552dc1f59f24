package durable_test

import (
	"context"
	"fmt"

	"github.com/duroxide-go/cdb/durable"
)

// A parent runs a child orchestration and awaits its result like an
// activity's. InstanceID names the child; without it the child is
// "{parent}::sub::{event_id}".
func ExampleCallSubOrchestration() {
	reg := durable.NewRegistry()
	must(durable.RegisterOrchestration(reg, "Ship", func(_ *durable.OrchestrationContext, order string) (string, error) {
		return order + " shipped", nil
	}))
	must(durable.RegisterOrchestration(reg, "Order", func(ctx *durable.OrchestrationContext, order string) (string, error) {
		opts := durable.SubOrchestrationOptions{InstanceID: ctx.InstanceID() + "-ship"}
		return durable.CallSubOrchestration[string](ctx, "Ship", order, opts).Await()
	}))
	c, stop := startExample(reg)
	defer stop()

	st := runExample(c, "order-7", "Order", "order 7")
	fmt.Println(st.State, st.Output)
	child, err := c.Status(context.Background(), "order-7-ship")
	must(err)
	fmt.Println("child:", child.State, child.Output)
	// Output:
	// Completed order 7 shipped
	// child: Completed order 7 shipped
}

// An eternal orchestration keeps its history short by continuing as new:
// each execution starts from an empty history with the input it is
// given, on the same instance id.
func ExampleContinueAsNew() {
	reg := durable.NewRegistry()
	must(durable.RegisterOrchestration(reg, "Countdown", func(ctx *durable.OrchestrationContext, n int) (string, error) {
		if n > 0 {
			return "", durable.ContinueAsNew(ctx, n-1) // never returns
		}
		return fmt.Sprint("liftoff in execution ", ctx.ExecutionID()), nil
	}))
	c, stop := startExample(reg)
	defer stop()

	st := runExample(c, "countdown-1", "Countdown", 3)
	fmt.Println(st.State, st.Output)
	// Output: Completed liftoff in execution 4
}

// Running instances keep the version they started on, so changed code is
// registered as a new version. New instances start on the latest one; an
// instance moves to it when it continues as new (or with
// ContinueAsNewOptions.Version).
func ExampleRegisterOrchestrationVersion() {
	reg := durable.NewRegistry()
	must(durable.RegisterOrchestrationVersion(reg, "Poll", "1.0.0", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return "", durable.ContinueAsNew(ctx, "from "+ctx.OrchestrationVersion())
	}))
	must(durable.RegisterOrchestrationVersion(reg, "Poll", "2.0.0", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return ctx.OrchestrationVersion() + " " + in, nil
	}))
	c, stop := startExample(reg)
	defer stop()

	ctx := context.Background()
	must(c.StartOrchestration(ctx, "poll-old", "Poll", "", durable.StartOptions{Version: "1.0.0"}))
	st := runExample(c, "poll-new", "Poll", "started")
	fmt.Println(st.Output)
	st, err := c.WaitForOrchestration(ctx, "poll-old")
	must(err)
	fmt.Println(st.Output)
	// Output:
	// 2.0.0 started
	// 2.0.0 from 1.0.0
}
