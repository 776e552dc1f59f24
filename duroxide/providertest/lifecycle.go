package providertest

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// lifecycle: not in duroxide. What the Go Client's Suspend, Resume and
// Rewind need from a provider: OrchestrationCommit.Suspend holds an
// instance's messages back until one that duroxide.WakesSuspended
// arrives, which then brings them all; and a turn may start execution
// N+1 of a failed instance with a whole prefix of history, replayed
// against the KV the failed execution started with (KVBaseline,
// RestoreKV: kv_baseline.go); and a commit
// that only drains an ended instance's late messages leaves its updatedAt
// at its end (duroxide.OrchestrationCommit). The suspension behaviours
// apply to a duroxide.SuspensionReader.
var lifecycleTests = []Test{
	{Name: "suspended_instance_is_not_fetched", Func: testSuspendedInstanceIsNotFetched},
	{Name: "resume_brings_the_held_messages_in_order", Func: testResumeBringsTheHeldMessages},
	{Name: "resume_brings_more_held_messages_than_one_batch", Func: testResumeBringsManyHeldMessages},
	{Name: "cancel_wakes_a_suspended_instance", Func: testCancelWakesASuspendedInstance},
	{Name: "ending_an_execution_clears_the_suspension", Func: testEndingAnExecutionClearsTheSuspension},
	{Name: "suspension_of_unknown_instance_is_false", Func: testSuspensionOfUnknownInstance},
	{Name: "search_finds_a_suspended_instance", Func: testSearchFindsASuspendedInstance},
	{Name: "rewound_execution_starts_running_from_a_prefix", Func: testRewoundExecutionStartsRunning},
	{Name: "a_failed_execution_hands_the_kv_it_started_with", Func: testFailedExecutionHandsItsStartingKV},
	{Name: "a_rewind_commit_restores_the_kv_baseline", Func: testRewindCommitRestoresTheBaseline},
	{Name: "a_restart_drops_the_kv_baseline", Func: testRestartDropsTheBaseline},
	{Name: "next_execution_has_one_winner", Func: testNextExecutionHasOneWinner},
	{Name: "next_execution_claims_are_per_execution", Func: testNextExecutionClaimsArePerExecution},
	{Name: "draining_an_ended_instance_keeps_its_updated_at", Func: testDrainKeepsUpdatedAt},
	{Name: "pending_requests_list_what_the_next_turn_takes", Func: testPendingRequests},
}

// testPendingRequests: a PendingRequestReader lists the instance's queued
// requests, oldest first and without its other messages, until a turn
// takes them.
func testPendingRequests(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	r, ok := p.(duroxide.PendingRequestReader)
	if !ok {
		t.Skip("not applicable in Go: this provider does not implement the optional duroxide.PendingRequestReader, so the Client reports no pending requests and show and the dashboard list none")
	}
	const instance = "pending-requests"
	createInstanceWith(t, p, instance, statusMetadata(duroxide.StatusCompleted, "done"))
	none, err := r.PendingRequests(ctx, instance)
	require.NoError(t, err)
	require.Empty(t, none)
	suspend := duroxide.SuspendInstanceItem{Instance: instance, Reason: "hold"}
	restart := restartOf(instance, 1, "again")
	cancel := duroxide.CancelInstanceItem{Instance: instance, Reason: "stop"}
	enqueueOrch(t, p, suspend)
	enqueueOrch(t, p, duroxide.QueueMessageItem{Instance: instance, Name: "inbox", Data: "m"})
	enqueueOrch(t, p, restart)
	enqueueOrch(t, p, cancel)
	pending, err := r.PendingRequests(ctx, instance)
	require.NoError(t, err)
	require.Equal(t, []duroxide.WorkItem{suspend, restart, cancel}, pending, "the requests, oldest first, not the queue message")
	other, err := r.PendingRequests(ctx, "pending-requests-other")
	require.NoError(t, err)
	require.Empty(t, other, "another instance has none")

	item := mustFetchInstance(t, p, testLock, instance)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: statusMetadata(duroxide.StatusCompleted, "done")})
	taken, err := r.PendingRequests(ctx, instance)
	require.NoError(t, err)
	require.Empty(t, taken, "a turn took them")
}

// nextExecutionWriter returns p as a NextExecutionWriter or skips t.
func nextExecutionWriter(t *testing.T, p duroxide.Provider) duroxide.NextExecutionWriter {
	t.Helper()
	w, ok := p.(duroxide.NextExecutionWriter)
	if !ok {
		t.Skip("not applicable in Go: this provider does not implement the optional duroxide.NextExecutionWriter, so only the runtime drops a late restart")
	}
	return w
}

// restartOf is a client's restart of instance's execution exec.
func restartOf(instance string, exec uint64, input string) duroxide.ContinueAsNewItem {
	return duroxide.ContinueAsNewItem{Instance: instance, Orchestration: "TestOrch", Input: input,
		CarryForwardEvents: []duroxide.CarryForwardEvent{}, RestartOf: &exec}
}

// testNextExecutionHasOneWinner: requests for the successor of one
// terminal execution (restarts, a rewind) race; exactly one is enqueued,
// the others are ErrStaleExecution, and the winner's key repeats it.
func testNextExecutionHasOneWinner(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	w := nextExecutionWriter(t, p)
	const instance = "next-race"
	createInstanceWith(t, p, instance, statusMetadata(duroxide.StatusCompleted, "done"))
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var item duroxide.WorkItem = restartOf(instance, 1, strconv.Itoa(i))
			if i == 0 {
				item = duroxide.RewindInstanceItem{Instance: instance, ExecutionID: 1}
			}
			errs[i] = w.EnqueueNextExecution(t.Context(), item, 1, "key-"+strconv.Itoa(i))
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, won, "exactly one request wins: %v", errs)
			won = i
			continue
		}
		require.ErrorIs(t, err, duroxide.ErrStaleExecution)
		require.False(t, duroxide.IsRetryable(err), "a refused claim is final: %v", err)
	}
	require.NotEqual(t, -1, won, "one request wins: %v", errs)
	require.NoError(t, w.EnqueueNextExecution(t.Context(), restartOf(instance, 1, "again"), 1, "key-"+strconv.Itoa(won)),
		"the winner's retry")
	item := mustFetchInstance(t, p, testLock, instance)
	require.Len(t, item.Messages, 1, "one request enqueued: %v", item.Messages)
}

// testNextExecutionClaimsArePerExecution: a claim refuses requests for
// the successor of its execution and of earlier ones, not of later
// ones; a missing instance is ErrInstanceNotFound; other items are
// ErrInvalidInput.
func testNextExecutionClaimsArePerExecution(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	w := nextExecutionWriter(t, p)
	ctx := t.Context()
	require.ErrorIs(t, w.EnqueueNextExecution(ctx, restartOf("next-missing", 1, ""), 1, ""), duroxide.ErrInstanceNotFound)
	const instance = "next-claims"
	createInstanceWith(t, p, instance, statusMetadata(duroxide.StatusFailed, "boom"))
	require.ErrorIs(t, w.EnqueueNextExecution(ctx, duroxide.CancelInstanceItem{Instance: instance}, 1, ""), duroxide.ErrInvalidInput)
	require.NoError(t, w.EnqueueNextExecution(ctx, restartOf(instance, 2, "a"), 2, ""))
	require.ErrorIs(t, w.EnqueueNextExecution(ctx, restartOf(instance, 1, "b"), 1, ""), duroxide.ErrStaleExecution, "an earlier execution")
	require.ErrorIs(t, w.EnqueueNextExecution(ctx, restartOf(instance, 2, "c"), 2, ""), duroxide.ErrStaleExecution,
		"without a key a second request is not a retry")
	require.NoError(t, w.EnqueueNextExecution(ctx, restartOf(instance, 3, "d"), 3, ""), "the successor of a later execution")
}

// suspensionReader returns p as a SuspensionReader or skips t.
func suspensionReader(t *testing.T, p duroxide.Provider) duroxide.SuspensionReader {
	t.Helper()
	r, ok := p.(duroxide.SuspensionReader)
	if !ok {
		t.Skip("not applicable in Go: this provider does not implement the optional duroxide.SuspensionReader, so the Client refuses to suspend (ErrSuspensionNotSupported)")
	}
	return r
}

// suspend commits a turn of instance that suspends it (the instance
// needs a visible message to be fetched).
func suspend(t *testing.T, p duroxide.Provider, instance, reason string) {
	t.Helper()
	item := mustFetchInstance(t, p, testLock, instance)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: runningMetadata(),
		Suspend: &duroxide.SuspendChange{Suspended: true, Reason: reason}})
}

func requireSuspended(t *testing.T, r duroxide.SuspensionReader, instance string, want bool, reason string) {
	t.Helper()
	got, why, err := r.Suspension(t.Context(), instance)
	require.NoError(t, err, "suspension")
	require.Equal(t, want, got, "suspended")
	require.Equal(t, reason, why, "reason")
}

func testSuspendedInstanceIsNotFetched(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	r := suspensionReader(t, p)
	createInstance(t, p, "suspend-1")
	requireSuspended(t, r, "suspend-1", false, "")
	poke(t, p, "suspend-1")
	suspend(t, p, "suspend-1", "maintenance")
	requireSuspended(t, r, "suspend-1", true, "maintenance")
	enqueueOrch(t, p, externalRaised("suspend-1", "e", "1"))
	enqueueOrch(t, p, activityCompleted("suspend-1", 1, 2, "done"))
	requireNoFetch(t, p, "a suspended instance's messages are held back")
	requireNoFetch(t, p, "still held on the next fetch")
}

func testResumeBringsTheHeldMessages(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	r := suspensionReader(t, p)
	createInstance(t, p, "suspend-2")
	poke(t, p, "suspend-2")
	suspend(t, p, "suspend-2", "hold")
	enqueueOrch(t, p, externalRaised("suspend-2", "e", "1"))
	enqueueOrch(t, p, externalRaised("suspend-2", "e", "2"))
	requireNoFetch(t, p, "held")
	enqueueOrch(t, p, duroxide.ResumeInstanceItem{Instance: "suspend-2", Reason: "go on"})
	item := mustFetchInstance(t, p, testLock, "suspend-2")
	require.Equal(t, []duroxide.WorkItem{
		externalRaised("suspend-2", "e", "1"),
		externalRaised("suspend-2", "e", "2"),
		duroxide.ResumeInstanceItem{Instance: "suspend-2", Reason: "go on"},
	}, item.Messages, "the resume brings every held message, oldest first")
	require.Equal(t, uint32(1), item.AttemptCount, "holding a message does not count an attempt")
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: runningMetadata(), Suspend: &duroxide.SuspendChange{}})
	requireSuspended(t, r, "suspend-2", false, "")
	poke(t, p, "suspend-2")
	mustFetchInstance(t, p, testLock, "suspend-2")
}

// More messages wait than one fetch locks (a Cosmos batch holds at most
// 100 operations): the resume still brings every one, oldest first, and
// a message sent after the resume comes after them all.
func testResumeBringsManyHeldMessages(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	suspensionReader(t, p)
	const instance, n = "suspend-many", 150
	createInstance(t, p, instance)
	poke(t, p, instance)
	suspend(t, p, instance, "hold")
	var want []duroxide.WorkItem
	for i := range n {
		e := externalRaised(instance, "e", strconv.Itoa(i))
		enqueueOrch(t, p, e)
		want = append(want, e)
	}
	// Each fetch may put one batch aside; a few more than the batches
	// needed leave nothing visible.
	for range n/50 + 2 {
		requireNoFetch(t, p, "held")
	}
	resume := duroxide.ResumeInstanceItem{Instance: instance, Reason: "go on"}
	enqueueOrch(t, p, resume)
	item := mustFetchInstance(t, p, testLock, instance)
	require.Equal(t, append(want, resume), item.Messages, "the resume brings every held message, oldest first")
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: runningMetadata(), Suspend: &duroxide.SuspendChange{}})
	after := externalRaised(instance, "after", "{}")
	enqueueOrch(t, p, after)
	item = mustFetchInstance(t, p, testLock, instance)
	require.Equal(t, []duroxide.WorkItem{after}, item.Messages, "only the message sent after the resume is left")
}

func testCancelWakesASuspendedInstance(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	r := suspensionReader(t, p)
	createInstance(t, p, "suspend-3")
	poke(t, p, "suspend-3")
	suspend(t, p, "suspend-3", "hold")
	poke(t, p, "suspend-3")
	requireNoFetch(t, p, "held")
	enqueueOrch(t, p, duroxide.CancelInstanceItem{Instance: "suspend-3", Reason: "stop"})
	item := mustFetchInstance(t, p, testLock, "suspend-3")
	require.Len(t, item.Messages, 2, "the cancellation and the held message")
	// A turn that does not change the suspension keeps it.
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: runningMetadata()})
	requireSuspended(t, r, "suspend-3", true, "hold")
	poke(t, p, "suspend-3")
	requireNoFetch(t, p, "still suspended")
}

// An execution that ends (completed, failed, continued as new) is not
// suspended, whatever its commit's Suspend says: a woken turn the
// runtime fails as poison writes no Suspend, and what follows the end (a
// rewind, restart or re-drive, the next execution) must not be held back.
func testEndingAnExecutionClearsTheSuspension(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	r := suspensionReader(t, p)
	for _, status := range []string{duroxide.StatusCompleted, duroxide.StatusFailed, duroxide.StatusContinuedAsNew} {
		instance := "suspend-end-" + status
		createInstance(t, p, instance)
		poke(t, p, instance)
		suspend(t, p, instance, "hold")
		enqueueOrch(t, p, duroxide.CancelInstanceItem{Instance: instance, Reason: "stop"})
		item := mustFetchInstance(t, p, testLock, instance)
		mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: statusMetadata(status, "end")})
		requireSuspended(t, r, instance, false, "")
		poke(t, p, instance)
		mustFetchInstance(t, p, testLock, instance)
	}
}

func testSuspensionOfUnknownInstance(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	requireSuspended(t, suspensionReader(t, p), "suspend-never", false, "")
}

// A suspended instance is searched as suspended, neither running nor
// blocked, until a turn resumes it.
func testSearchFindsASuspendedInstance(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	suspensionReader(t, p)
	a := admOf(t, p)
	createInstance(t, p, "suspend-search-1")
	createInstance(t, p, "suspend-search-2")
	poke(t, p, "suspend-search-1")
	suspend(t, p, "suspend-search-1", "maintenance")
	states := func(s ...duroxide.InstanceState) duroxide.InstanceQuery {
		return duroxide.InstanceQuery{IDPrefix: "suspend-search-", States: s}
	}
	require.Equal(t, []string{"suspend-search-1"}, searchIDs(t, a, states(duroxide.InstanceSuspended)), "suspended")
	require.Equal(t, []string{"suspend-search-2"}, searchIDs(t, a, states(duroxide.InstanceRunning)), "running is not suspended")
	require.Equal(t, []string{}, searchIDs(t, a, states(duroxide.InstanceBlocked)), "blocked")
	for _, s := range searchAll(t, a, states()) {
		want := map[string]duroxide.InstanceState{"suspend-search-1": duroxide.InstanceSuspended, "suspend-search-2": duroxide.InstanceRunning}[s.InstanceID]
		require.Equal(t, want, s.State, "state of %s", s.InstanceID)
	}

	enqueueOrch(t, p, duroxide.ResumeInstanceItem{Instance: "suspend-search-1"})
	item := mustFetchInstance(t, p, testLock, "suspend-search-1")
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: runningMetadata(), Suspend: &duroxide.SuspendChange{}})
	require.Equal(t, []string{}, searchIDs(t, a, states(duroxide.InstanceSuspended)), "resumed")
	require.Equal(t, []string{"suspend-search-1", "suspend-search-2"}, searchIDs(t, a, states(duroxide.InstanceRunning)), "running again")
}

// Rewind commits execution N+1 of a failed instance with a prefix of
// execution N's history, several events at once: it is Running again
// and execution N keeps its failure.
func testRewoundExecutionStartsRunning(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	const instance = "rewind-1"
	enqueueOrch(t, p, startItem(instance))
	item := mustFetchInstance(t, p, testLock, instance)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{startedEvent(instance, 1), activityScheduledEvent(instance, 1, 2, "A", "in"),
			completionEvent(instance, 1, 3, 2, duroxide.ActivityFailed{Details: duroxide.ApplicationError{
				Kind: duroxide.AppErrorKind{Type: duroxide.AppActivityFailed}, Message: "boom"}}),
			orchestrationFailedEvent(instance, 1, 4, "boom")},
		Metadata: statusMetadata(duroxide.StatusFailed, "boom")})
	enqueueOrch(t, p, duroxide.RewindInstanceItem{Instance: instance, ExecutionID: 1})
	item = mustFetchInstance(t, p, testLock, instance)
	require.Equal(t, uint64(1), item.ExecutionID)
	require.Equal(t, []duroxide.WorkItem{duroxide.RewindInstanceItem{Instance: instance, ExecutionID: 1}}, item.Messages)
	prefix := []duroxide.Event{startedEvent(instance, 2), activityScheduledEvent(instance, 2, 2, "A", "in")}
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 2, HistoryDelta: prefix,
		WorkerItems: []duroxide.WorkItem{activityExecute(instance, 2, 2, "A", "in")},
		Metadata:    statusMetadata(duroxide.StatusRunning, "")})
	require.Equal(t, prefix, mustRead(t, p, instance))
	require.Len(t, mustReadExecution(t, p, instance, 1), 4, "execution 1 is kept")
	w := mustFetchWork(t, p, testLock)
	require.Equal(t, activityExecute(instance, 2, 2, "A", "in"), activityOf(t, w))
	if a := p.Admin(); a != nil {
		info, err := a.InstanceInfo(ctx, instance)
		require.NoError(t, err)
		require.Equal(t, duroxide.StatusRunning, info.Status)
		require.Equal(t, uint64(2), info.CurrentExecutionID)
	}
}

// testDrainKeepsUpdatedAt: a timer that fires after its instance
// completed is drained by a commit that Drains; the message is consumed,
// and the instance's updatedAt stays its completion time.
func testDrainKeepsUpdatedAt(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	const inst = "mgmt-drain"
	admCompleted(t, p, inst)
	before, err := a.InstanceInfo(ctx, inst)
	require.NoError(t, err)
	ex, err := a.ExecutionInfo(ctx, inst, 1)
	require.NoError(t, err)
	require.NotNil(t, ex.CompletedAt)
	require.Equal(t, *ex.CompletedAt, before.UpdatedAt, "a completing ack stamps updatedAt with the completion")

	sleep(t, 20*time.Millisecond) // a later ack's clock reads a later millisecond
	enqueueOrch(t, p, timerFired(inst, 1, 2, nowMs()))
	item := mustFetchInstance(t, p, testLock, inst)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1})
	requireNoFetch(t, p, "the drained timer is consumed")
	after, err := a.InstanceInfo(ctx, inst)
	require.NoError(t, err)
	require.Equal(t, before.UpdatedAt, after.UpdatedAt, "draining a late message moved the ended instance's updatedAt")
	require.Equal(t, duroxide.StatusCompleted, after.Status)
}
