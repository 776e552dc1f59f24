package providertest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// instance_creation.rs: instances are created by acks from the metadata
// the runtime passes, never by enqueues.
var instanceCreationTests = []Test{
	{Name: "test_instance_creation_via_metadata", Func: testInstanceCreationViaMetadata},
	{Name: "test_no_instance_creation_on_enqueue", Func: testNoInstanceCreationOnEnqueue},
	{Name: "test_null_version_handling", Func: testNullVersionHandling},
	{Name: "test_sub_orchestration_instance_creation", Func: testSubOrchestrationInstanceCreation},
}

func testInstanceCreationViaMetadata(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "test-instance"
	enqueueOrch(t, p, startItem(inst))
	item := mustFetchInstance(t, p, testLock, inst)
	require.Equal(t, testOrchName, item.OrchestrationName)
	require.Equal(t, uint64(1), item.ExecutionID)
	require.Empty(t, item.History)

	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{startedEvent(inst, 1)},
		Metadata: duroxide.ExecutionMetadata{
			OrchestrationName:    ptr(testOrchName),
			OrchestrationVersion: ptr("2.0.0"),
		},
	})

	enqueueOrch(t, p, startItem(inst))
	item = mustFetchInstance(t, p, testLock, inst)
	require.Equal(t, testOrchName, item.OrchestrationName)
	require.Equal(t, "2.0.0", item.Version, "the version comes from the stored metadata, not the work item")
	require.Len(t, item.History, 1)
}

func testNoInstanceCreationOnEnqueue(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "test-instance"
	enqueueOrch(t, p, startItem(inst))

	stats, err := p.InstanceStats(t.Context(), inst)
	require.NoError(t, err)
	require.Nil(t, stats, "an enqueue must not create the instance")
	require.Empty(t, mustRead(t, p, inst))

	item := mustFetchInstance(t, p, testLock, inst)
	require.Equal(t, testOrchName, item.OrchestrationName)
	require.Len(t, item.Messages, 1)
	require.IsType(t, duroxide.StartOrchestrationItem{}, item.Messages[0])
}

func testNullVersionHandling(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "test-instance"
	start := startItem(inst)
	start.Version = nil
	enqueueOrch(t, p, start)
	item := mustFetchInstance(t, p, testLock, inst)
	require.Equal(t, testOrchName, item.OrchestrationName)

	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{startedEvent(inst, 1)},
		Metadata: duroxide.ExecutionMetadata{
			OrchestrationName:    ptr(testOrchName),
			OrchestrationVersion: ptr("3.0.0"),
		},
	})
	poke(t, p, inst)
	item = mustFetchInstance(t, p, testLock, inst)
	require.Equal(t, "3.0.0", item.Version)
}

func testSubOrchestrationInstanceCreation(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const parent, child = "parent-instance", "parent-instance::child-instance"
	enqueueOrch(t, p, startItem(parent))
	item := mustFetchInstance(t, p, testLock, parent)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1,
		HistoryDelta: []duroxide.Event{
			startedEvent(parent, 1),
			event(parent, 1, 2, duroxide.SubOrchestrationScheduled{Name: "ChildOrch", Instance: child, Input: "{}"}),
		},
		OrchestratorItems: []duroxide.WorkItem{duroxide.StartOrchestrationItem{
			Instance:          child,
			Orchestration:     "ChildOrch",
			Input:             "{}",
			Version:           ptr("1.0.0"),
			ParentInstance:    ptr(parent),
			ParentID:          ptr(uint64(2)),
			ParentExecutionID: ptr(uint64(1)),
			ExecutionID:       1,
		}},
		Metadata: runningMetadata(),
	})

	item = mustFetchInstance(t, p, testLock, child)
	require.Equal(t, "ChildOrch", item.OrchestrationName)
	require.Equal(t, uint64(1), item.ExecutionID)
	require.Empty(t, item.History)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1,
		HistoryDelta: []duroxide.Event{event(child, 1, 1, duroxide.OrchestrationStarted{
			Name: "ChildOrch", Version: "1.5.0", Input: "{}", ParentInstance: ptr(parent), ParentID: ptr(uint64(2)),
		})},
		Metadata: duroxide.ExecutionMetadata{
			OrchestrationName:    ptr("ChildOrch"),
			OrchestrationVersion: ptr("1.5.0"),
			ParentInstanceID:     ptr(parent),
		},
	})

	poke(t, p, child)
	item = mustFetchInstance(t, p, testLock, child)
	require.Equal(t, "ChildOrch", item.OrchestrationName)
	require.Equal(t, "1.5.0", item.Version)
	require.Len(t, item.History, 1)
}
