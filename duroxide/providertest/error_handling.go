package providertest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// error_handling.rs: invalid input and corrupted storage are reported as
// errors, never silently accepted or swallowed.
var errorHandlingTests = []Test{
	{Name: "test_invalid_lock_token_on_ack", Func: testInvalidLockTokenOnAck},
	{Name: "test_duplicate_event_id_rejection", Func: testDuplicateEventIDRejection},
	{Name: "test_missing_instance_metadata", Func: testMissingInstanceMetadata},
	{Name: "test_corrupted_serialization_data", Func: testCorruptedSerializationData},
	{Name: "test_lock_expiration_during_ack", Func: testLockExpirationDuringAck},
	{Name: "test_read_corrupted_history_returns_error", Func: testReadCorruptedHistoryReturnsError},
	{Name: "test_read_with_execution_corrupted_history_returns_error", Func: testReadWithExecutionCorruptedHistoryReturnsError},
}

func testInvalidLockTokenOnAck(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueOrch(t, p, startItem("instance-A"))
	item := mustFetchInstance(t, p, testLock, "instance-A")

	err := p.AckOrchestrationItem(t.Context(), "invalid-token", duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{startedEvent("instance-A", 1)},
		Metadata:     runningMetadata(),
	})
	require.ErrorIs(t, err, duroxide.ErrLockLost)
	msg := err.Error()
	require.True(t, strings.Contains(msg, "Invalid lock token") || strings.Contains(msg, "lock_token"),
		"the error should name the lock token problem, got %q", msg)

	// The real lock is untouched and still usable.
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{startedEvent("instance-A", 1)},
		Metadata:     runningMetadata(),
	})
}

func testDuplicateEventIDRejection(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "instance-A")

	poke(t, p, "instance-A")
	item := mustFetchInstance(t, p, testLock, "instance-A")
	err := p.AckOrchestrationItem(t.Context(), item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{activityScheduledEvent("instance-A", 1, 1, "Act", "in")},
		Metadata:     runningMetadata(),
	})
	require.ErrorIs(t, err, duroxide.ErrDuplicateEvent, "event_id 1 already exists")

	h := mustRead(t, p, "instance-A")
	require.Len(t, h, 1, "history is unchanged")
	require.IsType(t, duroxide.OrchestrationStarted{}, h[0].Kind, "the stored event was not overwritten")
}

func testMissingInstanceMetadata(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	h, err := p.Read(t.Context(), "non-existent")
	if err == nil {
		require.Empty(t, h, "an unknown instance has no history")
	}
}

func testCorruptedSerializationData(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	item, err := p.FetchOrchestrationItem(t.Context(), testLock, 0, nil)
	require.NoError(t, err)
	require.Nil(t, item, "an empty store has nothing to fetch")
}

func testLockExpirationDuringAck(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	lock := f.LockTimeout()
	enqueueOrch(t, p, startItem("instance-A"))
	item := mustFetchInstance(t, p, lock, "instance-A")
	sleep(t, lock+100*time.Millisecond)
	err := p.AckOrchestrationItem(t.Context(), item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{startedEvent("instance-A", 1)},
		Metadata:     runningMetadata(),
	})
	require.ErrorIs(t, err, duroxide.ErrLockLost, "an ack after the lock expired must fail")
}

func testReadCorruptedHistoryReturnsError(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "corrupt-read")
	f.CorruptInstanceHistory(t, p, "corrupt-read")
	h, err := p.Read(t.Context(), "corrupt-read")
	require.Error(t, err, "read must fail on undecodable history, not return %d events", len(h))
}

func testReadWithExecutionCorruptedHistoryReturnsError(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "corrupt-read-exec")
	f.CorruptInstanceHistory(t, p, "corrupt-read-exec")
	h, err := p.ReadWithExecution(t.Context(), "corrupt-read-exec", 1)
	require.Error(t, err, "read_with_execution must fail on undecodable history, not return %d events", len(h))
}
