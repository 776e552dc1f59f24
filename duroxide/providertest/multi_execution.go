package providertest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// multi_execution.rs: each execution has its own history; the ack's
// execution id decides where events go, and fetches report the
// instance's current execution.
var multiExecutionTests = []Test{
	{Name: "test_execution_isolation", Func: testExecutionIsolation},
	{Name: "test_latest_execution_detection", Func: testLatestExecutionDetection},
	{Name: "test_execution_id_sequencing", Func: testExecutionIDSequencing},
	{Name: "test_continue_as_new_creates_new_execution", Func: testContinueAsNewCreatesNewExecution},
	{Name: "test_execution_history_persistence", Func: testExecutionHistoryPersistence},
}

// runExecution enqueues a start marked with executionID, fetches it and
// acks it as that execution with events.
func runExecution(t *testing.T, p duroxide.Provider, instance string, executionID uint64, events ...duroxide.Event) {
	t.Helper()
	enqueueOrch(t, p, startItemExec(instance, executionID))
	item := mustFetchInstance(t, p, testLock, instance)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  executionID,
		HistoryDelta: events,
		Metadata:     runningMetadata(),
	})
}

// activityNames returns the names of the ActivityScheduled events in h.
func activityNames(h []duroxide.Event) []string {
	var names []string
	for _, e := range h {
		if a, ok := e.Kind.(duroxide.ActivityScheduled); ok {
			names = append(names, a.Name)
		}
	}
	return names
}

func testExecutionIsolation(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "instance-A"
	runExecution(t, p, inst, 1,
		startedEvent(inst, 1),
		activityScheduledEvent(inst, 1, 2, "Act1", "in"),
		activityCompletedEvent(inst, 1, 3, 2, "out"))
	runExecution(t, p, inst, 2,
		startedEvent(inst, 2),
		activityScheduledEvent(inst, 2, 2, "Act2", "in"))

	h1 := mustReadExecution(t, p, inst, 1)
	require.Len(t, h1, 3)
	require.Equal(t, []string{"Act1"}, activityNames(h1))
	h2 := mustReadExecution(t, p, inst, 2)
	require.Len(t, h2, 2)
	require.Equal(t, []string{"Act2"}, activityNames(h2))
	require.Equal(t, h2, mustRead(t, p, inst), "read returns the latest execution")
}

func testLatestExecutionDetection(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "instance-A"
	runExecution(t, p, inst, 1, startedEvent(inst, 1), activityScheduledEvent(inst, 1, 2, "A", "in"))
	runExecution(t, p, inst, 2, startedEvent(inst, 2), activityScheduledEvent(inst, 2, 2, "B", "in"))

	require.Equal(t, []string{"B"}, activityNames(mustRead(t, p, inst)))
	require.Equal(t, []string{"A"}, activityNames(mustReadExecution(t, p, inst, 1)))
}

func testExecutionIDSequencing(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "instance-A"
	runExecution(t, p, inst, 1, startedEvent(inst, 1))

	enqueueOrch(t, p, startItemExec(inst, 2))
	item := mustFetchInstance(t, p, testLock, inst)
	require.Equal(t, uint64(1), item.ExecutionID, "a fetch reports the current execution, not the message's")
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  2,
		HistoryDelta: []duroxide.Event{startedEvent(inst, 2)},
		Metadata:     runningMetadata(),
	})

	poke(t, p, inst)
	item = mustFetchInstance(t, p, testLock, inst)
	require.Equal(t, uint64(2), item.ExecutionID)
	require.Len(t, item.History, 1)
	require.Equal(t, uint64(2), item.History[0].ExecutionID)
}

func testContinueAsNewCreatesNewExecution(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "instance-A"
	createInstance(t, p, inst)

	enqueueOrch(t, p, duroxide.ContinueAsNewItem{
		Instance:      inst,
		Orchestration: testOrchName,
		Input:         "next",
		Version:       ptr(testOrchVersion),
	})
	item := mustFetchInstance(t, p, testLock, inst)
	require.Equal(t, uint64(1), item.ExecutionID)
	require.Len(t, item.Messages, 1)
	require.IsType(t, duroxide.ContinueAsNewItem{}, item.Messages[0])
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  2,
		HistoryDelta: []duroxide.Event{startedEvent(inst, 2)},
		Metadata:     runningMetadata(),
	})

	poke(t, p, inst)
	item = mustFetchInstance(t, p, testLock, inst)
	require.Equal(t, uint64(2), item.ExecutionID)
	require.Len(t, mustReadExecution(t, p, inst, 1), 1, "execution 1 keeps its history")
}

func testExecutionHistoryPersistence(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "instance-A"
	for n := uint64(1); n <= 3; n++ {
		runExecution(t, p, inst, n, startedEvent(inst, n), activityScheduledEvent(inst, n, 2, fmt.Sprintf("Activity-%d", n), "in"))
	}
	for n := uint64(1); n <= 3; n++ {
		h := mustReadExecution(t, p, inst, n)
		require.Len(t, h, 2, "execution %d", n)
		require.Equal(t, []string{fmt.Sprintf("Activity-%d", n)}, activityNames(h))
	}
	require.Equal(t, []string{"Activity-3"}, activityNames(mustRead(t, p, inst)))
}
