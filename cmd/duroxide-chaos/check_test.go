package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

func u64(v uint64) *uint64 { return &v }

// history builds an execution's events with the given ids and kinds.
func history(ids []uint64, kinds []duroxide.EventKind, sources []*uint64) []duroxide.Event {
	out := make([]duroxide.Event, len(ids))
	for k := range ids {
		out[k] = duroxide.Event{EventID: ids[k], InstanceID: "i", ExecutionID: 1, Kind: kinds[k], SourceEventID: sources[k]}
	}
	return out
}

// goodKinds is a fan-out of two activities, completed once each.
var goodKinds = []duroxide.EventKind{
	&duroxide.OrchestrationStarted{Name: orchName},
	&duroxide.ActivityScheduled{Name: actMul},
	&duroxide.ActivityScheduled{Name: actMul},
	&duroxide.ActivityCompleted{Result: "1"},
	&duroxide.ActivityCompleted{Result: "2"},
	&duroxide.OrchestrationCompleted{Output: `"sum=3"`},
}
var goodSources = []*uint64{nil, nil, nil, u64(2), u64(3), nil}

func TestCheckExecutionClean(t *testing.T) {
	c := checkExecution("i", 1, history([]uint64{1, 2, 3, 4, 5, 6}, goodKinds, goodSources))
	require.Zero(t, c.Gaps)
	require.Zero(t, c.DuplicatedCompletions)
	require.Empty(t, c.Problems)
}

func TestCheckExecutionFindsGap(t *testing.T) {
	c := checkExecution("i", 1, history([]uint64{1, 2, 3, 5, 6, 7}, goodKinds, goodSources))
	require.Equal(t, 3, c.Gaps, "every id after the hole is off")
	require.Zero(t, c.DuplicatedCompletions)
	require.Contains(t, c.Problems[0], "has id 5, want 4")

	c = checkExecution("i", 1, history([]uint64{1, 2, 3, 3, 4, 5}, goodKinds, goodSources))
	require.Positive(t, c.Gaps, "a repeated id is not contiguous either")
}

func TestCheckExecutionFindsDuplicatedCompletion(t *testing.T) {
	kinds := append(append([]duroxide.EventKind{}, goodKinds[:5]...), &duroxide.ActivityCompleted{Result: "1"}, goodKinds[5])
	sources := append(append([]*uint64{}, goodSources[:5]...), u64(2), nil)
	c := checkExecution("i", 1, history([]uint64{1, 2, 3, 4, 5, 6, 7}, kinds, sources))
	require.Zero(t, c.Gaps)
	require.Equal(t, 1, c.DuplicatedCompletions)
	require.Contains(t, c.Problems[0], "completes event 2 again")

	// A second terminal event is a duplicated completion too.
	kinds = append(append([]duroxide.EventKind{}, goodKinds...), &duroxide.OrchestrationCompleted{Output: `"sum=3"`})
	sources = append(append([]*uint64{}, goodSources...), nil)
	c = checkExecution("i", 1, history([]uint64{1, 2, 3, 4, 5, 6, 7}, kinds, sources))
	require.Equal(t, 1, c.DuplicatedCompletions)
}

func TestCheckOutcome(t *testing.T) {
	var r Report
	require.Empty(t, checkOutcome(outcome{Instance: instanceName(0), Index: 0, State: "Completed", Output: expectedOutput(0)}, &r))
	require.Contains(t, checkOutcome(outcome{Instance: instanceName(1), Index: 1, State: "Completed", Output: "echo:wrong"}, &r), "want")
	require.Contains(t, checkOutcome(outcome{Instance: instanceName(2), Index: 2, State: "Failed", Output: "boom"}, &r), "failed")
	require.Contains(t, checkOutcome(outcome{Instance: instanceName(3), Index: 3, State: "Running"}, &r), "not completed")
	require.Equal(t, Report{Completed: 2, WrongOutput: 2, Lost: 1, outcomes: 4}, r)
}

// TestReportFailsOnViolations proves the verdict can be FAILED: each
// violation alone turns OK off and is named.
func TestReportFailsOnViolations(t *testing.T) {
	clean := Report{Expected: 3, Completed: 3, outcomes: 3}
	clean.finish(0)
	require.True(t, clean.OK)
	for name, spoil := range map[string]func(*Report){
		"lost":                              func(r *Report) { r.Completed--; r.Lost++ },
		"wrong outputs":                     func(r *Report) { r.WrongOutput++ },
		"duplicated completions":            func(r *Report) { r.DuplicatedCompletions++ },
		"history gaps":                      func(r *Report) { r.HistoryGaps++ },
		"outbox intents left":               func(r *Report) { r.OutboxLeft++ },
		"locks left":                        func(r *Report) { r.LocksLeft++ },
		"checked 2 instances of 3 expected": func(r *Report) { r.Completed--; r.outcomes-- },
	} {
		r := Report{Expected: 3, Completed: 3, outcomes: 3}
		spoil(&r)
		r.finish(0)
		require.False(t, r.OK, name)
		if !strings.HasPrefix(name, "checked") {
			name = "1 " + name
		}
		require.Contains(t, r.Violations, name)
		var table, js bytes.Buffer
		require.NoError(t, r.print(&table, false))
		require.Contains(t, table.String(), "FAILED: "+name)
		require.NoError(t, r.print(&js, true))
		var back map[string]any
		require.NoError(t, json.Unmarshal(js.Bytes(), &back))
		require.Equal(t, false, back["ok"])
	}
}

func TestExpectedOutputsMatchWorkload(t *testing.T) {
	for i := range 2 * len(kinds) {
		kind, idx, ok := parseInstance(instanceName(i))
		require.True(t, ok)
		require.Equal(t, kinds[i%len(kinds)], kind)
		require.Equal(t, i, idx)
		require.NotEqual(t, "?", expectedOutput(i))
	}
	_, _, ok := parseInstance("chaos-timer-0") // index 0 is a fanout
	require.False(t, ok)
}

func TestCountActivityLogs(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "activities-w1.log"), []byte("a 1 2 ChaosMul\na 1 3 ChaosMul\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "activities-w2.log"), []byte("a 1 2 ChaosMul\nb 2 2 ChaosEcho\n"), 0o600))
	n, re, err := countActivityLogs(dir)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	require.Equal(t, 1, re, "a/1/2 ran on both workers")
}
