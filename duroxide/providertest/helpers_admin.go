package providertest

// Helpers shared by the sessions, capability_filtering, custom_status,
// kv_store, management, deletion, bulk_deletion and prune modules. They
// complement helpers.go; names carry an "adm"/"kv" flavour to stay clear
// of it.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// admOf returns p's ProviderAdmin and requires one.
func admOf(t *testing.T, p duroxide.Provider) duroxide.ProviderAdmin {
	t.Helper()
	a := p.Admin()
	require.NotNil(t, a, "provider should implement ProviderAdmin")
	return a
}

// admPokeAck is Rust's ack_with_delta / ack_with_metadata: poke the
// instance, fetch (30 s lock) and ack execution executionID with events
// and md.
func admPokeAck(t *testing.T, p duroxide.Provider, instance string, executionID uint64, events []duroxide.Event, md duroxide.ExecutionMetadata) {
	t.Helper()
	poke(t, p, instance)
	item := mustFetch(t, p, testLock)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  executionID,
		HistoryDelta: events,
		Metadata:     md,
	})
}

// kvSet is a KeyValueSet event.
func kvSet(instance string, executionID, eventID uint64, key, value string, updatedAtMs uint64) duroxide.Event {
	return event(instance, executionID, eventID, duroxide.KeyValueSet{Key: key, Value: value, LastUpdatedAtMs: updatedAtMs})
}

// kvCleared is a KeyValueCleared event.
func kvCleared(instance string, executionID, eventID uint64, key string) duroxide.Event {
	return event(instance, executionID, eventID, duroxide.KeyValueCleared{Key: key})
}

// kvAllCleared is a KeyValuesCleared event.
func kvAllCleared(instance string, executionID, eventID uint64) duroxide.Event {
	return event(instance, executionID, eventID, duroxide.KeyValuesCleared{})
}

// csEvent is a CustomStatusUpdated event (nil clears).
func csEvent(instance string, executionID, eventID uint64, status *string) duroxide.Event {
	return event(instance, executionID, eventID, duroxide.CustomStatusUpdated{Status: status})
}

// admStartedEvent is startedEvent naming a parent instance.
func admStartedEvent(instance string, executionID uint64, name string, parent *string, parentID *uint64) duroxide.Event {
	return event(instance, executionID, 1, duroxide.OrchestrationStarted{
		Name: name, Version: testOrchVersion, Input: testInput,
		ParentInstance: parent, ParentID: parentID,
	})
}

// admCompletedWithParent is the Rust helper of deletion.rs and
// bulk_deletion.rs: the start item and OrchestrationStarted name parent
// (parent_id 1) and the first turn is acked Completed with output "done"
// and parent_instance_id = parent. parent "" creates a root.
func admCompletedWithParent(t *testing.T, p duroxide.Provider, instance, parent string) {
	t.Helper()
	start := startItem(instance)
	var parentPtr *string
	var parentID *uint64
	if parent != "" {
		parentPtr, parentID = ptr(parent), ptr(uint64(1))
		start.ParentInstance, start.ParentID = parentPtr, parentID
	}
	enqueueOrch(t, p, start)
	item := mustFetchInstance(t, p, testLock, instance)
	md := statusMetadata(duroxide.StatusCompleted, "done")
	md.ParentInstanceID = parentPtr
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{admStartedEvent(instance, 1, testOrchName, parentPtr, parentID)},
		Metadata:     md,
	})
}

// admCompleted creates a Completed root instance.
func admCompleted(t *testing.T, p duroxide.Provider, instance string) {
	t.Helper()
	admCompletedWithParent(t, p, instance, "")
}

// admChild is deletion.rs's create_child_instance: a start
// item naming parent (no parent_id), fetched with a 5 s lock and acked
// Completed as "ChildOrch" with parent_instance_id = parent.
func admChild(t *testing.T, p duroxide.Provider, instance, parent string) {
	t.Helper()
	start := startItem(instance)
	start.ParentInstance = ptr(parent)
	enqueueOrch(t, p, start)
	item := mustFetchInstance(t, p, 5*time.Second, instance)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{admStartedEvent(instance, 1, "ChildOrch", ptr(parent), nil)},
		Metadata: duroxide.ExecutionMetadata{
			Status:               ptr(duroxide.StatusCompleted),
			Output:               ptr("done"),
			OrchestrationName:    ptr("ChildOrch"),
			OrchestrationVersion: ptr(testOrchVersion),
			ParentInstanceID:     ptr(parent),
		},
	})
}

// admMultiExec is prune.rs's helper: executions 1..n
// (a start item, then ContinueAsNew items), each acked with its
// OrchestrationStarted; all but the last are ContinuedAsNew and the last
// gets lastStatus.
func admMultiExec(t *testing.T, p duroxide.Provider, instance, name string, n uint64, lastStatus string) {
	t.Helper()
	for exec := uint64(1); exec <= n; exec++ {
		status := duroxide.StatusContinuedAsNew
		if exec == n {
			status = lastStatus
		}
		var item duroxide.WorkItem = startItem(instance)
		if exec > 1 {
			item = duroxide.ContinueAsNewItem{
				Instance: instance, Orchestration: name, Input: testInput,
				Version: ptr(testOrchVersion), CarryForwardEvents: []duroxide.CarryForwardEvent{},
			}
		}
		enqueueOrch(t, p, item)
		got := mustFetchInstance(t, p, testLock, instance)
		mustAck(t, p, got.LockToken, duroxide.OrchestrationCommit{
			ExecutionID:  exec,
			HistoryDelta: []duroxide.Event{admStartedEvent(instance, exec, name, nil, nil)},
			Metadata: duroxide.ExecutionMetadata{
				Status:               ptr(status),
				OrchestrationName:    ptr(name),
				OrchestrationVersion: ptr(testOrchVersion),
			},
		})
	}
}

// admRequireExists requires get_instance_info to succeed.
func admRequireExists(t *testing.T, a duroxide.ProviderAdmin, instance string, msgAndArgs ...any) {
	t.Helper()
	_, err := a.InstanceInfo(t.Context(), instance)
	require.NoError(t, err, msgAndArgs...)
}

// admRequireGone requires get_instance_info to fail.
func admRequireGone(t *testing.T, a duroxide.ProviderAdmin, instance string, msgAndArgs ...any) {
	t.Helper()
	_, err := a.InstanceInfo(t.Context(), instance)
	require.ErrorIs(t, err, duroxide.ErrInstanceNotFound, msgAndArgs...)
}
