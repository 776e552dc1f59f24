// Command admin shows the management side of the Cosmos DB provider
// (duroxide's ProviderAdmin): listing instances, metrics and queue depths,
// inspecting an instance and its executions, pruning old executions and
// deleting instances, printing what each step did and the Cosmos requests
// it cost.
//
// Start with main, which seeds instances (seed.go) and then takes each
// admin step in turn.
//
//	go run ./examples/admin            # the in-process store, seeded with demo instances
//	go run ./examples/admin -dry-run   # only list and inspect
//
// Without COSMOS_ENDPOINT (or COSMOS_CONNECTION_STRING) embedded.Open
// starts localcosmos in-process, in memory, and the example seeds it with a completed instance, a running
// one, a parent with two sub-orchestrations and one with three executions
// (continue-as-new), made through the provider API as the runtime would.
//
// With COSMOS_ENDPOINT (and COSMOS_KEY, or DefaultAzureCredential; see
// cdb.ConfigFromEnv) it uses that account. Listing, metrics and
// inspection then cover every instance in the container, but the demo
// instances get a unique prefix and every prune and delete is restricted
// to them: the example never deletes anything it did not create. With
// -dry-run nothing is seeded, pruned or deleted; it lists, shows metrics
// and inspects -instance (default: the first instance listed). As with the
// walkthrough, use a container no duroxide runtime is polling: the seeding
// plays the runtime's part, and the running demo instance leaves an
// activity on the worker queue until it is force-deleted.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/embedded"
	"github.com/duroxide-go/cdb/examples/internal/walkthrough"
)

// options are the command-line flags.
type options struct {
	DryRun   bool   // only list and inspect
	Instance string // instance to inspect
}

func main() {
	var o options
	flag.BoolVar(&o.DryRun, "dry-run", false, "only list and inspect: seed (on an account), prune and delete nothing")
	flag.StringVar(&o.Instance, "instance", "", "instance to inspect (default: the seeded ticker, or the first instance listed)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./examples/admin [-dry-run] [-instance ID]\n\n"+
			"Uses cosmostest in-process unless COSMOS_ENDPOINT or COSMOS_CONNECTION_STRING is set.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "admin failed:", err)
		cancel()
		stop()
		os.Exit(1)
	}
}

// run is the whole example; main_test.go runs it too.
func run(ctx context.Context, w io.Writer, o options) error {
	// Seeding plays the runtime's part with fixed ids, so the in-process
	// store is a fresh one in memory, not kept between runs.
	st, err := embedded.Open(ctx, &embedded.Options{InMemory: true, Log: w})
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer st.Close()
	p := st.Provider
	a := p.Admin() // the provider is its own ProviderAdmin
	fmt.Fprintf(w, "provider   %s %s, container %s ready  [%s]\n", p.Name(), p.Version(), st.ContainerName(), walkthrough.Delta(nil, p.RequestStats()))
	c := walkthrough.NewCounter(p)
	line := func(step, format string, args ...any) {
		fmt.Fprintf(w, "%-10s %s\n", step, fmt.Sprintf(format, args...))
	}

	// Seed demo instances: always on the in-process store (it starts empty), and on
	// an account unless -dry-run, with a prefix no one else uses.
	var demo *seeded
	cleanedUp := false
	if st.InProcess || !o.DryRun {
		prefix := ""
		if !st.InProcess {
			prefix = walkthrough.NewInstanceID("admin-demo") + "-"
		}
		s := newSeeded(prefix)
		demo = &s
		if !st.InProcess {
			// If a step fails, do not leave the demo instances behind.
			defer func() {
				if !cleanedUp {
					for _, id := range s.roots() {
						_, _ = a.DeleteInstance(context.WithoutCancel(ctx), id, true)
					}
				}
			}()
		}
		lines, err := seed(ctx, p, s)
		if err != nil {
			return err
		}
		line("seed", "made %d instances through the provider API  %s", len(s.roots())+len(s.Children), c.Step())
		for _, l := range lines {
			line("", "  %s", l)
		}
	}

	// ---- discovery and metrics (read-only) ----

	ids, err := a.ListInstances(ctx)
	if err != nil {
		return fmt.Errorf("list instances: %w", err)
	}
	line("list", "%s  %s", plural(len(ids), "instance"), c.Step())
	for _, id := range firstN(ids, 12) {
		line("", "  %s", id)
	}
	if len(ids) > 12 {
		line("", "  ... and %d more", len(ids)-12)
	}
	var counts []string
	for _, status := range []string{duroxide.StatusRunning, duroxide.StatusCompleted, duroxide.StatusFailed} {
		byStatus, err := a.ListInstancesByStatus(ctx, status)
		if err != nil {
			return fmt.Errorf("list instances by status: %w", err)
		}
		counts = append(counts, fmt.Sprintf("%s %d", status, len(byStatus)))
	}
	line("", "by status: %s  %s", strings.Join(counts, ", "), c.Step())

	m, err := a.SystemMetrics(ctx)
	if err != nil {
		return fmt.Errorf("system metrics: %w", err)
	}
	line("metrics", "%d instances (%d running, %d completed, %d failed), %d executions, %d events  %s",
		m.TotalInstances, m.RunningInstances, m.CompletedInstances, m.FailedInstances, m.TotalExecutions, m.TotalEvents, c.Step())

	q, err := a.QueueDepths(ctx)
	if err != nil {
		return fmt.Errorf("queue depths: %w", err)
	}
	line("queues", "orchestrator %d, worker %d, timer %d (unlocked messages)  %s", q.OrchestratorQueue, q.WorkerQueue, q.TimerQueue, c.Step())

	// ---- inspect one instance ----

	target := o.Instance
	switch {
	case target != "":
	case demo != nil:
		target = demo.Chain
	case len(ids) > 0:
		target = ids[0]
	}
	if target == "" {
		line("inspect", "no instances to inspect")
	} else if err := inspect(ctx, a, c, line, target); err != nil {
		return err
	}
	if demo != nil {
		tree, err := a.InstanceTree(ctx, demo.Parent)
		if err != nil {
			return fmt.Errorf("instance tree: %w", err)
		}
		line("tree", "%s: %d instances %v  %s", demo.Parent, tree.Size(), tree.AllIDs, c.Step())
	}

	if o.DryRun || demo == nil {
		line("dry run", "nothing pruned or deleted")
		return summary(w, p)
	}

	// ---- prune and delete (only the demo instances) ----

	res, err := a.PruneExecutions(ctx, demo.Chain, duroxide.PruneOptions{KeepLast: ptr(uint32(1))})
	if err != nil {
		return fmt.Errorf("prune executions: %w", err)
	}
	execs, err := a.ListExecutions(ctx, demo.Chain)
	if err != nil {
		return fmt.Errorf("list executions: %w", err)
	}
	line("prune", "%s keep_last=1: deleted %s, %s; executions now %v  %s",
		demo.Chain, plural(int(res.ExecutionsDeleted), "execution"), plural(int(res.EventsDeleted), "event"), execs, c.Step())

	// Deleting is by root: a sub-orchestration goes with its root, and a
	// running instance needs force.
	_, err = a.DeleteInstance(ctx, demo.Children[0], false)
	line("delete", "%s (a sub-orchestration) refused: %v  %s", demo.Children[0], errText(err), c.Step())
	_, err = a.DeleteInstance(ctx, demo.Running, false)
	line("", "%s (running, no force) refused: %v  %s", demo.Running, errText(err), c.Step())

	del, err := a.DeleteInstance(ctx, demo.Parent, false)
	if err != nil {
		return fmt.Errorf("delete %s: %w", demo.Parent, err)
	}
	line("", "%s with its children: %s  %s", demo.Parent, deleted(del), c.Step())

	// Bulk deletion selects terminal roots; completed_before is in ms
	// since the epoch. On an account it is also restricted to our ids.
	time.Sleep(5 * time.Millisecond) // everything seeded completed strictly before the cutoff
	cutoff := uint64(time.Now().UnixMilli())
	filter := duroxide.InstanceFilter{CompletedBefore: &cutoff}
	scope := "completed roots"
	if !st.InProcess {
		filter.InstanceIDs = demo.roots()
		scope = "the demo's completed roots"
	}
	del, err = a.DeleteInstanceBulk(ctx, filter)
	if err != nil {
		return fmt.Errorf("bulk delete: %w", err)
	}
	line("bulk", "%s, completed before %s: %s  %s", scope, time.UnixMilli(int64(cutoff)).UTC().Format("15:04:05.000"), deleted(del), c.Step())

	del, err = a.DeleteInstance(ctx, demo.Running, true)
	if err != nil {
		return fmt.Errorf("force delete %s: %w", demo.Running, err)
	}
	line("force", "%s (running, force=true): %s  %s", demo.Running, deleted(del), c.Step())

	left, err := a.ListInstances(ctx)
	if err != nil {
		return fmt.Errorf("list instances: %w", err)
	}
	q, err = a.QueueDepths(ctx)
	if err != nil {
		return fmt.Errorf("queue depths: %w", err)
	}
	cleanedUp = true
	line("after", "%s left, queues: orchestrator %d, worker %d  %s", plural(len(left), "instance"), q.OrchestratorQueue, q.WorkerQueue, c.Step())
	return summary(w, p)
}

// inspect prints an instance, its executions and its latest history.
func inspect(ctx context.Context, a duroxide.ProviderAdmin, c *walkthrough.Counter, line func(string, string, ...any), id string) error {
	info, err := a.InstanceInfo(ctx, id)
	if err != nil {
		return fmt.Errorf("instance info of %s: %w", id, err)
	}
	parent := "none (a root)"
	if info.ParentInstanceID != nil {
		parent = *info.ParentInstanceID
	}
	line("inspect", "%s: %s %s, %s, execution %d, created %s, parent %s  %s",
		id, info.OrchestrationName, info.OrchestrationVersion, info.Status, info.CurrentExecutionID, clock(info.CreatedAt), parent, c.Step())

	execs, err := a.ListExecutions(ctx, id)
	if err != nil {
		return fmt.Errorf("executions of %s: %w", id, err)
	}
	line("", "executions %v  %s", execs, c.Step())
	for _, e := range execs {
		x, err := a.ExecutionInfo(ctx, id, e)
		if err != nil {
			return fmt.Errorf("execution %d of %s: %w", e, id, err)
		}
		out := ""
		if x.Output != nil {
			out = fmt.Sprintf(", output %q", *x.Output)
		}
		line("", "  execution %d: %s, %d events, started %s%s  %s", e, x.Status, x.EventCount, clock(x.StartedAt), out, c.Step())
	}

	history, err := a.ReadHistory(ctx, id)
	if err != nil {
		return fmt.Errorf("history of %s: %w", id, err)
	}
	line("", "history of the latest execution: %d events  %s", len(history), c.Step())
	for _, e := range firstN(history, 10) {
		line("", "  %s", walkthrough.Describe(e))
	}
	return nil
}

func summary(w io.Writer, p *cdb.Provider) error {
	fmt.Fprintln(w, "requests   sent by this provider, in total (p.RequestStats()):")
	walkthrough.PrintStats(w, p.RequestStats())
	return nil
}

func deleted(r *duroxide.DeleteInstanceResult) string {
	return fmt.Sprintf("deleted %s, %s, %s, %s", plural(int(r.InstancesDeleted), "instance"), plural(int(r.ExecutionsDeleted), "execution"),
		plural(int(r.EventsDeleted), "event"), plural(int(r.QueueMessagesDeleted), "queue message"))
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// errText shows an expected refusal; nil would mean it was not refused.
func errText(err error) string {
	if err == nil {
		return "NOT refused"
	}
	return strings.TrimSpace(err.Error())
}

func clock(ms uint64) string { return time.UnixMilli(int64(ms)).UTC().Format("15:04:05.000") }

func firstN[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}
