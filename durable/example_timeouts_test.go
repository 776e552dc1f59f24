package durable_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/duroxide-go/cdb/durable"
)

// An instance that waits for an approval which never comes is ended by
// its execution timeout; the failure matches ErrTimedOut.
func ExampleStartOptions_timeout() {
	reg := durable.NewRegistry()
	must(durable.RegisterOrchestration(reg, "Approval", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.WaitEvent[string](ctx, "approved").Await()
	}))
	c, stop := startExample(reg)
	defer stop()
	ctx := context.Background()
	must(c.StartOrchestration(ctx, "approval-1", "Approval", "", durable.StartOptions{ExecutionTimeout: 100 * time.Millisecond}))
	st, err := c.WaitForOrchestration(ctx, "approval-1", durable.WaitOptions{Timeout: 30 * time.Second})
	must(err)
	_, err = durable.DecodeOutput[string](st)
	fmt.Println(st.State, errors.Is(err, durable.ErrTimedOut))
	fmt.Println(st.FailureMessage())
	// Output:
	// Failed true
	// canceled: timeout: execution timeout of 100ms exceeded
}

// A start stored now runs later: until then the instance exists (a second,
// different start is refused) and its status says when it starts.
func ExampleStartOptions_startAt() {
	reg := durable.NewRegistry()
	must(durable.RegisterOrchestration(reg, "Report", func(_ *durable.OrchestrationContext, month string) (string, error) {
		return "report for " + month, nil
	}))
	c, stop := startExample(reg)
	defer stop()
	ctx := context.Background()
	at := time.Now().Add(200 * time.Millisecond)
	must(c.StartOrchestration(ctx, "report-1", "Report", "2027-01", durable.StartOptions{StartAt: at}))
	st, err := c.Status(ctx, "report-1")
	must(err)
	fmt.Println(st.State, st.Waiting == "scheduled to start at "+at.UTC().Format(time.RFC3339Nano))
	fmt.Println(errors.Is(c.StartOrchestration(ctx, "report-1", "Report", "2027-02"), durable.ErrInstanceExists))
	st, err = c.WaitForOrchestration(ctx, "report-1", durable.WaitOptions{Timeout: 30 * time.Second})
	must(err)
	fmt.Println(st.State, st.Output)
	// Output:
	// NotFound true
	// true
	// Completed report for 2027-01
}
