// Command resume shows the durability promise of the embedded default in
// three commands: run it, kill it midway, run it again — every instance
// completes, exactly once.
//
//	go run ./examples/resume            # starts 20 orders, prints each as it completes
//	kill -9 <its pid>                   # (or Ctrl-\) midway
//	go run ./examples/resume            # carries on where the first run stopped
//
// Start with main.
//
// It keeps its store in .duroxide/resume under the working directory
// (DUROXIDE_DATA_DIR moves it; delete the directory to start over), or uses
// the account COSMOS_ENDPOINT names (see embedded.Open). Every run starts
// the same instance ids, order-01 to order-20: repeating an identical start
// is a no-op, so the second run starts nothing new and its runtime picks up
// the instances the first left half done. Each order runs a durable timer
// (later orders wait longer, so a kill finds some done and some not) and
// three activities. At the end the example reads every instance's history
// and prints how many completed exactly once: one OrchestrationCompleted
// event and one result per scheduled activity. It exits 0 when all did.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/embedded"
)

// options are the command-line flags.
type options struct {
	Orders  int           // how many instances
	Stagger time.Duration // order k waits k*Stagger before its first step
}

func main() {
	var o options
	flag.IntVar(&o.Orders, "n", 20, "number of orders (instances)")
	flag.DurationVar(&o.Stagger, "stagger", 250*time.Millisecond, "order k sleeps k times this on a durable timer first")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "resume failed:", err)
		stop()
		os.Exit(1)
	}
}

// order is an instance's input.
type order struct {
	ID    string        `json:"id"`
	Delay time.Duration `json:"delay"`
}

// steps are the activities every order runs, in order.
var steps = []string{"reserve", "charge", "ship"}

// Step is the activity: it stands for work with an effect elsewhere. Like
// every activity it runs at least once: a kill while it runs makes the
// runtime run it again, so real ones are idempotent.
func Step(_ durable.ActivityContext, what string) (string, error) {
	return what + " done", nil
}

// Order sleeps on a durable timer, then runs the steps one after another.
func Order(ctx *durable.OrchestrationContext, o order) (string, error) {
	if _, err := durable.NewTimer(ctx, o.Delay).Await(); err != nil {
		return "", err
	}
	for _, s := range steps {
		if _, err := durable.CallActivity[string](ctx, "Step", o.ID+" "+s).Await(); err != nil {
			return "", err
		}
	}
	return o.ID + " shipped", nil
}

// run is the whole example; main_test.go runs it too.
func run(ctx context.Context, w io.Writer, o options) error {
	st, err := embedded.Open(ctx, &embedded.Options{Name: "resume", Log: w})
	if err != nil {
		return err
	}
	defer st.Close()

	reg := durable.NewRegistry()
	if err := errors.Join(
		durable.RegisterActivity(reg, "Step", Step),
		durable.RegisterOrchestration(reg, "Order", Order),
	); err != nil {
		return err
	}
	rt, err := durable.Start(ctx, st.Provider, reg, nil)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = rt.Shutdown(sctx)
	}()

	c := durable.NewClient(st.Provider)
	ids := make([]string, o.Orders)
	done := 0
	for k := range ids {
		ids[k] = fmt.Sprintf("order-%02d", k+1)
		if status, err := c.Status(ctx, ids[k]); err != nil {
			return fmt.Errorf("status %s: %w", ids[k], err)
		} else if status.State == durable.StateCompleted {
			done++
		}
		// The same start as every run's: the first creates the instance,
		// the others are no-ops (the identical-start rule).
		in := order{ID: ids[k], Delay: time.Duration(k) * o.Stagger}
		if err := c.StartOrchestration(ctx, ids[k], "Order", in); err != nil {
			return fmt.Errorf("start %s: %w", ids[k], err)
		}
	}
	fmt.Fprintf(w, "started    %d orders (order-01 .. %s): %d already completed, %d to go\n", len(ids), ids[len(ids)-1], done, len(ids)-done)

	for _, id := range ids {
		status, err := c.WaitForOrchestration(ctx, id, durable.WaitOptions{Timeout: 5 * time.Minute})
		if err != nil {
			return fmt.Errorf("wait %s: %w", id, err)
		}
		out, err := durable.DecodeOutput[string](status)
		if err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		fmt.Fprintf(w, "completed  %s: %q\n", id, out)
	}

	once, err := completedOnce(ctx, c, ids)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "summary    %d of %d orders completed exactly once\n", once, len(ids))
	if once != len(ids) {
		return fmt.Errorf("%d of %d orders did not complete exactly once", len(ids)-once, len(ids))
	}
	return nil
}

// completedOnce counts the instances whose history shows one completion
// with the expected output and one result for each scheduled activity.
func completedOnce(ctx context.Context, c *durable.Client, ids []string) (int, error) {
	n := 0
	for _, id := range ids {
		execs, err := c.ListExecutions(ctx, id)
		if err != nil {
			return 0, fmt.Errorf("%s: executions: %w", id, err)
		}
		if len(execs) != 1 {
			continue
		}
		history, err := c.ExecutionHistory(ctx, id, execs[0])
		if err != nil {
			return 0, fmt.Errorf("%s: history: %w", id, err)
		}
		if historyCompletedOnce(history, id) {
			n++
		}
	}
	return n, nil
}

// historyCompletedOnce reports whether history ends an order exactly once:
// one OrchestrationCompleted with its output, every step scheduled once
// and completed once.
func historyCompletedOnce(history []duroxide.Event, id string) bool {
	completions, scheduled := 0, 0
	results := map[uint64]int{}
	for _, e := range history {
		switch k := e.Kind.(type) {
		case duroxide.OrchestrationCompleted:
			completions++
			if k.Output != id+" shipped" {
				return false
			}
		case duroxide.ActivityScheduled:
			scheduled++
		case duroxide.ActivityCompleted:
			if e.SourceEventID == nil {
				return false
			}
			results[*e.SourceEventID]++
		}
	}
	if completions != 1 || scheduled != len(steps) || len(results) != len(steps) {
		return false
	}
	for _, n := range results {
		if n != 1 {
			return false
		}
	}
	return true
}
