// Package demo is the test fixture that the command line's tests
// (cmd/duroxide/cli) and the web dashboard's tests (dashboard) share: a
// runtime over a provider, the in-memory Cosmos DB provider they both run
// on, a wait on an instance's status, and the failing orchestration both
// registries hold. Each package keeps the rest of its registry, whose
// orchestrations its own assertions are written against.
//
// Start with [CosmosProvider] and [StartRuntime].
package demo

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/embedded"
)

// StartRuntime starts a runtime over p with reg and o, shut down when t
// ends.
func StartRuntime(t testing.TB, p duroxide.Provider, reg *durable.Registry, o *durable.Options) *durable.Runtime {
	t.Helper()
	rt, err := durable.Start(t.Context(), p, reg, o)
	must(t, err)
	t.Cleanup(func() { must(t, rt.Shutdown(context.Background())) })
	return rt
}

// CosmosProvider is the Cosmos DB provider over an in-memory in-process
// localcosmos server (embedded.Open with InMemory), closed when t ends: the tests
// run the tools on it as well as on a memprovider, since the tools read
// through the provider's admin and search calls.
func CosmosProvider(t testing.TB) duroxide.Provider {
	t.Helper()
	st, err := embedded.Open(t.Context(), &embedded.Options{InMemory: true, Log: io.Discard})
	must(t, err)
	t.Cleanup(func() { must(t, st.Close()) })
	return st.Provider
}

// Until polls instance's status through c until ok holds and returns
// that status; it fails t, naming the last state seen, if t's context
// ends first.
func Until(t testing.TB, c *durable.Client, instance string, ok func(*durable.OrchestrationStatus) bool) *durable.OrchestrationStatus {
	t.Helper()
	for {
		st, err := c.Status(t.Context(), instance)
		must(t, err)
		if ok(st) {
			return st
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: condition never held; last state %v", instance, st.State)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// AddFail registers the activity Boom, which fails with its input as the
// message after 2 ms (so that its duration shows), and the orchestration
// Fail, which runs it: an instance that fails with a message the test
// chose.
func AddFail(t testing.TB, reg *durable.Registry) {
	t.Helper()
	must(t, reg.AddActivity("Boom", func(_ durable.ActivityContext, in string) (string, error) {
		time.Sleep(2 * time.Millisecond)
		return "", errors.New(in)
	}))
	must(t, reg.AddOrchestration("Fail", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallActivity[string](ctx, "Boom", in).Await()
	}))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
