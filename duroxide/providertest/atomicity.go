package providertest

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// atomicity.rs: an ack commits all of its parts or none of them.
var atomicityTests = []Test{
	{Name: "test_atomicity_failure_rollback", Func: testAtomicityFailureRollback},
	{Name: "test_multi_operation_atomic_ack", Func: testMultiOperationAtomicAck},
	{Name: "test_lock_released_only_on_successful_ack", Func: testLockReleasedOnlyOnSuccessfulAck},
	{Name: "test_concurrent_ack_prevention", Func: testConcurrentAckPrevention},
}

func testAtomicityFailureRollback(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "instance-A")
	require.Len(t, mustRead(t, p, "instance-A"), 1)

	enqueueOrch(t, p, startItem("instance-A"))
	item := mustFetchInstance(t, p, testLock, "instance-A")
	// A valid new event, then a duplicate of event 1: nothing may stick.
	err := p.AckOrchestrationItem(t.Context(), item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1,
		HistoryDelta: []duroxide.Event{
			activityScheduledEvent("instance-A", 1, 2, "Act", "in"),
			startedEvent("instance-A", 1),
		},
		WorkerItems:       []duroxide.WorkItem{activityExecute("instance-A", 1, 2, "Act", "in")},
		OrchestratorItems: []duroxide.WorkItem{externalRaised("instance-A", "e", "d")},
		Metadata:          statusMetadata(duroxide.StatusCompleted, "done"),
	})
	require.ErrorIs(t, err, duroxide.ErrDuplicateEvent, "an ack with a duplicate event id must fail")

	require.Len(t, mustRead(t, p, "instance-A"), 1, "a failed ack must not append history")
	requireNoWork(t, p, "a failed ack must not enqueue worker items")
	requireNoFetch(t, p, "a failed ack must keep the instance lock")
}

func testMultiOperationAtomicAck(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "instance-A"
	enqueueOrch(t, p, startItem(inst))
	item := mustFetchInstance(t, p, testLock, inst)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1,
		HistoryDelta: []duroxide.Event{
			startedEvent(inst, 1),
			activityScheduledEvent(inst, 1, 2, "Activity1", "in1"),
			activityScheduledEvent(inst, 1, 3, "Activity2", "in2"),
			activityScheduledEvent(inst, 1, 4, "Activity3", "in3"),
			event(inst, 1, 5, duroxide.TimerCreated{FireAtMs: 1234567890}),
		},
		WorkerItems: []duroxide.WorkItem{
			activityExecute(inst, 1, 2, "Activity1", "in1"),
			activityExecute(inst, 1, 3, "Activity2", "in2"),
			activityExecute(inst, 1, 4, "Activity3", "in3"),
		},
		OrchestratorItems: []duroxide.WorkItem{
			timerFired(inst, 1, 5, 1234567890),
			externalRaised(inst, "TestEvent", "data"),
		},
		Metadata: runningMetadata(),
	})

	require.Len(t, mustRead(t, p, inst), 5)
	var ids []uint64
	for range 3 {
		ids = append(ids, activityOf(t, mustFetchWork(t, p, testLock)).ID)
	}
	require.ElementsMatch(t, []uint64{2, 3, 4}, ids)
	requireNoWork(t, p, "exactly 3 worker items were committed")

	next := mustFetchInstance(t, p, testLock, inst)
	require.Len(t, next.Messages, 2)
	require.IsType(t, duroxide.TimerFiredItem{}, next.Messages[0])
	require.IsType(t, duroxide.ExternalRaisedItem{}, next.Messages[1])
}

func testLockReleasedOnlyOnSuccessfulAck(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	lock := f.LockTimeout()
	enqueueOrch(t, p, startItem("instance-A"))
	mustFetchInstance(t, p, lock, "instance-A")
	requireNoFetch(t, p, "the instance is locked")

	err := p.AckOrchestrationItem(t.Context(), "invalid-lock-token", duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{startedEvent("instance-A", 1)},
		Metadata:     runningMetadata(),
	})
	require.ErrorIs(t, err, duroxide.ErrLockLost, "an ack with a bogus token must fail")
	requireNoFetch(t, p, "a failed ack must not release the lock")

	sleep(t, lock+100*time.Millisecond)
	mustFetchInstance(t, p, testLock, "instance-A")
}

func testConcurrentAckPrevention(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueOrch(t, p, startItem("instance-A"))
	item := mustFetchInstance(t, p, testLock, "instance-A")

	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			<-start
			// Distinct event ids, so only the lock can reject the loser.
			started := startedEvent("instance-A", 1)
			started.EventID = uint64(1 + i)
			errs[i] = p.AckOrchestrationItem(t.Context(), item.LockToken, duroxide.OrchestrationCommit{
				ExecutionID:  1,
				HistoryDelta: []duroxide.Event{started},
				Metadata:     runningMetadata(),
			})
		})
	}
	close(start)
	wg.Wait()
	oks := 0
	for _, err := range errs {
		if err == nil {
			oks++
		}
	}
	require.Equal(t, 1, oks, "exactly one of two concurrent acks may succeed (errors: %v)", errs)
	require.Len(t, mustRead(t, p, "instance-A"), 1)
}
