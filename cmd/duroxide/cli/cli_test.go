package cli_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/cmd/duroxide/cli"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/durable/replayer"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

// registry has "Order", calling A then B (B then A when swapped).
func registry(t *testing.T, swapped bool) *durable.Registry {
	t.Helper()
	reg := durable.NewRegistry()
	echo := func(_ durable.ActivityContext, in string) (string, error) { return in, nil }
	must(t, reg.AddActivity("A", echo))
	must(t, reg.AddActivity("B", echo))
	first, second := "A", "B"
	if swapped {
		first, second = "B", "A"
	}
	must(t, reg.AddOrchestration("Order", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		a, err := durable.CallActivity[string](ctx, first, in).Await()
		if err != nil {
			return "", err
		}
		return durable.CallActivity[string](ctx, second, a).Await()
	}))
	return reg
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// record completes "order-1" and "order-2" with the original code.
func record(t *testing.T) *memprovider.Provider {
	t.Helper()
	ctx := t.Context()
	p := memprovider.New()
	rt, err := durable.Start(ctx, p, registry(t, false), nil)
	must(t, err)
	defer func() { must(t, rt.Shutdown(context.WithoutCancel(ctx))) }()
	c := durable.NewClient(p)
	for _, id := range []string{"order-1", "order-2"} {
		must(t, c.StartOrchestration(ctx, id, "Order", id))
		if _, err := c.WaitForOrchestration(ctx, id, durable.WaitOptions{Timeout: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// run runs the command line and returns its exit code and output.
func run(t *testing.T, reg *durable.Registry, p duroxide.Provider, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := cli.Command{Registry: reg, Stdout: &out, Stderr: &errOut,
		Open: func(context.Context) (duroxide.Provider, func() error, error) { return p, nil, nil }}
	code := cmd.Run(t.Context(), args)
	return code, out.String(), errOut.String()
}

func TestExportThenReplay(t *testing.T) {
	p := record(t)
	path := filepath.Join(t.TempDir(), "histories.json")
	if code, _, stderr := run(t, nil, p, "export", "-o", path); code != cli.ExitOK {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	code, stdout, _ := run(t, registry(t, false), nil, "replay", "-export", path)
	if code != cli.ExitOK || !strings.Contains(stdout, "replayed 2 executions: 2 ok, 0 failed") {
		t.Fatalf("unchanged code: exit %d:\n%s", code, stdout)
	}
	code, stdout, _ = run(t, registry(t, true), nil, "replay", "-export", path)
	if code != cli.ExitFailed || strings.Count(stdout, "nondeterministic: schedule mismatch") != 2 ||
		!strings.Contains(stdout, `instance "order-1"`) || !strings.Contains(stdout, "0 ok, 2 failed") {
		t.Fatalf("reordered code: exit %d:\n%s", code, stdout)
	}
}

func TestReplayFromProvider(t *testing.T) {
	p := record(t)
	code, stdout, _ := run(t, registry(t, true), p, "replay", "-prefix", "order-2")
	if code != cli.ExitFailed || !strings.Contains(stdout, `instance "order-2"`) || strings.Contains(stdout, `"order-1"`) {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
	code, stdout, _ = run(t, registry(t, false), p, "replay", "-v", "-status", "Completed")
	if code != cli.ExitOK || strings.Count(stdout, "ok: instance") != 2 {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
}

func TestExportToStdout(t *testing.T) {
	p := record(t)
	code, stdout, _ := run(t, nil, p, "export", "-orchestration", "Order", "-prefix", "order-1")
	if code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	rep, err := replayer.Replay(t.Context(), registry(t, false), replayer.FromExport(strings.NewReader(stdout)))
	must(t, err)
	if len(rep.Results) != 1 || rep.Results[0].Instance != "order-1" || !rep.OK() {
		t.Fatalf("export holds %v", rep.Results)
	}
}

func TestUsageErrors(t *testing.T) {
	p := record(t)
	for name, tc := range map[string]struct {
		reg  *durable.Registry
		args []string
		want string
	}{
		"no command":        {registry(t, false), nil, "usage:"},
		"unknown command":   {registry(t, false), []string{"replya"}, `unknown command "replya"`},
		"unknown flag":      {registry(t, false), []string{"replay", "-nope"}, "flag provided but not defined"},
		"extra arguments":   {registry(t, false), []string{"export", "x"}, "unexpected arguments"},
		"filter and export": {registry(t, false), []string{"replay", "-export", "f.json", "-prefix", "o"}, "pass them to export"},
		"no registry":       {nil, []string{"replay", "-export", "f.json"}, "cli.Main(registry)"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := run(t, tc.reg, p, tc.args...)
			if code != cli.ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
		})
	}
}

func TestUnreadableHistories(t *testing.T) {
	code, _, stderr := run(t, registry(t, false), nil, "replay", "-export", filepath.Join(t.TempDir(), "missing.json"))
	if code != cli.ExitError || !strings.Contains(stderr, "missing.json") {
		t.Fatalf("missing export: exit %d: %s", code, stderr)
	}
	var errOut bytes.Buffer
	cmd := cli.Command{Registry: registry(t, false), Stdout: &bytes.Buffer{}, Stderr: &errOut,
		Open: func(context.Context) (duroxide.Provider, func() error, error) {
			return nil, nil, errors.New("unreachable")
		}}
	if code := cmd.Run(t.Context(), []string{"replay"}); code != cli.ExitError || !strings.Contains(errOut.String(), "unreachable") {
		t.Fatalf("unreachable provider: exit %d: %s", code, errOut.String())
	}
}

// shipRegistry has "Ship" as durable/replayer's patch tests write it:
// it waits for "start", packs, takes the "receipt" patch's branch, sends
// and waits for "go".
func shipRegistry(t *testing.T) *durable.Registry {
	t.Helper()
	reg := durable.NewRegistry()
	echo := func(_ durable.ActivityContext, in string) (string, error) { return in, nil }
	for _, a := range []string{"Pack", "Receipt", "Send"} {
		must(t, reg.AddActivity(a, echo))
	}
	must(t, reg.AddOrchestration("Ship", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if _, err := durable.WaitEvent[string](ctx, "start").Await(); err != nil {
			return "", err
		}
		parcel, err := durable.CallActivity[string](ctx, "Pack", in).Await()
		if err != nil {
			return "", err
		}
		if ctx.Patched("receipt") {
			if parcel, err = durable.CallActivity[string](ctx, "Receipt", parcel).Await(); err != nil {
				return "", err
			}
		}
		if _, err := durable.CallActivity[string](ctx, "Send", parcel).Await(); err != nil {
			return "", err
		}
		return durable.WaitEvent[string](ctx, "go").Await()
	}))
	return reg
}

// The histories recorded before the patch replay; -patch fails while one
// of them still takes the old branch.
func TestReplayPatch(t *testing.T) {
	path := filepath.Join("..", "..", "..", "durable", "replayer", "testdata", "before-receipt-patch.json")
	code, stdout, _ := run(t, shipRegistry(t), nil, "replay", "-export", path)
	if code != cli.ExitOK || !strings.Contains(stdout, `old patch branch: instance "passed-1"`) {
		t.Fatalf("without -patch: exit %d:\n%s", code, stdout)
	}
	code, stdout, _ = run(t, shipRegistry(t), nil, "replay", "-export", path, "-patch", "receipt")
	if code != cli.ExitFailed || !strings.Contains(stdout, `patch "receipt": 1 running executions take its old branch`) {
		t.Fatalf("-patch receipt: exit %d:\n%s", code, stdout)
	}
	code, stdout, _ = run(t, shipRegistry(t), nil, "replay", "-export", path, "-patch", "other")
	if code != cli.ExitOK || !strings.Contains(stdout, `patch "other": no running execution takes its old branch`) {
		t.Fatalf("-patch other: exit %d:\n%s", code, stdout)
	}
}
