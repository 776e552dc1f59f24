package providertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// held_messages: not in duroxide. An instance's messages that are held
// back — a start not visible yet, a batch abandoned with a delay — keep
// the instance's other messages waiting instead of being dropped or
// overtaken. The Go client refuses events for an instance that does not
// exist, and an instance exists from the moment its start is accepted
// (duroxide.ClientWriter), so a queue message that meets a start still
// on its way is not an orphan; and a queue is FIFO, so a message that
// arrives while older ones are held back comes after them. In duroxide
// both happen to a runtime that abandons a batch with a delay while
// messages arrive: the queue message is dropped by the orphan rule, or
// delivered before the held ones.
var heldMessagesTests = []Test{
	{Name: "queue_message_waits_for_a_delayed_start", Func: testQueueMessageWaitsForDelayedStart},
	{Name: "queue_message_waits_for_a_start_abandoned_with_a_delay", Func: testQueueMessageWaitsForAbandonedStart},
	{Name: "messages_wait_for_a_batch_abandoned_with_a_delay", Func: testMessagesWaitForAbandonedBatch},
	{Name: "handed_back_messages_keep_their_place", Func: testHandedBackMessagesKeepTheirPlace},
	{Name: "results_for_a_missing_instance_are_dropped_at_once", Func: testResultsForAMissingInstanceAreDropped},
	{Name: "delayed_client_start_exists_at_once_and_holds_its_messages", Func: testDelayedClientStart},
	{Name: "a_start_that_has_not_run_is_deleted_unless_its_first_turn_runs", Func: testDeleteUnstartedStart},
}

// heldFor is how long the held-back messages stay invisible; the checks
// that they are held run before it ends (or the test is skipped).
const heldFor = 2 * time.Second

// fetchWhenVisible polls until an item for instance comes back, for at
// most a minute after the held messages became visible.
func fetchWhenVisible(t *testing.T, p duroxide.Provider, instance string, visible time.Time) *duroxide.OrchestrationItem {
	t.Helper()
	sleepUntil(t, visible)
	deadline := time.Now().Add(time.Minute)
	for {
		if item := tryFetch(t, p, testLock); item != nil {
			require.Equal(t, instance, item.Instance)
			return item
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "no orchestration item once the held messages became visible", "instance %q", instance)
		}
		sleep(t, 50*time.Millisecond)
	}
}

func testQueueMessageWaitsForDelayedStart(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	const inst = "held-start-delayed"
	visible := time.Now().Add(heldFor)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(inst), heldFor), "enqueue_for_orchestrator")
	msg := duroxide.QueueMessageItem{Instance: inst, Name: "inbox", Data: "m1"}
	enqueueOrch(t, p, msg)
	item := tryFetch(t, p, testLock)
	skipIfPast(t, visible, "fetch while the start is not visible")
	require.Nil(t, item, "nothing is deliverable before the start is visible")

	item = fetchWhenVisible(t, p, inst, visible)
	require.Equal(t, []duroxide.WorkItem{startItem(inst), msg}, item.Messages,
		"a queue message that arrived while the instance's start was on its way is delivered with it, not dropped as an orphan")
}

func testQueueMessageWaitsForAbandonedStart(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	const inst = "held-start-abandoned"
	enqueueOrch(t, p, startItem(inst))
	first := mustFetchInstance(t, p, testLock, inst)
	visible := time.Now().Add(heldFor)
	require.NoError(t, p.AbandonOrchestrationItem(ctx, first.LockToken, heldFor, false))
	msg := duroxide.QueueMessageItem{Instance: inst, Name: "inbox", Data: "m1"}
	enqueueOrch(t, p, msg)
	item := tryFetch(t, p, testLock)
	skipIfPast(t, visible, "fetch while the start is held back")
	require.Nil(t, item, "the queue message waits for the held-back start")

	item = fetchWhenVisible(t, p, inst, visible)
	require.Equal(t, []duroxide.WorkItem{startItem(inst), msg}, item.Messages,
		"the held-back start and the queue message that arrived meanwhile, in enqueue order")
}

func testMessagesWaitForAbandonedBatch(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	const inst = "held-batch"
	createInstance(t, p, inst)
	m1 := duroxide.QueueMessageItem{Instance: inst, Name: "inbox", Data: "m1"}
	enqueueOrch(t, p, m1)
	first := mustFetchInstance(t, p, testLock, inst)
	require.Equal(t, []duroxide.WorkItem{m1}, first.Messages)
	visible := time.Now().Add(heldFor)
	require.NoError(t, p.AbandonOrchestrationItem(ctx, first.LockToken, heldFor, false))
	m2 := duroxide.QueueMessageItem{Instance: inst, Name: "inbox", Data: "m2"}
	enqueueOrch(t, p, m2)
	item := tryFetch(t, p, testLock)
	skipIfPast(t, visible, "fetch while the abandoned batch is held back")
	require.Nil(t, item, "a message enqueued after a batch abandoned with a delay does not overtake it")

	item = fetchWhenVisible(t, p, inst, visible)
	require.Equal(t, []duroxide.WorkItem{m1, m2}, item.Messages, "the held batch first, then what arrived meanwhile")
	require.Equal(t, uint32(2), item.AttemptCount, "the held message's second attempt")
}

// A turn that leaves some of its fetched messages to a later turn hands
// them back among its OrchestratorItems (the runtime does so with the
// messages after a rewind request); a message that arrived while the
// turn ran must not overtake them, or a queue's FIFO order breaks.
func testHandedBackMessagesKeepTheirPlace(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "handed-back"
	createInstance(t, p, inst)
	m1 := duroxide.QueueMessageItem{Instance: inst, Name: "inbox", Data: "m1"}
	m2 := duroxide.QueueMessageItem{Instance: inst, Name: "inbox", Data: "m2"}
	m3 := duroxide.QueueMessageItem{Instance: inst, Name: "inbox", Data: "m3"}
	enqueueOrch(t, p, m1)
	enqueueOrch(t, p, m2)
	first := mustFetchInstance(t, p, testLock, inst)
	require.Equal(t, []duroxide.WorkItem{m1, m2}, first.Messages)
	enqueueOrch(t, p, m3) // arrives while the turn runs
	mustAck(t, p, first.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: runningMetadata(),
		OrchestratorItems: []duroxide.WorkItem{m2}})
	item := mustFetchInstance(t, p, testLock, inst)
	require.Equal(t, []duroxide.WorkItem{m2, m3}, item.Messages, "the handed-back message first, then what arrived during the turn")
}

// testResultsForAMissingInstanceAreDropped: an activity's, a timer's or a
// child's result can only answer an instance that exists; one addressed
// to an id that has none (its parent was deleted while the child ran) is
// dropped at the first fetch that meets it, like a queue message, not
// kept for the orphan lifetime. An event, which a client may send just
// before the start, still waits for it.
func testResultsForAMissingInstanceAreDropped(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "orphan-results"
	poke := externalRaised(inst, "poke", "p")
	for _, w := range []duroxide.WorkItem{
		activityCompleted(inst, 1, 1, "r"),
		duroxide.ActivityFailedItem{Instance: inst, ExecutionID: 1, ID: 2, Details: appFailure("boom")},
		timerFired(inst, 1, 3, 0),
		duroxide.SubOrchCompletedItem{ParentInstance: inst, ParentExecutionID: 1, ParentID: 4, Result: "c"},
		duroxide.SubOrchFailedItem{ParentInstance: inst, ParentExecutionID: 1, ParentID: 5, Details: appFailure("child failed")},
		poke,
	} {
		enqueueOrch(t, p, w)
	}
	requireNoFetch(t, p, "nothing is delivered to an instance that does not exist")

	enqueueOrch(t, p, startItem(inst))
	item := mustFetchInstance(t, p, testLock, inst)
	require.ElementsMatch(t, []duroxide.WorkItem{poke, startItem(inst)}, item.Messages,
		"the results were dropped at once; the event waits for the start")
}

func appFailure(msg string) duroxide.ApplicationError {
	return duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppActivityFailed}, Message: msg}
}

// A client start made visible later (duroxide.DelayedStartWriter, issue
// 33): the instance exists at once, so a second start is judged against
// it and a cancellation is accepted; nothing is fetched before the start
// time, and then the start and the cancellation come together.
func testDelayedClientStart(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	w, ok := p.(duroxide.DelayedStartWriter)
	cw, ok2 := p.(duroxide.ClientWriter)
	if !ok || !ok2 {
		t.Skip("not applicable in Go: this provider does not implement the optional duroxide.DelayedStartWriter, so StartOptions.StartAt is refused")
	}
	const inst = "held-delayed-client-start"
	visible := time.Now().Add(heldFor)
	require.NoError(t, w.StartInstanceAt(ctx, startItem(inst), "", visible))
	exists, err := cw.InstanceExists(ctx, inst)
	require.NoError(t, err)
	require.True(t, exists, "a delayed start's instance exists at once")
	other := startItem(inst)
	other.Input = "other"
	require.ErrorIs(t, cw.StartInstance(ctx, other, ""), duroxide.ErrInstanceExists)
	require.NoError(t, w.StartInstanceAt(ctx, startItem(inst), "", visible), "the identical start is a retry")
	cancel := duroxide.CancelInstanceItem{Instance: inst, Reason: "stop"}
	require.NoError(t, cw.EnqueueForInstance(ctx, cancel, ""))
	item := tryFetch(t, p, testLock)
	skipIfPast(t, visible, "fetch before the start time")
	require.Nil(t, item, "nothing is deliverable before the start time")

	item = fetchWhenVisible(t, p, inst, visible)
	require.Equal(t, []duroxide.WorkItem{startItem(inst), cancel}, item.Messages, "one start, then the cancellation")
}

// A client start that has not run is deleted with what waits behind it,
// and the id is free; one whose first turn runs (its start fetched) is
// refused as running, and deleted the ordinary way once that turn is
// committed.
func testDeleteUnstartedStart(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	cw, ok := p.(duroxide.ClientWriter)
	a := p.Admin()
	if !ok || a == nil {
		t.Skip("not applicable in Go: this provider does not implement the optional duroxide.ClientWriter or duroxide.ProviderAdmin, so no client start can be queued for it to delete")
	}
	const queued, running = "unstarted-queued", "unstarted-running"
	require.NoError(t, cw.StartInstance(ctx, startItem(queued), ""))
	require.NoError(t, cw.EnqueueForInstance(ctx, duroxide.ExternalRaisedItem{Instance: queued, Name: "e", Data: "d"}, ""))
	res, err := a.DeleteInstance(ctx, queued, false)
	require.NoError(t, err, "a start that has not run is not running")
	require.Equal(t, uint64(1), res.InstancesDeleted)
	require.Equal(t, uint64(2), res.QueueMessagesDeleted, "the start and the event behind it")
	exists, err := cw.InstanceExists(ctx, queued)
	require.NoError(t, err)
	require.False(t, exists)
	_, err = a.DeleteInstance(ctx, queued, false)
	require.ErrorIs(t, err, duroxide.ErrInstanceNotFound)
	require.Nil(t, tryFetch(t, p, testLock), "nothing of the deleted start is fetched")

	require.NoError(t, cw.StartInstance(ctx, startItem(running), ""))
	item := mustFetchInstance(t, p, testLock, running)
	_, err = a.DeleteInstance(ctx, running, true)
	require.ErrorIs(t, err, duroxide.ErrInstanceStillRunning, "its first turn runs")
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{startedEvent(running, 1)}, Metadata: runningMetadata()})
	_, err = a.DeleteInstance(ctx, running, true)
	require.NoError(t, err, "deleted the ordinary way once its turn committed")
}
