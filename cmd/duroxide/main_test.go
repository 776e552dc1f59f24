package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

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
