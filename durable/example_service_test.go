package durable_test

import (
	"context"
	"fmt"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/memprovider"
)

// Greet is an activity: ordinary Go code.
func Greet(_ durable.ActivityContext, name string) (string, error) {
	return "Hello, " + name + "!", nil
}

// Hello is an orchestration: deterministic code that schedules work
// through its context and is replayed from history after a restart.
func Hello(ctx *durable.OrchestrationContext, name string) (string, error) {
	return durable.CallActivity[string](ctx, "Greet", name).Await()
}

// A service registers its orchestrations and activities, starts a runtime
// on a provider (here the in-memory one, as in a unit test) and drives
// instances with a client.
func Example_service() {
	ctx := context.Background()
	p := memprovider.New()

	reg := durable.NewRegistry()
	if err := durable.RegisterActivity(reg, "Greet", Greet); err != nil {
		panic(err)
	}
	if err := durable.RegisterOrchestration(reg, "Hello", Hello); err != nil {
		panic(err)
	}
	rt, err := durable.Start(ctx, p, reg, nil) // nil: duroxide's defaults
	if err != nil {
		panic(err)
	}
	defer rt.Shutdown(ctx)

	c := durable.NewClient(p)
	if err := c.StartOrchestration(ctx, "hello-1", "Hello", "World"); err != nil {
		panic(err)
	}
	st, err := c.WaitForOrchestration(ctx, "hello-1", durable.WaitOptions{Timeout: 30 * time.Second})
	if err != nil {
		panic(err)
	}
	fmt.Println(st.State, st.Output)
	// Output: Completed Hello, World!
}
