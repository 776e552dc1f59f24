package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/cmd/duroxide/cli"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/demo"
	"github.com/duroxide-go/cdb/memprovider"
	"github.com/duroxide-go/cdb/schedule"
)

// The schedule commands, through the command line, on memprovider and
// Cosmos DB, with a runtime that runs schedules.
func TestScheduleCommands(t *testing.T) {
	for name, p := range map[string]func(*testing.T) duroxide.Provider{
		"memprovider": func(*testing.T) duroxide.Provider { return memprovider.New() },
		"cosmos":      func(t *testing.T) duroxide.Provider { return demo.CosmosProvider(t) },
	} {
		t.Run(name, func(t *testing.T) { scheduleCommands(t, p(t)) })
	}
}

func scheduleCommands(t *testing.T, p duroxide.Provider) {
	reg := durable.NewRegistry()
	must(t, schedule.Register(reg))
	must(t, reg.AddOrchestration("Tick", func(ctx *durable.OrchestrationContext, in string) (string, error) { return in, nil }))
	demo.StartRuntime(t, p, reg, &durable.Options{MinPollInterval: 10 * time.Millisecond})
	e := &opsEnv{t: t, p: p, c: durable.NewClient(p), switches: new(switches)}
	runs := func(prefix string) []string {
		page, err := e.c.Search(t.Context(), duroxide.InstanceQuery{IDPrefix: prefix})
		must(t, err)
		var ids []string
		for _, in := range page.Instances {
			ids = append(ids, in.InstanceID)
		}
		return ids
	}
	waitRuns := func(prefix string, n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for len(runs(prefix)) < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d runs of %s, want %d", len(runs(prefix)), prefix, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	out, _ := e.want(cli.ExitOK, "schedule", "create", "-every", "1s", "-orchestration", "Tick", "-input", "hi", "-prefix", "tick", "nightly")
	contains(t, out, "created schedule nightly")
	_, errOut := e.want(cli.ExitFailed, "schedule", "create", "-every", "1s", "-orchestration", "Tick", "nightly")
	contains(t, errOut, "schedule exists")
	_, errOut = e.want(cli.ExitUsage, "schedule", "create", "-cron", "61 * * * *", "-orchestration", "Tick", "bad")
	contains(t, errOut, "minute field")
	_, errOut = e.want(cli.ExitUsage, "schedule", "create", "-every", "1s", "bad")
	contains(t, errOut, "Action.Orchestration is empty")
	waitRuns("tick@", 1)

	out, _ = e.want(cli.ExitOK, "schedule", "describe", "nightly")
	contains(t, out, "every 1s")
	contains(t, out, "next ")
	contains(t, out, "started ")

	out, _ = e.want(cli.ExitOK, "schedule", "pause", "-note", "maintenance", "nightly")
	contains(t, out, "paused schedule nightly")
	out, _ = e.want(cli.ExitOK, "schedule", "describe", "nightly")
	contains(t, out, "paused (maintenance)")
	if strings.Contains(out, "next ") {
		t.Fatalf("a paused schedule shows next fire times:\n%s", out)
	}
	paused := len(runs("tick@"))
	e.want(cli.ExitOK, "schedule", "trigger", "nightly")
	waitRuns("tick@", paused+1)
	e.want(cli.ExitOK, "schedule", "backfill", "-from", "2025-01-01T00:00:00Z", "-to", "2025-01-01T00:00:03Z", "-overlap", "allow_all", "nightly")
	waitRuns("tick@2025-01-01T00:00:0", 3) // the starts are sent, not awaited
	time.Sleep(100 * time.Millisecond)
	if got := runs("tick@2025-01-01T00:00:0"); len(got) != 3 {
		t.Fatalf("backfilled runs: %v", got)
	}
	_, errOut = e.want(cli.ExitUsage, "schedule", "backfill", "-from", "yesterday", "-to", "2025-01-01T00:00:03Z", "nightly")
	contains(t, errOut, "-from")
	out, _ = e.want(cli.ExitOK, "schedule", "describe", "-json", "nightly")
	contains(t, out, `"reason": "backfill"`)
	contains(t, out, `"reason": "trigger"`)

	out, _ = e.want(cli.ExitOK, "schedule", "list")
	contains(t, out, "nightly")
	contains(t, out, "paused")
	e.want(cli.ExitOK, "schedule", "unpause", "nightly")
	out, _ = e.want(cli.ExitOK, "schedule", "describe", "nightly")
	contains(t, out, "state     active")

	// A cancelled schedule instance says why it ended.
	must(t, e.c.CancelInstance(t.Context(), schedule.InstancePrefix+"nightly", "retired"))
	demo.Until(t, e.c, schedule.InstancePrefix+"nightly", func(st *durable.OrchestrationStatus) bool { return st.State == durable.StateFailed })
	out, _ = e.want(cli.ExitOK, "schedule", "describe", "nightly")
	contains(t, out, "state     instance Failed")
	contains(t, out, "error     canceled: retired")

	e.want(cli.ExitOK, "schedule", "delete", "nightly")
	e.want(cli.ExitNotFound, "schedule", "describe", "nightly")
	e.want(cli.ExitNotFound, "schedule", "delete", "nightly")
	e.want(cli.ExitNotFound, "schedule", "trigger", "nightly")
	_, errOut = e.want(cli.ExitUsage, "schedule")
	contains(t, errOut, "subcommand")
	e.want(cli.ExitUsage, "schedule", "frobnicate", "x")
	e.want(cli.ExitUsage, "schedule", "pause")
}

// Without a runtime that runs schedules, create says so and fails.
func TestScheduleCreateWithoutARuntime(t *testing.T) {
	p := memprovider.New()
	code, _, errOut := run(t, nil, p, "schedule", "create", "-timeout", "300ms", "-every", "1m", "-orchestration", "Tick", "lonely")
	if code != cli.ExitFailed || !strings.Contains(errOut, "no runtime took the request") {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
}

func contains(t *testing.T, s, want string) {
	t.Helper()
	if !strings.Contains(s, want) {
		t.Fatalf("want %q in:\n%s", want, s)
	}
}
