package memprovider_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

// enqueueLog records the queues a provider notified.
type enqueueLog struct {
	mu sync.Mutex
	qs []duroxide.Queue
}

func (l *enqueueLog) note(q duroxide.Queue, _ string) {
	l.mu.Lock()
	l.qs = append(l.qs, q)
	l.mu.Unlock()
}

func (l *enqueueLog) take() []duroxide.Queue {
	l.mu.Lock()
	defer l.mu.Unlock()
	qs := l.qs
	l.qs = nil
	return qs
}

// Every enqueue is notified with its queue — a client's, and each ack's
// — until the subscription is cancelled.
func TestEnqueuesAreNotifiedUntilCancelled(t *testing.T) {
	ctx := t.Context()
	p := memprovider.New()
	var log enqueueLog
	cancel := p.NotifyEnqueues(log.note)

	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: "n-1", Orchestration: "O", Input: "x"}, 0))
	require.Equal(t, []duroxide.Queue{duroxide.OrchestratorQueue}, log.take())

	item, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	act := duroxide.ActivityExecuteItem{Instance: "n-1", ExecutionID: 1, ID: 1, Name: "A", Input: "x"}
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{{EventID: 1, InstanceID: "n-1", ExecutionID: 1, Kind: duroxide.OrchestrationStarted{Name: "O", Version: "1.0.0"}}}, WorkerItems: []duroxide.WorkItem{act},
		Metadata: duroxide.ExecutionMetadata{Status: ptr(duroxide.StatusRunning), OrchestrationName: ptr("O"), OrchestrationVersion: ptr("1.0.0")}}))
	require.Equal(t, []duroxide.Queue{duroxide.WorkerQueue}, log.take(), "the ack enqueued an activity")

	w, err := p.FetchWorkItem(ctx, time.Minute, 0, nil, duroxide.DefaultOnly())
	require.NoError(t, err)
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: "n-1", ExecutionID: 1, ID: 1, Result: "r"}))
	require.Equal(t, []duroxide.Queue{duroxide.OrchestratorQueue}, log.take(), "the completion went to the orchestrator queue")

	cancel()
	cancel() // a second cancel is harmless
	require.NoError(t, p.EnqueueForWorker(ctx, act))
	require.Empty(t, log.take(), "no notification after cancel")
}

// Work visible only later is not notified: a delayed enqueue, or a commit
// whose only orchestrator item is a timer that has not fired.
func TestLaterWorkIsNotNotified(t *testing.T) {
	ctx := t.Context()
	p := memprovider.New()
	var log enqueueLog
	defer p.NotifyEnqueues(log.note)()

	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: "n-2", Orchestration: "O", Input: "x"}, 0))
	log.take()
	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.QueueMessageItem{Instance: "n-2", Name: "q", Data: "d"}, time.Hour))
	require.Empty(t, log.take(), "a delayed enqueue")

	item, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	fireAt := uint64(time.Now().Add(time.Hour).UnixMilli())
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta:      []duroxide.Event{{EventID: 1, InstanceID: "n-2", ExecutionID: 1, Kind: duroxide.OrchestrationStarted{Name: "O", Version: "1.0.0"}}},
		OrchestratorItems: []duroxide.WorkItem{duroxide.TimerFiredItem{Instance: "n-2", ExecutionID: 1, ID: 2, FireAtMs: fireAt}},
		Metadata:          duroxide.ExecutionMetadata{Status: ptr(duroxide.StatusRunning), OrchestrationName: ptr("O"), OrchestrationVersion: ptr("1.0.0")}}))
	require.Empty(t, log.take(), "a timer that fires in an hour")
}

// The commit that ends an execution notifies that instance's end
// subscribers, and only them; a running turn's commit does not, nor one
// after cancel.
func TestInstanceEndsAreNotifiedToTheInstancesSubscribers(t *testing.T) {
	ctx := t.Context()
	p := memprovider.New()
	var mine, other, cancelled atomic.Int32
	defer p.NotifyInstanceEnd("e-1", func() { mine.Add(1) })()
	defer p.NotifyInstanceEnd("e-2", func() { other.Add(1) })()
	p.NotifyInstanceEnd("e-1", func() { cancelled.Add(1) })()

	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: "e-1", Orchestration: "O", Input: "x"}, 0))
	item, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	started := duroxide.Event{EventID: 1, InstanceID: "e-1", ExecutionID: 1, Kind: duroxide.OrchestrationStarted{Name: "O", Version: "1.0.0"}}
	act := duroxide.ActivityExecuteItem{Instance: "e-1", ExecutionID: 1, ID: 2, Name: "A", Input: "x"}
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{started}, WorkerItems: []duroxide.WorkItem{act},
		Metadata: duroxide.ExecutionMetadata{Status: ptr(duroxide.StatusRunning), OrchestrationName: ptr("O"), OrchestrationVersion: ptr("1.0.0")}}))
	require.Zero(t, mine.Load(), "a turn that leaves the execution running")

	w, err := p.FetchWorkItem(ctx, time.Minute, 0, nil, duroxide.DefaultOnly())
	require.NoError(t, err)
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: "e-1", ExecutionID: 1, ID: 2, Result: "r"}))
	item, err = p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{{EventID: 3, InstanceID: "e-1", ExecutionID: 1, Kind: duroxide.OrchestrationCompleted{Output: "r"}}},
		Metadata:     duroxide.ExecutionMetadata{Status: ptr(duroxide.StatusCompleted), Output: ptr("r")}}))
	require.Equal(t, int32(1), mine.Load(), "the completing commit")
	require.Zero(t, other.Load(), "another instance's subscriber")
	require.Zero(t, cancelled.Load(), "a cancelled subscriber")
}
