package durable_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/duroxide-go/cdb/durable"
)

// Signal-with-start: the first message for an id starts its instance,
// later ones only queue; the caller need not know which it is.
func ExampleClient_SignalWithStart() {
	reg := durable.NewRegistry()
	must(durable.RegisterOrchestration(reg, "Inbox", func(ctx *durable.OrchestrationContext, owner string) (string, error) {
		var got []string
		for range 2 {
			m, err := durable.DequeueEvent[string](ctx, "mail").Await()
			if err != nil {
				return "", err
			}
			got = append(got, m)
		}
		return fmt.Sprint(owner, " ", got), nil
	}))
	c, stop := startExample(reg)
	defer stop()

	ctx := context.Background()
	for _, m := range []string{"hello", "again"} {
		started, err := c.SignalWithStart(ctx, "inbox-bob", "Inbox", "bob", durable.Signal{Queue: "mail", Data: m})
		must(err)
		fmt.Println("started:", started)
	}
	st, err := c.WaitForOrchestration(ctx, "inbox-bob")
	must(err)
	fmt.Println(st.State, st.Output)
	// Output:
	// started: true
	// started: false
	// Completed bob [hello again]
}

// An update changes a running orchestration's state and answers the
// caller; the validator refuses bad requests before anything runs.
func ExampleSetUpdateHandler() {
	reg := durable.NewRegistry()
	must(durable.RegisterOrchestration(reg, "Counter", func(ctx *durable.OrchestrationContext, _ string) (int, error) {
		total := 0
		durable.SetUpdateHandler(ctx, "add", func(_ *durable.OrchestrationContext, n int) (int, error) {
			total += n
			return total, nil
		}, durable.UpdateHandlerOptions[int]{Validator: func(_ *durable.OrchestrationContext, n int) error {
			if n <= 0 {
				return errors.New("add a positive number")
			}
			return nil
		}})
		_, err := durable.DequeueEvent[string](ctx, "done").Await()
		return total, err
	}))
	c, stop := startExample(reg)
	defer stop()

	ctx := context.Background()
	must(c.StartOrchestration(ctx, "counter-1", "Counter", ""))
	v, err := durable.Update[int](ctx, c, "counter-1", "add", 2)
	must(err)
	fmt.Println(v)
	_, err = durable.Update[int](ctx, c, "counter-1", "add", -1)
	fmt.Println(errors.Is(err, durable.ErrUpdateRejected))
	must(c.EnqueueEvent(ctx, "counter-1", "done", ""))
	st, err := c.WaitForOrchestration(ctx, "counter-1")
	must(err)
	fmt.Println(st.State, st.Output)
	// Output:
	// 2
	// true
	// Completed 2
}

// A retried update with the same id gets the first answer; the handler
// runs once. With Start, the call also starts the instance if needed
// (update-with-start).
func ExampleUpdate() {
	reg := durable.NewRegistry()
	must(durable.RegisterOrchestration(reg, "Tickets", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		issued := 0
		durable.SetUpdateHandler(ctx, "issue", func(_ *durable.OrchestrationContext, who string) (string, error) {
			issued++
			return fmt.Sprintf("ticket %d for %s", issued, who), nil
		})
		_, err := durable.DequeueEvent[string](ctx, "close").Await()
		return fmt.Sprint(issued, " issued"), err
	}))
	c, stop := startExample(reg)
	defer stop()

	ctx := context.Background()
	o := durable.UpdateOptions{ID: "req-7", Start: &durable.UpdateStart{Orchestration: "Tickets"}}
	for range 2 {
		t, err := durable.Update[string](ctx, c, "tickets-1", "issue", "ann", o)
		must(err)
		fmt.Println(t)
	}
	must(c.EnqueueEvent(ctx, "tickets-1", "close", ""))
	st, err := c.WaitForOrchestration(ctx, "tickets-1")
	must(err)
	fmt.Println(st.Output)
	// Output:
	// ticket 1 for ann
	// ticket 1 for ann
	// 1 issued
}

// The updates an instance recorded, with their outcomes, as the
// dashboard shows them.
func ExampleClient_Updates() {
	reg := durable.NewRegistry()
	must(durable.RegisterOrchestration(reg, "Greeter", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		durable.SetUpdateHandler(ctx, "greet", func(_ *durable.OrchestrationContext, who string) (string, error) {
			return "hello " + who, nil
		})
		_, err := durable.DequeueEvent[string](ctx, "done").Await()
		return "", err
	}))
	c, stop := startExample(reg)
	defer stop()

	ctx := context.Background()
	must(c.StartOrchestration(ctx, "greeter-1", "Greeter", ""))
	_, err := durable.Update[string](ctx, c, "greeter-1", "greet", "ann", durable.UpdateOptions{ID: "u1"})
	must(err)
	_, err = durable.Update[string](ctx, c, "greeter-1", "wave", "", durable.UpdateOptions{ID: "u2"})
	fmt.Println(errors.Is(err, durable.ErrUnknownUpdate))
	ups, err := c.Updates(ctx, "greeter-1")
	must(err)
	for _, u := range ups {
		fmt.Println(u.ID, u.Name, u.State+":", u.Result+u.Error)
	}
	// Output:
	// true
	// u1 greet completed: hello ann
	// u2 wave unknown: no handler for update "wave"
}
