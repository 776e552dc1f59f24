package replayer_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/durable/replayer"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

// code is one version of the orchestration code under test.
type code struct {
	swapped   bool // "Order" and "Waiter" call B before A
	withOther bool // "Other" is registered
}

var (
	original  = code{withOther: true}
	reordered = code{swapped: true, withOther: true}
)

// registry builds c's registry: "Order" calls A then B and completes;
// "Waiter" calls A then B and waits for the event "go"; "Looper" sets a KV
// value, continues as new, and in its second execution picks its activity
// by that value; "Other" calls A.
func (c code) registry(t *testing.T) *durable.Registry {
	t.Helper()
	reg := durable.NewRegistry()
	echo := func(_ durable.ActivityContext, in string) (string, error) { return in, nil }
	must(t, reg.AddActivity("A", echo))
	must(t, reg.AddActivity("B", echo))
	first, second := "A", "B"
	if c.swapped {
		first, second = "B", "A"
	}
	must(t, reg.AddOrchestration("Order", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		a, err := durable.CallActivity[string](ctx, first, in).Await()
		if err != nil {
			return "", err
		}
		return durable.CallActivity[string](ctx, second, a).Await()
	}))
	must(t, reg.AddOrchestration("Waiter", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if _, err := durable.CallActivity[string](ctx, first, in).Await(); err != nil {
			return "", err
		}
		if _, err := durable.CallActivity[string](ctx, second, in).Await(); err != nil {
			return "", err
		}
		return durable.WaitEvent[string](ctx, "go").Await()
	}))
	must(t, reg.AddOrchestration("Looper", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if ctx.ExecutionID() == 1 {
			ctx.SetKVValue("phase", "two")
			return "", durable.ContinueAsNew(ctx, in)
		}
		activity := "B"
		if v, _ := ctx.KVValue("phase"); v == "two" {
			activity = "A"
		}
		if _, err := durable.CallActivity[string](ctx, activity, in).Await(); err != nil {
			return "", err
		}
		return durable.WaitEvent[string](ctx, "go").Await()
	}))
	if c.withOther {
		must(t, reg.AddOrchestration("Other", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return durable.CallActivity[string](ctx, "A", in).Await()
		}))
	}
	return reg
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// record runs the original code on a fresh memory provider until
// "order-1" and "other-1" completed and "wait-1" and "loop-1" wait for
// their event, and returns the provider with the runtime stopped.
func record(t *testing.T) *memprovider.Provider {
	t.Helper()
	ctx := t.Context()
	p := memprovider.New()
	rt, err := durable.Start(ctx, p, original.registry(t), nil)
	must(t, err)
	defer func() { must(t, rt.Shutdown(context.WithoutCancel(ctx))) }()
	c := durable.NewClient(p)
	for _, s := range []struct{ id, name, input string }{
		{"order-1", "Order", "x"}, {"wait-1", "Waiter", "y"}, {"loop-1", "Looper", "l"}, {"other-1", "Other", "z"},
	} {
		must(t, c.StartOrchestration(ctx, s.id, s.name, s.input))
	}
	for _, id := range []string{"order-1", "other-1"} {
		st, err := c.WaitForOrchestration(ctx, id, durable.WaitOptions{Timeout: time.Minute})
		must(t, err)
		if st.State != durable.StateCompleted {
			t.Fatalf("%s: %v", id, st.State)
		}
	}
	waitForCompletions(t, p, "wait-1", 2)
	waitForCompletions(t, p, "loop-1", 1)
	return p
}

// waitForCompletions polls instance's current history until it holds n
// ActivityCompleted events.
func waitForCompletions(t *testing.T, p duroxide.Provider, instance string, n int) {
	t.Helper()
	for {
		events, err := p.Read(t.Context(), instance)
		must(t, err)
		got := 0
		for _, e := range events {
			if _, ok := e.Kind.(duroxide.ActivityCompleted); ok {
				got++
			}
		}
		if got >= n {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: %d of %d activity completions", instance, got, n)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// exportBytes is src's export document.
func exportBytes(t *testing.T, src replayer.Source) []byte {
	t.Helper()
	var b bytes.Buffer
	must(t, replayer.Export(t.Context(), &b, src))
	return b.Bytes()
}

// byInstance indexes a report's results by instance id.
func byInstance(rep *replayer.Report) map[string]replayer.Result {
	out := map[string]replayer.Result{}
	for _, r := range rep.Results {
		out[r.Instance] = r
	}
	return out
}
