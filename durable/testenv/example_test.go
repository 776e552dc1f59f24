package testenv_test

import (
	"context"
	"fmt"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/durable/testenv"
	"github.com/duroxide-go/cdb/duroxide"
)

// A trial that converts to a paid plan unless cancelled within 14 days,
// tested in virtual time: the 14-day timer fires as soon as the
// orchestration is idle, and the billing activity is a test double. In a
// test, testenv.New(t, reg, nil) replaces Start and Close.
func Example() {
	trial := func(ctx *durable.OrchestrationContext, user string) (string, error) {
		cancelled := durable.WaitEvent[string](ctx, "Cancel")
		if ctx.Select(cancelled, durable.NewTimer(ctx, 14*24*time.Hour)) == 0 {
			return user + " cancelled", nil
		}
		return durable.CallActivity[string](ctx, "ChargeCard", user).Await()
	}
	reg := durable.NewRegistry()
	if err := durable.RegisterOrchestration(reg, "Trial", trial); err != nil {
		panic(err)
	}

	ctx := context.Background()
	env, err := testenv.Start(ctx, reg, nil)
	if err != nil {
		panic(err)
	}
	defer env.Close(ctx)
	env.ReplaceActivity("ChargeCard", func(_ durable.ActivityContext, user string) (string, error) {
		return user + " charged", nil
	})

	start := env.Now()
	if err := env.StartOrchestration("trial-ada", "Trial", "ada"); err != nil {
		panic(err)
	}
	st, err := env.WaitForOrchestration("trial-ada")
	if err != nil {
		panic(err)
	}
	fmt.Println(st.State, st.Output, "after", env.Now().Sub(start))

	h, _ := env.History("trial-ada")
	for _, e := range h {
		if k, ok := e.Kind.(duroxide.TimerFired); ok {
			fmt.Println("timer fired at", time.UnixMilli(int64(k.FireAtMs)).UTC().Format(time.DateOnly))
		}
	}

	if err := env.StartOrchestration("trial-bob", "Trial", "bob"); err != nil {
		panic(err)
	}
	env.RaiseEventAt(3*24*time.Hour, "trial-bob", "Cancel", "")
	st, _ = env.WaitForOrchestration("trial-bob")
	fmt.Println(st.State, st.Output)
	// Output:
	// Completed ada charged after 336h0m0s
	// timer fired at 2025-01-15
	// Completed bob cancelled
}
