package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/embedded"
	"github.com/duroxide-go/cdb/internal/demo"
	"github.com/duroxide-go/cdb/internal/leaktest"
)

// runMainEnv makes the test binary run main instead of the tests, so the
// process's exit code can be checked.
const runMainEnv = "DUROXIDE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Args = append(os.Args[:1], strings.Fields(os.Getenv(runMainEnv+"_ARGS"))...)
		main()
	}
	leaktest.VerifyTestMain(m)
}

// TestStockCommandExitCodes: the stock command has no registry, so replay
// is a usage error (exit 2) that says how to build one; help exits 0.
func TestStockCommandExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args string
		code int
		want string
	}{
		{"replay -export histories.json", 2, "cli.Main(registry)"},
		{"", 2, "usage:"},
		{"help", 0, "duroxide export"},
		{"show", 2, "run 'duroxide help' (or -h) for usage"},
	} {
		t.Run(tc.args, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), runMainEnv+"=1", runMainEnv+"_ARGS="+tc.args)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(out.String(), tc.want) {
				t.Fatalf("exit %d, output:\n%s", code, out.String())
			}
		})
	}
}

// TestEmbeddedDefaultStore: without an account the command opens the
// in-process store in DUROXIDE_DATA_DIR, as embedded.Open does, and what
// one run writes the next one reads.
func TestEmbeddedDefaultStore(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args string
		code int
		want string
	}{
		{"list", 0, "in-process cosmostest in " + dir},
		{"show nope", 4, `instance "nope" not found`},
		{"start -name Order -input one order-1", 0, "started order-1"},
		{"start -name Order -input two order-1", 1, "already exists"},
		{"rewind order-1", 1, "order-1 has not started yet"}, // no runtime runs it: its start is queued
	} {
		t.Run(tc.args, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), runMainEnv+"=1", runMainEnv+"_ARGS="+tc.args, "DUROXIDE_DATA_DIR="+dir,
				"COSMOS_ENDPOINT=", "COSMOS_CONNECTION_STRING=")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(out.String(), tc.want) {
				t.Fatalf("exit %d, output:\n%s", code, out.String())
			}
		})
	}
}

// runMain runs the command as a process on the in-process store in dir and
// returns its exit code and output.
func runMain(t *testing.T, dir, args string) (int, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), runMainEnv+"=1", runMainEnv+"_ARGS="+args, "DUROXIDE_DATA_DIR="+dir,
		"COSMOS_ENDPOINT=", "COSMOS_CONNECTION_STRING=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

// TestActionsOnTheEmbeddedStore: a service ran an instance that still
// waits and one that completed, then stopped; the command, run on its
// store, refuses to purge the running one without -force (exit 1, the
// documented refusal, naming the flag), dry-runs a purge, refuses to
// cancel the completed one, and names no internal operation.
func TestActionsOnTheEmbeddedStore(t *testing.T) {
	dir := t.TempDir()
	st, err := embedded.Open(t.Context(), &embedded.Options{DataDir: dir, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	reg := durable.NewRegistry()
	if err := durable.RegisterOrchestration(reg, "Wait", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.WaitEvent[string](ctx, "go").Await()
	}); err != nil {
		t.Fatal(err)
	}
	if err := durable.RegisterOrchestration(reg, "Echo", func(_ *durable.OrchestrationContext, in string) (string, error) {
		return in, nil
	}); err != nil {
		t.Fatal(err)
	}
	rt, err := durable.Start(t.Context(), st.Provider, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := durable.NewClient(st.Provider)
	for id, name := range map[string]string{"w-1": "Wait", "ok-1": "Echo"} {
		if err := c.StartOrchestration(t.Context(), id, name, "x"); err != nil {
			t.Fatal(err)
		}
	}
	demo.Until(t, c, "w-1", func(s *durable.OrchestrationStatus) bool { return s.State == durable.StateRunning })
	demo.Until(t, c, "ok-1", (*durable.OrchestrationStatus).IsTerminal)
	if err := rt.Shutdown(context.WithoutCancel(t.Context())); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	opName := regexp.MustCompile(`\b[a-z]+(_[a-z]+)+: `)
	for _, tc := range []struct {
		args string
		code int
		want string
	}{
		{"purge w-1", 1, `duroxide: instance "w-1" is still running: purge -force deletes it anyway`},
		{"purge -dry-run -force w-1", 0, "dry run: purge would delete 1 instance(s)"},
		{"cancel ok-1", 1, "ok-1 already ended (Completed)"},
		{"show nope", 4, `duroxide: instance "nope" not found`},
		{"purge -force w-1", 0, "purged w-1"},
	} {
		t.Run(tc.args, func(t *testing.T) {
			code, out := runMain(t, dir, tc.args)
			if code != tc.code || !strings.Contains(out, tc.want) || opName.MatchString(out) {
				t.Fatalf("exit %d, output:\n%s", code, out)
			}
		})
	}
}
