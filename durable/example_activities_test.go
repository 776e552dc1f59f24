package durable_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/duroxide-go/cdb/durable"
)

// A retried activity is still one future: the policy re-runs a failed
// attempt after a durable-timer backoff, and only the last failure (or the
// first success) resolves the future.
func ExampleCallActivity_retry() {
	var attempts atomic.Int32 // activities are ordinary Go code: any state, any goroutine
	reg := durable.NewRegistry()
	must(durable.RegisterActivity(reg, "Charge", func(_ durable.ActivityContext, card string) (string, error) {
		if attempts.Add(1) < 3 {
			return "", errors.New("gateway busy")
		}
		return "charged " + card, nil
	}))
	must(durable.RegisterOrchestration(reg, "Checkout", func(ctx *durable.OrchestrationContext, card string) (string, error) {
		retry := &durable.RetryPolicy{MaxAttempts: 5, Backoff: durable.FixedBackoff(time.Millisecond)}
		return durable.CallActivity[string](ctx, "Charge", card, durable.ActivityOptions{Retry: retry}).Await()
	}))
	c, stop := startExample(reg)
	defer stop()

	st := runExample(c, "checkout-1", "Checkout", "visa-4242")
	fmt.Println(st.State, st.Output, "after", attempts.Load(), "attempts")
	// Output: Completed charged visa-4242 after 3 attempts
}
