// Command quickstart runs Go orchestration code on the durable runtime over
// the Cosmos DB provider, with nothing installed but Go:
//
//	go run ./examples/quickstart
//
// Start with main, then the activity and the four orchestrations it
// registers.
//
// It registers an activity and four orchestrations — a hello world that
// calls the activity, a fan-out/fan-in, a durable timer and a wait for an
// approval on a persistent queue — starts a durable.Runtime, drives each orchestration with
// a durable.Client, and prints every step with the Cosmos DB requests it
// cost (p.RequestStats()). A step's count includes the runtime's polling
// and the client's: WaitForOrchestration reads the status every 5 ms at
// first, backing off to every 100 ms, so a step that waits longer (the
// timer) costs more.
//
// Without COSMOS_ENDPOINT (or COSMOS_CONNECTION_STRING) embedded.Open
// starts localcosmos, the in-process server that speaks the Cosmos DB API,
// keeping its data in .duroxide/quickstart under the working directory
// (DUROXIDE_DATA_DIR moves it); every run uses fresh instance ids, so runs
// follow one another on the same data. To use a real account or the
// emulator, set the variables cdb.ConfigFromEnv reads:
//
//	COSMOS_ENDPOINT=https://myacct.documents.azure.com:443/ COSMOS_KEY=... go run ./examples/quickstart
//	COSMOS_ENDPOINT=https://myacct.documents.azure.com:443/ go run ./examples/quickstart   # DefaultAzureCredential
//	COSMOS_CONNECTION_STRING='AccountEndpoint=...;AccountKey=...;' go run ./examples/quickstart
//
// with COSMOS_DATABASE and COSMOS_CONTAINER (both default "duroxide"). The
// runtime here registers only this example's orchestrations, so use a
// container no other duroxide runtime serves. It exits 0 when every
// orchestration produced the expected output, 1 otherwise.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/embedded"
	"github.com/duroxide-go/cdb/examples/internal/walkthrough"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart failed:", err)
		cancel()
		stop()
		os.Exit(1)
	}
}

// Greet is the activity: ordinary Go code, run by the runtime's workers,
// retried on failure by nobody but the orchestration that calls it.
func Greet(_ durable.ActivityContext, name string) (string, error) {
	return "Hello, " + name + "!", nil
}

// HelloWorld calls Greet and returns its result.
func HelloWorld(ctx *durable.OrchestrationContext, name string) (string, error) {
	return durable.CallActivity[string](ctx, "Greet", name).Await()
}

// FanOut greets every name in parallel and joins the results in order.
func FanOut(ctx *durable.OrchestrationContext, names []string) (string, error) {
	futures := make([]*durable.Future[string], len(names))
	for i, n := range names {
		futures[i] = durable.CallActivity[string](ctx, "Greet", n)
	}
	var out []string
	for _, r := range durable.Join(ctx, futures...) {
		if r.Err != nil {
			return "", r.Err
		}
		out = append(out, r.Value)
	}
	return strings.Join(out, " "), nil
}

// Reminder sleeps on a durable timer: the process may restart meanwhile,
// the timer still fires.
func Reminder(ctx *durable.OrchestrationContext, delay time.Duration) (string, error) {
	if _, err := durable.NewTimer(ctx, delay).Await(); err != nil {
		return "", err
	}
	return fmt.Sprintf("woke up after %s", delay), nil
}

// Approval waits for a message on its "approvals" queue, or gives up after
// a day. It reads a persistent queue (DequeueEvent, fed by the client's
// EnqueueEvent), not an external event (WaitEvent, fed by RaiseEvent):
// a queue keeps a message that arrives before the orchestration waits for
// it, while an external event raised before its WaitEvent is reached
// is dropped — and an approval can easily come that early.
func Approval(ctx *durable.OrchestrationContext, request string) (string, error) {
	ctx.SetCustomStatus("waiting for approval")
	approved := durable.DequeueEvent[string](ctx, approvalsQueue)
	timeout := durable.NewTimer(ctx, 24*time.Hour)
	if ctx.Select(approved, timeout) == 1 {
		return "", errors.New(request + ": nobody approved in time")
	}
	by, err := approved.Await()
	return request + " approved by " + by, err
}

// register adds the example's activity and orchestrations.
func register() (*durable.Registry, error) {
	reg := durable.NewRegistry()
	return reg, errors.Join(
		durable.RegisterActivity(reg, "Greet", Greet),
		durable.RegisterOrchestration(reg, "HelloWorld", HelloWorld),
		durable.RegisterOrchestration(reg, "FanOut", FanOut),
		durable.RegisterOrchestration(reg, "Reminder", Reminder),
		durable.RegisterOrchestration(reg, "Approval", Approval),
	)
}

// run is the whole example; main_test.go runs it too.
func run(ctx context.Context, w io.Writer) error {
	// embedded.Open is the whole setup: the account COSMOS_ENDPOINT names,
	// or an in-process store kept in .duroxide/quickstart, bootstrapped.
	st, err := embedded.Open(ctx, &embedded.Options{Name: "quickstart", Log: w})
	if err != nil {
		return err
	}
	defer st.Close()
	p := st.Provider
	steps := walkthrough.NewCounter(p)
	fmt.Fprintf(w, "provider   %s %s, container %s ready  %s\n", p.Name(), p.Version(), st.ContainerName(), steps.Step())

	reg, err := register()
	if err != nil {
		return err
	}
	rt, err := durable.Start(ctx, p, reg, nil) // nil options: duroxide's defaults
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = rt.Shutdown(sctx)
	}()
	fmt.Fprintf(w, "runtime    started (2 orchestration + 2 activity slots)  %s\n", steps.Step())

	c := durable.NewClient(p)
	prefix := walkthrough.NewInstanceID("quickstart")
	demo := &demo{ctx: ctx, w: w, c: c, steps: steps, prefix: prefix}
	for _, s := range []struct {
		name, orchestration string
		input               any
		want                string
		between             func(instance string) error
	}{
		{"hello", "HelloWorld", "world", "Hello, world!", nil},
		{"fan-out", "FanOut", []string{"Ada", "Grace", "Linus"}, "Hello, Ada! Hello, Grace! Hello, Linus!", nil},
		{"timer", "Reminder", 2 * time.Second, "woke up after 2s", nil},
		{"approval", "Approval", "deploy v2", "deploy v2 approved by alice", demo.approve},
	} {
		if err := demo.step(s.name, s.orchestration, s.input, s.want, s.between); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "requests   sent by this provider in all (p.RequestStats()):")
	walkthrough.PrintStats(w, p.RequestStats())
	fmt.Fprintln(w, "done       all four orchestrations completed as expected")
	return nil
}

type demo struct {
	ctx    context.Context
	w      io.Writer
	c      *durable.Client
	steps  *walkthrough.Counter
	prefix string
}

// step starts one orchestration, optionally acts on it while it runs, and
// waits for its output.
func (d *demo) step(name, orchestration string, input any, want string, between func(string) error) error {
	instance := d.prefix + "-" + name
	if err := d.c.StartOrchestration(d.ctx, instance, orchestration, input); err != nil {
		return fmt.Errorf("%s: start: %w", name, err)
	}
	fmt.Fprintf(d.w, "%-10s started %s(%v) as %s  %s\n", name, orchestration, input, instance, d.steps.Step())
	if between != nil {
		if err := between(instance); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	st, err := d.c.WaitForOrchestration(d.ctx, instance, durable.WaitOptions{Timeout: time.Minute})
	if err != nil {
		return fmt.Errorf("%s: wait: %w", name, err)
	}
	out, err := durable.DecodeOutput[string](st)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	fmt.Fprintf(d.w, "%-10s completed: %q  %s\n", name, out, d.steps.Step())
	if out != want {
		return fmt.Errorf("%s: output %q, want %q", name, out, want)
	}
	return nil
}

// approve sends the approval at once: the queue keeps it until the
// orchestration dequeues it, however early it comes.
func (d *demo) approve(instance string) error {
	if err := sendApproval(d.ctx, d.c, instance, "alice"); err != nil {
		return err
	}
	fmt.Fprintf(d.w, "%-10s enqueued \"alice\" on %q  %s\n", "approval", approvalsQueue, d.steps.Step())
	return nil
}

// approvalsQueue is the persistent queue Approval reads.
const approvalsQueue = "approvals"

// sendApproval approves instance's request on behalf of by.
func sendApproval(ctx context.Context, c *durable.Client, instance, by string) error {
	return c.EnqueueEvent(ctx, instance, approvalsQueue, by)
}
