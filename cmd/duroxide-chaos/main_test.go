package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/internal/leaktest"
)

// TestMain doubles as the worker: the driver under test re-executes this
// test binary with DUROXIDE_CHAOS_WORKER_ID set.
func TestMain(m *testing.M) {
	if id := os.Getenv(envWorkerID); id != "" {
		os.Exit(workerMain(context.Background(), id))
	}
	leaktest.VerifyTestMain(m)
}

// TestChaosShortRun runs the tool end to end: two worker processes (this
// test binary), twenty instances started over a few seconds, workers killed
// and every kind of fault injected meanwhile; the report must be clean.
func TestChaosShortRun(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short, which asks for quick tests: this one starts worker processes and runs for tens of seconds; `go test ./...` (the README command) and .ci/run run it")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	cfg, err := parseFlags([]string{"-processes", "2", "-orchestrations", "20", "-json",
		"-ramp", "6s", "-duration", "3m", "-timeout", "5m",
		"-kill-interval", "2s", "-fault-interval", "400ms"}, os.Stderr)
	require.NoError(t, err)
	cfg.workerCommand = []string{exe}
	var out, progress bytes.Buffer
	ok, err := run(t.Context(), cfg, &out, &progress)
	t.Log(progress.String())
	require.NoError(t, err)
	var rep Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep), out.String())
	require.True(t, ok, "violations: %v", rep.Violations)
	require.True(t, rep.OK)
	require.Equal(t, 20, rep.Expected)
	require.Equal(t, 20, rep.Completed)
	require.Zero(t, rep.Lost+rep.WrongOutput+rep.DuplicatedCompletions+rep.HistoryGaps+rep.OutboxLeft+rep.LocksLeft)
	// The run ends when all complete, at least the ramp after it began:
	// kills and faults happened while instances ran.
	require.GreaterOrEqual(t, rep.Kills, 1)
	require.GreaterOrEqual(t, len(rep.Faults), 5, "fault kinds injected: %v", rep.Faults)
	// Every activity ran at least once. 20 instances round-robin over the
	// 7 kinds give 3 of each but the session kind (2); per instance:
	// fan-out 4, timer 1, sub's child 1, event 0, continue-as-new 3, KV 1,
	// session 2, so 3*(4+1+1+0+3+1) + 2*2 = 34 executions without any
	// re-execution (the earlier bound of 35 held only when a kill made an
	// activity run twice).
	require.GreaterOrEqual(t, rep.ActivityExecutions, 34)
	require.Greater(t, rep.EventsChecked, 0)
	require.Greater(t, rep.InstancesChecked, 20, "sub-orchestration children are checked too")
}

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{"-processes", "3", "-orchestrations", "100", "-json"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, 3, c.Processes)
	require.Equal(t, 100, c.Orchestrations)
	require.True(t, c.JSON)
	require.Equal(t, 30*time.Second, c.Ramp, "half of the default -duration")
	c, err = parseFlags([]string{"-worker", "-id", "w2"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, "w2", c.WorkerID)
	for _, bad := range [][]string{
		{"-processes", "0"}, {"-orchestrations", "0"}, {"-worker"}, {"-id", "w1"},
		{"-timeout", "0s"}, {"-kill-interval", "-1s"}, {"extra"},
	} {
		_, err := parseFlags(bad, &bytes.Buffer{})
		require.Error(t, err, "%q", bad)
	}
}
