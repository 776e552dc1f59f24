package durable_test

import (
	"context"
	"fmt"
	"time"

	"github.com/duroxide-go/cdb/durable"
)

// An external event reaches only a wait that is pending when it arrives,
// so the orchestration says, through its custom status, when it waits,
// and the client raises the event after seeing that.
func ExampleWaitEvent() {
	reg := durable.NewRegistry()
	must(durable.RegisterOrchestration(reg, "Deploy", func(ctx *durable.OrchestrationContext, build string) (string, error) {
		ctx.SetCustomStatus("waiting for Approval")
		approver, err := durable.WaitEvent[string](ctx, "Approval").Await()
		if err != nil {
			return "", err
		}
		return build + " approved by " + approver, nil
	}))
	c, stop := startExample(reg)
	defer stop()

	ctx := context.Background()
	must(c.StartOrchestration(ctx, "deploy-1", "Deploy", "build-42"))
	st, err := c.WaitForStatusChange(ctx, "deploy-1", 0)
	must(err)
	fmt.Println(*st.CustomStatus)
	must(c.RaiseEvent(ctx, "deploy-1", "Approval", "alice"))
	st, err = c.WaitForOrchestration(ctx, "deploy-1")
	must(err)
	fmt.Println(st.State, st.Output)
	// Output:
	// waiting for Approval
	// Completed build-42 approved by alice
}

// A persistent queue keeps messages until the orchestration dequeues
// them, first in, first out, so the client need not know whether the
// orchestration is already waiting (an external event would be dropped).
func ExampleDequeueEvent() {
	type order struct {
		Item string `json:"item"`
		Qty  int    `json:"qty"`
	}
	reg := durable.NewRegistry()
	must(durable.RegisterOrchestration(reg, "Cart", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		var lines []string
		for range 2 {
			o, err := durable.DequeueEvent[order](ctx, "orders").Await()
			if err != nil {
				return "", err
			}
			lines = append(lines, fmt.Sprintf("%d×%s", o.Qty, o.Item))
		}
		return fmt.Sprint(lines), nil
	}))
	c, stop := startExample(reg)
	defer stop()

	ctx := context.Background()
	must(c.StartOrchestration(ctx, "cart-1", "Cart", ""))
	must(c.EnqueueEvent(ctx, "cart-1", "orders", order{Item: "apple", Qty: 3}))
	must(c.EnqueueEvent(ctx, "cart-1", "orders", order{Item: "pear", Qty: 1}))
	st, err := c.WaitForOrchestration(ctx, "cart-1")
	must(err)
	fmt.Println(st.State, st.Output)
	// Output: Completed [3×apple 1×pear]
}

// Cancelling an instance fails it with "canceled: <reason>" at its next
// turn, whatever it is waiting for; its pending timer never fires.
func ExampleClient_CancelInstance() {
	reg := durable.NewRegistry()
	must(durable.RegisterOrchestration(reg, "Reminder", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus("sleeping")
		if _, err := durable.NewTimer(ctx, 24*time.Hour).Await(); err != nil {
			return "", err
		}
		return "reminded", nil
	}))
	c, stop := startExample(reg)
	defer stop()

	ctx := context.Background()
	must(c.StartOrchestration(ctx, "reminder-1", "Reminder", ""))
	_, err := c.WaitForStatusChange(ctx, "reminder-1", 0)
	must(err)
	must(c.CancelInstance(ctx, "reminder-1", "user unsubscribed"))
	st, err := c.WaitForOrchestration(ctx, "reminder-1")
	must(err)
	fmt.Println(st.State, st.FailureMessage())
	// Output: Failed canceled: user unsubscribed
}
