package durable_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/memprovider"
)

// Welcome is the orchestration under test: it looks a user up and
// greets them with the activities registered under these names.
func Welcome(ctx *durable.OrchestrationContext, userID string) (string, error) {
	name, err := durable.CallActivity[string](ctx, "LookupUser", userID).Await()
	if err != nil {
		return "", err
	}
	return durable.CallActivity[string](ctx, "Greet", name).Await()
}

// A unit test of an orchestration runs the real runtime on the in-memory
// provider, with test doubles registered under the activities' names, and
// checks the status the client sees. In a test function the same lines use
// t.Context() and t.Fatal instead of panic. Package durable/testenv adds a
// virtual clock, for code that waits on long timers.
func Example_unitTest() {
	ctx := context.Background()
	reg := durable.NewRegistry()
	if err := durable.RegisterOrchestration(reg, "Welcome", Welcome); err != nil {
		panic(err)
	}
	var lookedUp atomic.Value // the double records its input
	if err := durable.RegisterActivity(reg, "LookupUser", func(_ durable.ActivityContext, id string) (string, error) {
		lookedUp.Store(id)
		return "Ada", nil
	}); err != nil {
		panic(err)
	}
	if err := durable.RegisterActivity(reg, "Greet", func(_ durable.ActivityContext, name string) (string, error) {
		return strings.ToUpper("welcome, " + name), nil
	}); err != nil {
		panic(err)
	}

	p := memprovider.New()
	rt, err := durable.Start(ctx, p, reg, nil)
	if err != nil {
		panic(err)
	}
	defer rt.Shutdown(ctx)
	c := durable.NewClient(p)
	if err := c.StartOrchestration(ctx, "welcome-1", "Welcome", "u-17"); err != nil {
		panic(err)
	}
	st, err := c.WaitForOrchestration(ctx, "welcome-1", durable.WaitOptions{Timeout: 30 * time.Second})
	if err != nil {
		panic(err)
	}
	fmt.Println(st.State, st.Output, "looked up", lookedUp.Load())
	// Output: Completed WELCOME, ADA looked up u-17
}
