package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/embedded"
)

// clearAccountEnv makes run use the in-process store, in a directory of
// the test's, whatever the environment says.
func clearAccountEnv(t *testing.T) {
	for _, k := range []string{"COSMOS_ENDPOINT", "COSMOS_KEY", "COSMOS_CONNECTION_STRING", "COSMOS_DATABASE", "COSMOS_CONTAINER", "COSMOS_AUDIENCE"} {
		t.Setenv(k, "")
	}
	t.Setenv(embedded.EnvDataDir, t.TempDir())
}

func TestQuickstartOnCosmostest(t *testing.T) {
	clearAccountEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	t.Logf("output:\n%s", out.String())
	for _, want := range []string{
		"in-process cosmostest in " + os.Getenv(embedded.EnvDataDir),
		"container duroxide/duroxide ready",
		`hello      completed: "Hello, world!"`,
		`fan-out    completed: "Hello, Ada! Hello, Grace! Hello, Linus!"`,
		`timer      completed: "woke up after 2s"`,
		`approval   enqueued "alice" on "approvals"`,
		`approval   completed: "deploy v2 approved by alice"`,
		"p.RequestStats()",
		"total",
		"all four orchestrations completed as expected",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// The README's plain "go run ./examples/quickstart" keeps its data, so it
// must work again on what the run before left.
func TestQuickstartRunsTwiceOnOneDataDirectory(t *testing.T) {
	clearAccountEnv(t)
	for i := range 2 {
		var out bytes.Buffer
		if err := run(t.Context(), &out); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, out.String())
		}
		if !strings.Contains(out.String(), "all four orchestrations completed as expected") {
			t.Fatalf("run %d did not complete:\n%s", i, out.String())
		}
	}
}

// Deployed with DUROXIDE_REQUIRE_ACCOUNT=1 and no account variables, the
// example exits 1 at once with the reason, and writes no local store.
func TestQuickstartCommandRefusesToRunWithoutARequiredAccount(t *testing.T) {
	clearAccountEnv(t)
	dir := os.Getenv(embedded.EnvDataDir)
	cmd := exec.CommandContext(t.Context(), os.Args[0])
	cmd.Env = append(os.Environ(), asMainEnv+"=1", embedded.EnvRequireAccount+"=1")
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1\n%s", err, out)
	}
	if !strings.Contains(string(out), "an account is required and none is configured") {
		t.Fatalf("output does not say why:\n%s", out)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("the refused run wrote %d entries in %s", len(entries), dir)
	}
}

func TestQuickstartBadConfigurationFails(t *testing.T) {
	clearAccountEnv(t)
	t.Setenv("COSMOS_CONNECTION_STRING", "AccountEndpoint=https://example.documents.azure.com:443/;")
	var out bytes.Buffer
	err := run(t.Context(), &out)
	if !errors.Is(err, cdb.ErrConfig) || !strings.Contains(err.Error(), "AccountKey") {
		t.Fatalf("run = %v, want a configuration error about the missing AccountKey", err)
	}
}

// With COSMOS_ENDPOINT and COSMOS_KEY the example uses that account (here
// a cosmostest server standing in for one); a second run reuses the
// container with fresh instance ids.
func TestQuickstartOnConfiguredAccount(t *testing.T) {
	clearAccountEnv(t)
	srv := cosmostest.New(t, nil)
	t.Setenv("COSMOS_ENDPOINT", srv.Endpoint())
	t.Setenv("COSMOS_KEY", srv.Key())
	t.Setenv("COSMOS_CONTAINER", "quickstart")
	for i := range 2 {
		var out bytes.Buffer
		if err := run(t.Context(), &out); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, out.String())
		}
		if !strings.Contains(out.String(), srv.Endpoint()+", auth: key") || !strings.Contains(out.String(), "container duroxide/quickstart ready") {
			t.Errorf("run %d does not say where it ran:\n%s", i, out.String())
		}
	}
}
