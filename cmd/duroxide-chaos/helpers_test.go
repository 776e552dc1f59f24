package main

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// runChaos runs the tool end to end with args (they must include -json),
// its workers this test binary (TestMain runs workerMain for them), and
// returns the report, failing t unless the run found no violation. It
// skips under -short: a run starts worker processes and lasts tens of
// seconds.
func runChaos(t *testing.T, args ...string) Report {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped with -short, which asks for quick tests: this one starts worker processes and runs for tens of seconds; `go test ./...` (the README command) and .ci/run run it")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	cfg, err := parseFlags(args, os.Stderr)
	require.NoError(t, err)
	cfg.workerCommand = []string{exe}
	var out, progress bytes.Buffer
	ok, err := run(t.Context(), cfg, &out, &progress)
	t.Log(progress.String())
	require.NoError(t, err)
	var rep Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep), out.String())
	require.True(t, ok, "violations: %v", rep.Violations)
	return rep
}
