package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
)

// clearAccountEnv makes run use cosmostest whatever the environment says.
func clearAccountEnv(t *testing.T) {
	for _, k := range []string{"COSMOS_ENDPOINT", "COSMOS_KEY", "COSMOS_CONNECTION_STRING", "COSMOS_DATABASE", "COSMOS_CONTAINER", "COSMOS_AUDIENCE"} {
		t.Setenv(k, "")
	}
}

func runAdmin(t *testing.T, o options) (string, error) {
	t.Helper()
	clearAccountEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, &out, o)
	t.Logf("output:\n%s", out.String())
	return out.String(), err
}

func requireLines(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q", w)
		}
	}
}

func TestAdminOnCosmostest(t *testing.T) {
	out, err := runAdmin(t, options{})
	if err != nil {
		t.Fatal(err)
	}
	requireLines(t, out,
		"seed       made 6 instances",
		"list       6 instances",
		"by status: Running 1, Completed 5, Failed 0",
		"metrics    6 instances (1 running, 5 completed, 0 failed), 8 executions",
		"queues     orchestrator 1, worker 1, timer 0",
		"inspect    ticker: Ticker 1.0.0, Completed, execution 3",
		"executions [1 2 3]",
		"execution 1: ContinuedAsNew, 2 events",
		`#2 OrchestrationCompleted output "3"`,
		"tree       batch: 3 instances [batch batch::sub::2 batch::sub::3]",
		"prune      ticker keep_last=1: deleted 2 executions, 4 events; executions now [3]",
		"batch::sub::2 (a sub-orchestration) refused: delete_instance: cannot delete sub-orchestration",
		"order-running (running, no force) refused:",
		"batch with its children: deleted 3 instances, 3 executions",
		"bulk       completed roots, completed before",
		": deleted 2 instances, 2 executions",
		"order-running (running, force=true): deleted 1 instance, 1 execution, 2 events, 2 queue messages",
		"after      0 instances left, queues: orchestrator 0, worker 0",
		"p.RequestStats()",
	)
	if strings.Contains(out, "NOT refused") {
		t.Error("a deletion that must be refused was not")
	}
}

func TestAdminDryRun(t *testing.T) {
	out, err := runAdmin(t, options{DryRun: true, Instance: "batch::sub::3"})
	if err != nil {
		t.Fatal(err)
	}
	requireLines(t, out,
		"list       6 instances",
		"inspect    batch::sub::3: Shard 1.0.0, Completed, execution 1",
		"parent batch ",
		"dry run    nothing pruned or deleted",
	)
	for _, not := range []string{"prune ", "bulk ", "force "} {
		if strings.Contains(out, "\n"+not) {
			t.Errorf("dry run printed a %q step", not)
		}
	}
}

func TestAdminUnknownInstance(t *testing.T) {
	_, err := runAdmin(t, options{DryRun: true, Instance: "no-such-instance"})
	if err == nil || !strings.Contains(err.Error(), "no-such-instance") {
		t.Fatalf("run = %v, want an error naming the unknown instance", err)
	}
}

// On a configured account the example seeds instances under a unique
// prefix and prunes and deletes only those: someone else's instances in
// the same container survive, even completed ones that bulk deletion
// would otherwise select.
func TestAdminOnConfiguredAccountTouchesOnlyItsOwnInstances(t *testing.T) {
	clearAccountEnv(t)
	srv := cosmostest.New(t, nil)
	ctx := t.Context()

	// Someone else's completed instance, made before the example runs.
	other, err := cdb.New(ctx, cdb.Config{Endpoint: srv.Endpoint(), Key: srv.Key()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := seed(ctx, other, newSeeded("theirs-")); err != nil {
		t.Fatal(err)
	}
	before, err := other.ListInstances(ctx)
	if err != nil || len(before) != 6 {
		t.Fatalf("their instances: %v, %v", before, err)
	}

	t.Setenv("COSMOS_ENDPOINT", srv.Endpoint())
	t.Setenv("COSMOS_KEY", srv.Key())
	var out bytes.Buffer
	if err := run(ctx, &out, options{}); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Logf("output:\n%s", out.String())
	requireLines(t, out.String(),
		"list       12 instances",
		"the demo's completed roots, completed before",
		"after      6 instances left",
	)
	after, err := other.ListInstances(ctx)
	if err != nil || strings.Join(after, ",") != strings.Join(before, ",") {
		t.Fatalf("their instances after the run: %v, %v; want %v", after, err, before)
	}
	execs, err := other.ListExecutions(ctx, "theirs-ticker")
	if err != nil || len(execs) != 3 {
		t.Fatalf("their ticker was pruned: %v, %v", execs, err)
	}

	// -dry-run writes nothing at all.
	other.ResetRequestStats()
	out.Reset()
	if err := run(ctx, &out, options{DryRun: true}); err != nil {
		t.Fatalf("dry run: %v\n%s", err, out.String())
	}
	requireLines(t, out.String(), "list       6 instances", "inspect    theirs-batch:", "dry run    nothing pruned or deleted")
	for _, write := range []string{"batch ", "create ", "patch ", "delete ", "upsert ", "replace "} {
		if strings.Contains(out.String(), "\n  "+write) {
			t.Errorf("the dry run sent %q requests:\n%s", write, out.String())
		}
	}
}
