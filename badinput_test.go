package cdb_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
)

// Bad input is refused with a permanent error before anything is written:
// a work item on the wrong queue, a document that would exceed Cosmos DB's
// 2 MB limit. A refused ack keeps its lock, so the caller can still ack
// with good input (or abandon). History that cannot be decoded is never
// dropped: Read fails and fetch reports it as HistoryError.

// big is a 2.1 MB string: any document carrying it exceeds 2 MB.
var big = strings.Repeat("x", 2100*1024)

// lockedTurn creates instance, enqueues an event for it and fetches it,
// returning the locked item and the event a good ack would record.
func lockedTurn(t *testing.T, p *cdb.Provider, instance string) (*duroxide.OrchestrationItem, duroxide.Event) {
	t.Helper()
	createHInstance(t, p, instance)
	require.NoError(t, p.EnqueueForOrchestrator(t.Context(), duroxide.ExternalRaisedItem{Instance: instance, Name: "go", Data: "1"}, 0))
	item := mustFetchOrch(t, p, instance)
	return item, hEvent(instance, 1, 2, duroxide.ExternalEvent{Name: "go", Data: "1"})
}

// requireRefusedAck acks item with commit and requires a permanent error,
// no change to the container and the lock still held (neither this
// provider nor another process can fetch the instance).
func requireRefusedAck(t *testing.T, h *harness, p, other *cdb.Provider, item *duroxide.OrchestrationItem, commit duroxide.OrchestrationCommit) {
	t.Helper()
	before := h.snapshot()
	requirePermanentErr(t, p.AckOrchestrationItem(t.Context(), item.LockToken, commit))
	h.requireUnchanged(before, "a refused ack wrote something")
	requireNoOrch(t, other, "another process fetched a locked instance after a refused ack")
	requireNoOrch(t, p, "the acking process fetched its own locked instance after a refused ack")
}

// TestBadInputWrongQueueEnqueue: an activity enqueued for the
// orchestrator, an orchestrator item enqueued for a worker, or a nil item,
// is a permanent error and writes nothing.
func TestBadInputWrongQueueEnqueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	p := h.p
	createHInstance(t, p, "q-1")
	before := h.snapshot()
	act := duroxide.ActivityExecuteItem{Instance: "q-1", ExecutionID: 1, ID: 2, Name: "A", Input: "i"}
	requirePermanentErr(t, p.EnqueueForOrchestrator(ctx, act, 0), "ActivityExecute on the orchestrator queue")
	requirePermanentErr(t, p.EnqueueForOrchestrator(ctx, nil, 0), "nil on the orchestrator queue")
	for _, wi := range []duroxide.WorkItem{
		hStart("q-2"),
		duroxide.ActivityCompletedItem{Instance: "q-1", ExecutionID: 1, ID: 2, Result: "r"},
		duroxide.ExternalRaisedItem{Instance: "q-1", Name: "e"},
		duroxide.TimerFiredItem{Instance: "q-1", ExecutionID: 1, ID: 3, FireAtMs: hNowMs()},
		nil,
	} {
		requirePermanentErr(t, p.EnqueueForWorker(ctx, wi), "%T on the worker queue", wi)
	}
	h.requireUnchanged(before)
	requireNoOrch(t, p)
	w, err := p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.AnyTag())
	require.NoError(t, err)
	require.Nil(t, w)
}

// TestBadInputWrongQueueAck: an ack whose WorkerItems hold something other
// than ActivityExecute, or whose OrchestratorItems hold an
// ActivityExecute, is refused permanently with nothing written and the
// lock kept; the same lock then acks good input.
func TestBadInputWrongQueueAck(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	p := h.p
	other := h.open(cdb.Options{})
	item, ev := lockedTurn(t, p, "wq-1")
	act := duroxide.ActivityExecuteItem{Instance: "wq-1", ExecutionID: 1, ID: 3, Name: "A", Input: "i"}
	sched := hEvent("wq-1", 1, 3, duroxide.ActivityScheduled{Name: "A", Input: "i"})
	bad := map[string]duroxide.OrchestrationCommit{
		"completion_as_worker_item": {WorkerItems: []duroxide.WorkItem{duroxide.ActivityCompletedItem{Instance: "wq-1", ExecutionID: 1, ID: 3, Result: "r"}}},
		"start_as_worker_item":      {WorkerItems: []duroxide.WorkItem{hStart("wq-other")}},
		"nil_worker_item":           {WorkerItems: []duroxide.WorkItem{act, nil}},
		"activity_as_orch_item":     {OrchestratorItems: []duroxide.WorkItem{act}},
		"activity_for_other_as_orch": {OrchestratorItems: []duroxide.WorkItem{
			duroxide.ExternalRaisedItem{Instance: "wq-1", Name: "self"},
			duroxide.ActivityExecuteItem{Instance: "wq-other", ExecutionID: 1, ID: 1, Name: "A"},
		}},
		"nil_orch_item":       {OrchestratorItems: []duroxide.WorkItem{nil}},
		"event_without_kind":  {HistoryDelta: []duroxide.Event{ev, {EventID: 3, InstanceID: "wq-1", ExecutionID: 1}}},
		"good_and_bad_mixed":  {WorkerItems: []duroxide.WorkItem{act, duroxide.TimerFiredItem{Instance: "wq-1", ExecutionID: 1, ID: 4, FireAtMs: 1}}},
		"orch_item_in_worker": {WorkerItems: []duroxide.WorkItem{duroxide.CancelInstanceItem{Instance: "wq-1", Reason: "r"}}},
	}
	for name, c := range bad {
		t.Run(name, func(t *testing.T) {
			c.ExecutionID = 1
			c.Metadata = hRunning("HOrch")
			if c.HistoryDelta == nil {
				c.HistoryDelta = []duroxide.Event{ev, sched}
			}
			requireRefusedAck(t, h, p, other, item, c)
		})
	}
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1, HistoryDelta: []duroxide.Event{ev, sched}, WorkerItems: []duroxide.WorkItem{act}, Metadata: hRunning("HOrch"),
	}))
	hist, err := p.Read(ctx, "wq-1")
	require.NoError(t, err)
	require.Len(t, hist, 3)
	require.Len(t, h.docsWhere("worker_queue", "wq-1"), 1)

	// A worker's completion must be an orchestrator item.
	w, err := p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.DefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w)
	before := h.snapshot()
	requirePermanentErr(t, p.AckWorkItem(ctx, w.LockToken, act), "ActivityExecute as a completion")
	h.requireUnchanged(before)
	w2, err := other.FetchWorkItem(ctx, hLock, 0, nil, duroxide.AnyTag())
	require.NoError(t, err)
	require.Nil(t, w2, "the work item must still be locked")
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: "wq-1", ExecutionID: 1, ID: 3, Result: "r"}))
	require.Empty(t, h.docsWhere("worker_queue", "wq-1"))
}

// TestBadInputOversizedEnqueue: an enqueued item whose document would
// exceed 2 MB is refused permanently and nothing is written.
func TestBadInputOversizedEnqueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	p := h.p
	before := h.snapshot()
	start := hStart("big-1")
	start.Input = big
	requirePermanentErr(t, p.EnqueueForOrchestrator(ctx, start, 0), "2.1 MB start input")
	requirePermanentErr(t, p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: "big-1", Name: "e", Data: big}, 0), "2.1 MB event data")
	requirePermanentErr(t, p.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: "big-1", ExecutionID: 1, ID: 1, Name: "A", Input: big}), "2.1 MB activity input")
	h.requireUnchanged(before)
	requireNoOrch(t, p)
}

// TestBadInputOversizedAck: a turn with any document over 2 MB (a history
// event, an activity, a message to itself or to another instance, the
// output on the instance document, a KV value) is refused permanently,
// nothing is written and the lock is kept; the same lock then acks.
func TestBadInputOversizedAck(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	p := h.p
	other := h.open(cdb.Options{})
	item, ev := lockedTurn(t, p, "big-ack")
	bigEvent := hEvent("big-ack", 1, 3, duroxide.ActivityScheduled{Name: "A", Input: big})
	bigStart := hChildStart("big-ack", "big-child", 3)
	bigStart.Input = big
	cases := map[string]duroxide.OrchestrationCommit{
		"history_event": {HistoryDelta: []duroxide.Event{ev, bigEvent}},
		"activity": {HistoryDelta: []duroxide.Event{ev},
			WorkerItems: []duroxide.WorkItem{duroxide.ActivityExecuteItem{Instance: "big-ack", ExecutionID: 1, ID: 3, Name: "A", Input: big}}},
		"message_to_self": {HistoryDelta: []duroxide.Event{ev},
			OrchestratorItems: []duroxide.WorkItem{duroxide.ExternalRaisedItem{Instance: "big-ack", Name: "e", Data: big}}},
		"message_to_child": {HistoryDelta: []duroxide.Event{ev}, OrchestratorItems: []duroxide.WorkItem{bigStart}},
		"output": {HistoryDelta: []duroxide.Event{ev, hEvent("big-ack", 1, 3, duroxide.OrchestrationCompleted{Output: "o"})},
			Metadata: hStatus("HOrch", duroxide.StatusCompleted, big)},
		"kv_value": {HistoryDelta: []duroxide.Event{ev, hEvent("big-ack", 1, 3, duroxide.KeyValueSet{Key: "k", Value: big, LastUpdatedAtMs: hNowMs()})}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			c.ExecutionID = 1
			if c.Metadata.OrchestrationName == nil {
				c.Metadata = hRunning("HOrch")
			}
			requireRefusedAck(t, h, p, other, item, c)
		})
	}
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1, HistoryDelta: []duroxide.Event{ev}, Metadata: hRunning("HOrch"),
	}))
	hist, err := p.Read(ctx, "big-ack")
	require.NoError(t, err)
	require.Len(t, hist, 2)

	// A worker's 2.1 MB result is refused the same way, keeping the lock.
	require.NoError(t, p.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: "big-ack", ExecutionID: 1, ID: 5, Name: "A"}))
	w, err := p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.DefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w)
	before := h.snapshot()
	requirePermanentErr(t, p.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: "big-ack", ExecutionID: 1, ID: 5, Result: big}))
	h.requireUnchanged(before)
	w2, err := other.FetchWorkItem(ctx, hLock, 0, nil, duroxide.AnyTag())
	require.NoError(t, err)
	require.Nil(t, w2, "the work item must still be locked")
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: "big-ack", ExecutionID: 1, ID: 5, Result: "small"}))
}

// TestBadInputUnknownEventType stores a history event of a type this
// version does not know (as a newer duroxide would write it) directly
// through the SDK: Read and ReadWithExecution fail instead of skipping it,
// and fetch returns the instance locked with HistoryError set (not an
// error), so the runtime can fail or abandon it.
func TestBadInputUnknownEventType(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	p := h.p
	const inst = "future-1"
	createHInstance(t, p, inst)

	client, err := h.srv.NewClient(hClientOptions())
	require.NoError(t, err)
	defer client.Close()
	c, err := client.NewContainer(hDatabase, hContainer)
	require.NoError(t, err)
	eventData := `{"event_id":2,"source_event_id":null,"instance_id":"future-1","execution_id":1,"timestamp_ms":1760000000000,"duroxide_version":"9.0.0","type":"FutureEvent","payload":"from the future"}`
	doc, _ := json.Marshal(map[string]any{"id": inst + ":history:1:2", "instanceId": inst, "type": "history",
		"executionId": 1, "eventId": 2, "eventData": eventData})
	r, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString(inst), doc, nil)
	require.NoError(t, err)
	cdb.ObserveSessionToken(p, inst, *r.SessionToken) // the edit reaches p's reads

	_, err = p.Read(ctx, inst)
	require.Error(t, err, "Read must not skip an undecodable event")
	require.Contains(t, err.Error(), "FutureEvent")
	requirePermanentErr(t, err)
	_, err = p.ReadWithExecution(ctx, inst, 1)
	requirePermanentErr(t, err)

	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "go", Data: "1"}, 0))
	item, err := p.FetchOrchestrationItem(ctx, hLock, 0, nil)
	require.NoError(t, err, "an undecodable history is reported in the item, not as an error")
	require.NotNil(t, item)
	require.Equal(t, inst, item.Instance)
	require.NotNil(t, item.HistoryError)
	require.Contains(t, *item.HistoryError, "FutureEvent")
	require.Empty(t, item.History)
	require.Equal(t, []duroxide.WorkItem{duroxide.ExternalRaisedItem{Instance: inst, Name: "go", Data: "1"}}, item.Messages)
	requireNoOrch(t, h.open(cdb.Options{}), "the item with a history error must be locked")
	requireNoOrch(t, p, "the item with a history error must be locked")

	// Nothing was dropped: the event is still stored, and abandoning makes
	// the item fetchable again with the same error.
	require.Len(t, h.docsWhere("history", inst), 2)
	require.NoError(t, p.AbandonOrchestrationItem(ctx, item.LockToken, 0, false))
	again := mustFetchOrch(t, p, inst)
	require.NotNil(t, again.HistoryError)
	require.Equal(t, uint32(2), again.AttemptCount)
}

// TestBadInputForeignEventsAck: history events that name another instance
// or another execution than the commit's are refused with ErrInvalidInput
// and nothing is written (before the check, an event of execution 5 in a
// one-execution instance made ListExecutions report [1 5]).
func TestBadInputForeignEventsAck(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	p := h.p
	other := h.open(cdb.Options{})
	item, ev := lockedTurn(t, p, "own-1")
	cases := map[string]duroxide.Event{
		"other_instance":  hEvent("someone-else", 1, 2, duroxide.ExternalEvent{Name: "go", Data: "1"}),
		"other_execution": hEvent("own-1", 5, 2, duroxide.ExternalEvent{Name: "go", Data: "1"}),
	}
	for name, foreign := range cases {
		t.Run(name, func(t *testing.T) {
			commit := duroxide.OrchestrationCommit{ExecutionID: item.ExecutionID, HistoryDelta: []duroxide.Event{foreign}}
			err := p.AckOrchestrationItem(t.Context(), item.LockToken, commit)
			require.ErrorIs(t, err, duroxide.ErrInvalidInput)
			requireRefusedAck(t, h, p, other, item, commit)
		})
	}
	require.NoError(t, p.AckOrchestrationItem(t.Context(), item.LockToken,
		duroxide.OrchestrationCommit{ExecutionID: item.ExecutionID, HistoryDelta: []duroxide.Event{ev}}), "the lock survives refused acks")
	execs, err := p.Admin().ListExecutions(t.Context(), "own-1")
	require.NoError(t, err)
	require.Equal(t, []uint64{1}, execs)
}
