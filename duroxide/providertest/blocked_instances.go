package providertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// blocked_instances: not in duroxide. BlockOrchestrationItem and
// BlockedReason, which the Go runtime's NondeterminismBlock policy relies
// on: a blocked instance's messages come back without counting an
// attempt, and the mark lasts until the instance's next committed turn.
// The client's status reads it, with the history and the custom status
// in one call when the provider is a duroxide.StatusReader.
var blockedInstancesTests = []Test{
	{Name: "block_records_reason_and_does_not_count_the_attempt", Func: testBlockRecordsReasonAndKeepsAttempt},
	{Name: "block_delays_the_messages", Func: testBlockDelaysTheMessages},
	{Name: "ack_clears_the_blocked_reason", Func: testAckClearsBlockedReason},
	{Name: "blocked_reason_of_unknown_instance_is_empty", Func: testBlockedReasonOfUnknownInstance},
	{Name: "read_status_matches_the_separate_reads", Func: testReadStatusMatchesSeparateReads},
}

func testBlockRecordsReasonAndKeepsAttempt(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	createInstance(t, p, "blocked-1")
	reason, err := p.BlockedReason(ctx, "blocked-1")
	require.NoError(t, err)
	require.Empty(t, reason, "a new instance is not blocked")
	poke(t, p, "blocked-1")
	for range 3 {
		item := mustFetchInstance(t, p, testLock, "blocked-1")
		require.Equal(t, uint32(1), item.AttemptCount, "blocked fetches never count towards poison")
		require.NoError(t, p.BlockOrchestrationItem(ctx, item.LockToken, 0, "nondeterministic: schedule mismatch"))
	}
	reason, err = p.BlockedReason(ctx, "blocked-1")
	require.NoError(t, err)
	require.Equal(t, "nondeterministic: schedule mismatch", reason)
	require.Len(t, mustRead(t, p, "blocked-1"), 1, "blocking writes no history")
}

func testBlockDelaysTheMessages(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	createInstance(t, p, "blocked-2")
	poke(t, p, "blocked-2")
	item := mustFetchInstance(t, p, testLock, "blocked-2")
	require.NoError(t, p.BlockOrchestrationItem(ctx, item.LockToken, time.Hour, "held"))
	requireNoFetch(t, p, "a blocked instance's messages stay invisible for the delay")
}

func testAckClearsBlockedReason(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	createInstance(t, p, "blocked-3")
	poke(t, p, "blocked-3")
	item := mustFetchInstance(t, p, testLock, "blocked-3")
	require.NoError(t, p.BlockOrchestrationItem(ctx, item.LockToken, 0, "held"))
	item = mustFetchInstance(t, p, testLock, "blocked-3")
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: runningMetadata()})
	reason, err := p.BlockedReason(ctx, "blocked-3")
	require.NoError(t, err)
	require.Empty(t, reason, "a committed turn ends the block")
}

func testBlockedReasonOfUnknownInstance(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	reason, err := p.BlockedReason(ctx, "blocked-never")
	require.NoError(t, err)
	require.Empty(t, reason)
}

// A StatusReader's ReadStatus answers what Read, CustomStatus and
// BlockedReason answer, for an unknown instance, a blocked one with a
// custom status, and after the turn that ends the block.
func testReadStatusMatchesSeparateReads(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	r, ok := p.(duroxide.StatusReader)
	if !ok {
		t.Skip("not applicable in Go: this provider does not implement the optional duroxide.StatusReader, so clients use the three separate reads, which the other blocked_instances behaviours check")
	}
	requireSame := func(instance, what string) *duroxide.InstanceStatus {
		t.Helper()
		got, err := r.ReadStatus(ctx, instance)
		require.NoError(t, err, "read_status")
		cs, err := p.CustomStatus(ctx, instance, 0)
		require.NoError(t, err)
		reason, err := p.BlockedReason(ctx, instance)
		require.NoError(t, err)
		require.Equal(t, mustRead(t, p, instance), got.History, "%s: history", what)
		require.Equal(t, cs, got.CustomStatus, "%s: custom status", what)
		require.Equal(t, reason, got.BlockedReason, "%s: blocked reason", what)
		return got
	}
	st := requireSame("status-never", "unknown instance")
	require.Empty(t, st.History)

	createInstance(t, p, "status-1")
	setCustomStatus(t, p, "status-1", 100, ptr("working"))
	poke(t, p, "status-1")
	item := mustFetchInstance(t, p, testLock, "status-1")
	require.NoError(t, p.BlockOrchestrationItem(ctx, item.LockToken, 0, "held"))
	st = requireSame("status-1", "blocked")
	require.Equal(t, "held", st.BlockedReason)
	require.Equal(t, ptr("working"), st.CustomStatus.Status)

	item = mustFetchInstance(t, p, testLock, "status-1")
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: runningMetadata()})
	st = requireSame("status-1", "after the next turn")
	require.Empty(t, st.BlockedReason)
}
