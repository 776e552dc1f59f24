package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	require.Contains(t, checkOutcome(outcome{Instance: instanceName(3), Index: 3, State: "Running"}, &r), "stuck")
	require.Contains(t, checkOutcome(outcome{Instance: instanceName(4), Index: 4, State: "NotFound"}, &r), "lost")
	require.Equal(t, Report{Completed: 2, WrongOutput: 2, Stuck: 1, Lost: 1, outcomes: 5}, r)
}

// TestReportFailsOnViolations proves the verdict can be FAILED: each
// violation alone turns OK off and is named.
func TestReportFailsOnViolations(t *testing.T) {
	clean := Report{Expected: 3, Completed: 3, outcomes: 3}
	clean.finish(0)
	require.True(t, clean.OK)
	for name, spoil := range map[string]func(*Report){
		"lost":                              func(r *Report) { r.Completed--; r.Lost++ },
		"stuck":                             func(r *Report) { r.Completed--; r.Stuck++ },
		"missing completions":               func(r *Report) { r.MissingCompletions++ },
		"duplicated deliveries":             func(r *Report) { r.DuplicatedDeliveries++ },
		"lost deliveries":                   func(r *Report) { r.LostDeliveries++ },
		"unintended deliveries":             func(r *Report) { r.UnintendedDeliveries++ },
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
		require.Equal(t, kindOf(i), kind)
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

// decoded returns kinds as history reads return them: values, not
// pointers.
func decoded(kinds []duroxide.EventKind) []duroxide.EventKind {
	out := make([]duroxide.EventKind, len(kinds))
	for k, kind := range kinds {
		out[k] = kindValue(kind)
	}
	return out
}

// TestCheckExecutionFindsDuplicatedCompletionInDecodedHistory: histories
// read back hold event kinds as values; the checks must see them (they
// once matched pointers only, and so never fired on a real history).
func TestCheckExecutionFindsDuplicatedCompletionInDecodedHistory(t *testing.T) {
	kinds := append(append([]duroxide.EventKind{}, goodKinds[:5]...), &duroxide.ActivityCompleted{Result: "1"}, goodKinds[5])
	sources := append(append([]*uint64{}, goodSources[:5]...), u64(2), nil)
	c := checkExecution("i", 1, history([]uint64{1, 2, 3, 4, 5, 6, 7}, decoded(kinds), sources))
	require.Equal(t, 1, c.DuplicatedCompletions, c.Problems)
	require.Equal(t, duroxide.TypeOrchestrationCompleted, c.Terminal)

	clean := checkExecution("i", 1, history([]uint64{1, 2, 3, 4, 5, 6}, decoded(goodKinds), goodSources))
	require.Zero(t, clean.DuplicatedCompletions+clean.MissingCompletions+clean.Gaps, clean.Problems)
}

// TestCheckExecutionFindsMissingCompletion: an execution that ended with
// a scheduled activity never completed lost a completion; one that did
// not end is waiting for it (what a stuck instance waits for); a
// completion of nothing scheduled is missing its schedule.
func TestCheckExecutionFindsMissingCompletion(t *testing.T) {
	// Activity 3's completion (event 5) dropped; the execution completed.
	kinds := decoded([]duroxide.EventKind{goodKinds[0], goodKinds[1], goodKinds[2], goodKinds[3], goodKinds[5]})
	c := checkExecution("i", 1, history([]uint64{1, 2, 3, 4, 5}, kinds, []*uint64{nil, nil, nil, u64(2), nil}))
	require.Equal(t, 1, c.MissingCompletions, c.Problems)
	require.Contains(t, c.Problems[0], "ActivityScheduled 3 has no completion")
	require.Empty(t, c.Unanswered)

	// The same without the terminal event: running, waiting for 3.
	c = checkExecution("i", 1, history([]uint64{1, 2, 3, 4}, kinds[:4], []*uint64{nil, nil, nil, u64(2)}))
	require.Zero(t, c.MissingCompletions)
	require.Equal(t, []uint64{3}, c.Unanswered)
	require.Empty(t, c.Terminal)

	// A completion whose source scheduled nothing.
	kinds = decoded([]duroxide.EventKind{goodKinds[0], goodKinds[1], goodKinds[3], &duroxide.ActivityCompleted{Result: "9"}, goodKinds[5]})
	c = checkExecution("i", 1, history([]uint64{1, 2, 3, 4, 5}, kinds, []*uint64{nil, nil, u64(2), u64(1), nil}))
	require.Equal(t, 1, c.MissingCompletions, c.Problems)
	require.Contains(t, c.Problems[0], "scheduled nothing")
}

func events(kinds ...duroxide.EventKind) []duroxide.Event {
	out := make([]duroxide.Event, len(kinds))
	for k, kind := range kinds {
		out[k] = duroxide.Event{EventID: uint64(k + 1), Kind: kind}
	}
	return out
}

// TestCheckDeliveries: each intended message exactly once; raised events
// count over all executions, queue messages in the last one (messages
// pending at continue-as-new are carried into the next execution's
// history, so earlier executions repeat them).
func TestCheckDeliveries(t *testing.T) {
	intents := []intent{{Name: "go", Data: "ev1"}, {Queue: true, Name: "inbox", Data: "m1"}, {Queue: true, Name: "inbox", Data: "end"}}
	start := duroxide.OrchestrationStarted{Name: orchName}
	exec1 := events(start, duroxide.ExternalEventPersistent{Name: "inbox", Data: "m1"}, duroxide.ExternalEvent{Name: "go", Data: "ev1"},
		duroxide.OrchestrationContinuedAsNew{})
	exec2 := events(start, duroxide.ExternalEventPersistent{Name: "inbox", Data: "m1"}, duroxide.ExternalEventPersistent{Name: "inbox", Data: "end"},
		duroxide.OrchestrationCompleted{})
	c := checkDeliveries("i", intents, [][]duroxide.Event{exec1, exec2})
	require.Equal(t, deliveryCheck{}, c, "m1 carried forward is one delivery")

	// A retried raise and enqueue that both landed.
	exec2dup := append(append([]duroxide.Event{}, exec2[:2]...), events(duroxide.ExternalEventPersistent{Name: "inbox", Data: "m1"},
		duroxide.ExternalEvent{Name: "go", Data: "ev1"})...)
	exec2dup = append(exec2dup, exec2[2:]...)
	c = checkDeliveries("i", intents, [][]duroxide.Event{exec1, exec2dup})
	require.Equal(t, 2, c.Duplicated, c.Problems)
	require.Zero(t, c.Lost+c.Unintended)
	require.Contains(t, c.Problems, `i: event "go" = "ev1" delivered 2 times`)

	// A message never delivered, and one never sent.
	exec := events(start, duroxide.ExternalEvent{Name: "go", Data: "ev1"}, duroxide.ExternalEventPersistent{Name: "inbox", Data: "zz"},
		duroxide.ExternalEventPersistent{Name: "inbox", Data: "end"})
	c = checkDeliveries("i", intents, [][]duroxide.Event{exec})
	require.Equal(t, deliveryCheck{Lost: 1, Unintended: 1, Problems: c.Problems}, c)
	require.Len(t, c.Problems, 2)
}

func TestWorkerSkews(t *testing.T) {
	require.Equal(t, map[string]time.Duration{"w1": -time.Minute, "w2": 0, "w3": time.Minute}, workerSkews(3, time.Minute))
	require.Equal(t, map[string]time.Duration{"w1": time.Minute}, workerSkews(1, time.Minute))
	require.Equal(t, map[string]time.Duration{"w1": 0, "w2": 0}, workerSkews(2, 0))
}

func TestMessagesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for i := range 5 * len(kinds) {
		for _, m := range messagesOf(i) {
			require.False(t, seen[m], m)
			require.NotEqual(t, endMarker, m)
			seen[m] = true
		}
	}
	require.NotEmpty(t, seen)
}

// TestCheckDeliveriesNamesWhereAMessageWasLost: a queue message recorded
// by an execution that continued as new but not carried into the last is
// lost, and the problem says where it was last seen.
func TestCheckDeliveriesNamesWhereAMessageWasLost(t *testing.T) {
	start := duroxide.OrchestrationStarted{Name: orchName}
	exec1 := events(start, duroxide.ExternalEventPersistent{Name: "inbox", Data: "m1"}, duroxide.OrchestrationContinuedAsNew{})
	exec2 := events(start, duroxide.ExternalEventPersistent{Name: "inbox", Data: "end"}, duroxide.OrchestrationCompleted{})
	c := checkDeliveries("i", []intent{{Queue: true, Name: "inbox", Data: "m1"}, {Queue: true, Name: "inbox", Data: "end"}},
		[][]duroxide.Event{exec1, exec2})
	require.Equal(t, 1, c.Lost)
	require.Equal(t, []string{`i: message "m1" on queue "inbox" not in the last execution (2), recorded in executions [1] only`}, c.Problems)
}

// TestCheckExecutionFailedLeavesWorkBehind: a failed execution's
// outstanding schedules are not missing completions (the failure itself
// is reported, as a wrong output).
func TestCheckExecutionFailedLeavesWorkBehind(t *testing.T) {
	kinds := decoded([]duroxide.EventKind{goodKinds[0], goodKinds[1], goodKinds[2], goodKinds[3], &duroxide.OrchestrationFailed{}})
	c := checkExecution("i", 1, history([]uint64{1, 2, 3, 4, 5}, kinds, []*uint64{nil, nil, nil, u64(2), nil}))
	require.Zero(t, c.MissingCompletions, c.Problems)
	require.Empty(t, c.Unanswered)
	require.Equal(t, duroxide.TypeOrchestrationFailed, c.Terminal)
}
