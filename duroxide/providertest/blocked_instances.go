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
var blockedInstancesTests = []Test{
	{Name: "block_records_reason_and_does_not_count_the_attempt", Func: testBlockRecordsReasonAndKeepsAttempt},
	{Name: "block_delays_the_messages", Func: testBlockDelaysTheMessages},
	{Name: "ack_clears_the_blocked_reason", Func: testAckClearsBlockedReason},
	{Name: "blocked_reason_of_unknown_instance_is_empty", Func: testBlockedReasonOfUnknownInstance},
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
