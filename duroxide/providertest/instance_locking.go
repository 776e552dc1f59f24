package providertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// instance_locking.rs: one instance lock at a time, covering exactly the
// messages present at fetch time.
var instanceLockingTests = []Test{
	{Name: "test_exclusive_instance_lock", Func: testExclusiveInstanceLock},
	{Name: "test_lock_token_uniqueness", Func: testLockTokenUniqueness},
	{Name: "test_invalid_lock_token_rejection", Func: testInvalidLockTokenRejection},
	{Name: "test_concurrent_instance_fetching", Func: testConcurrentInstanceFetching},
	{Name: "test_completions_arriving_during_lock_blocked", Func: testCompletionsArrivingDuringLockBlocked},
	{Name: "test_cross_instance_lock_isolation", Func: testCrossInstanceLockIsolation},
	{Name: "test_message_tagging_during_lock", Func: testMessageTaggingDuringLock},
	{Name: "test_ack_only_affects_locked_messages", Func: testAckOnlyAffectsLockedMessages},
	{Name: "test_multi_threaded_lock_contention", Func: testMultiThreadedLockContention},
	{Name: "test_multi_threaded_no_duplicate_processing", Func: testMultiThreadedNoDuplicateProcessing},
	{Name: "test_multi_threaded_lock_expiration_recovery", Func: testMultiThreadedLockExpirationRecovery},
}

// completionIDs returns the ids of the ActivityCompleted messages in msgs,
// failing on any other kind.
func completionIDs(t *testing.T, msgs []duroxide.WorkItem) []uint64 {
	t.Helper()
	var ids []uint64
	for _, m := range msgs {
		c, ok := m.(duroxide.ActivityCompletedItem)
		require.Truef(t, ok, "expected ActivityCompleted, got %T", m)
		ids = append(ids, c.ID)
	}
	return ids
}

// fetchResult is one concurrent fetch's outcome.
type fetchResult struct {
	item *duroxide.OrchestrationItem
	err  error
}

func testExclusiveInstanceLock(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	lock := f.LockTimeout()
	enqueueOrch(t, p, startItem("instance-A"))
	first := mustFetchInstance(t, p, lock, "instance-A")
	requireNoFetch(t, p, "the instance is locked")
	sleep(t, lock+100*time.Millisecond)
	second := mustFetchInstance(t, p, testLock, "instance-A")
	require.NotEqual(t, first.LockToken, second.LockToken, "a new lock needs a new token")
}

func testLockTokenUniqueness(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	for i := range 5 {
		enqueueOrch(t, p, startItem(fmt.Sprintf("instance-%d", i)))
	}
	tokens := map[string]bool{}
	instances := map[string]bool{}
	for range 5 {
		item := mustFetch(t, p, testLock)
		tokens[item.LockToken] = true
		instances[item.Instance] = true
	}
	require.Len(t, tokens, 5, "every lock has its own token")
	require.Len(t, instances, 5)
}

func testInvalidLockTokenRejection(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueOrch(t, p, startItem("instance-A"))
	item := mustFetchInstance(t, p, testLock, "instance-A")

	require.ErrorIs(t, p.AckOrchestrationItem(t.Context(), "invalid-token", duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{startedEvent("instance-A", 1)},
		Metadata:     runningMetadata(),
	}), duroxide.ErrLockLost, "ack with an invalid token")
	require.ErrorIs(t, p.AbandonOrchestrationItem(t.Context(), "invalid-token", 0, false), duroxide.ErrLockLost, "abandon with an invalid token")
	requireNoFetch(t, p, "the real lock is still held")

	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{startedEvent("instance-A", 1)},
		Metadata:     runningMetadata(),
	})
}

func testConcurrentInstanceFetching(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	const n = 10
	for i := range n {
		enqueueOrch(t, p, startItem(fmt.Sprintf("instance-%d", i)))
	}
	results := make([]fetchResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 30 * time.Millisecond)
			item, err := p.FetchOrchestrationItem(ctx, testLock, 0, nil)
			results[i] = fetchResult{item, err}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for i, r := range results {
		require.NoError(t, r.err, "fetcher %d", i)
		require.NotNil(t, r.item, "fetcher %d got nothing", i)
		seen[r.item.Instance]++
	}
	require.Len(t, seen, n, "every instance is fetched exactly once: %v", seen)
}

func testCompletionsArrivingDuringLockBlocked(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	lock := f.LockTimeout()
	enqueueOrch(t, p, startItem("instance-A"))
	mustFetchInstance(t, p, lock, "instance-A")
	for id := uint64(1); id <= 3; id++ {
		enqueueOrch(t, p, activityCompleted("instance-A", 1, id, fmt.Sprintf("result-%d", id)))
	}
	requireNoFetch(t, p, "completions for a locked instance wait for the lock")

	sleep(t, lock+100*time.Millisecond)
	item := mustFetchInstance(t, p, testLock, "instance-A")
	require.Len(t, item.Messages, 4)
	require.IsType(t, duroxide.StartOrchestrationItem{}, item.Messages[0])
	require.Equal(t, []uint64{1, 2, 3}, completionIDs(t, item.Messages[1:]))
}

func testCrossInstanceLockIsolation(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueOrch(t, p, startItem("instance-A"))
	enqueueOrch(t, p, startItem("instance-B"))
	mustFetchInstance(t, p, testLock, "instance-A")

	b := mustFetchInstance(t, p, testLock, "instance-B")
	mustAck(t, p, b.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{startedEvent("instance-B", 1)},
		Metadata:     runningMetadata(),
	})
	enqueueOrch(t, p, activityCompleted("instance-B", 1, 1, "result"))
	b = mustFetchInstance(t, p, testLock, "instance-B")
	require.Equal(t, []uint64{1}, completionIDs(t, b.Messages))
	requireNoFetch(t, p, "instance-A is still locked")
}

func testMessageTaggingDuringLock(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "instance-A")
	enqueueOrch(t, p, activityCompleted("instance-A", 1, 1, "r1"))
	enqueueOrch(t, p, activityCompleted("instance-A", 1, 2, "r2"))
	item := mustFetchInstance(t, p, testLock, "instance-A")
	require.Equal(t, []uint64{1, 2}, completionIDs(t, item.Messages))

	enqueueOrch(t, p, activityCompleted("instance-A", 1, 3, "r3"))
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: runningMetadata()})

	item = mustFetchInstance(t, p, testLock, "instance-A")
	require.Equal(t, []uint64{3}, completionIDs(t, item.Messages), "only the message that arrived during the lock is left")
}

func testAckOnlyAffectsLockedMessages(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "instance-A")
	enqueueOrch(t, p, activityCompleted("instance-A", 1, 1, "r1"))
	item := mustFetchInstance(t, p, testLock, "instance-A")
	require.Equal(t, []uint64{1}, completionIDs(t, item.Messages))

	enqueueOrch(t, p, activityCompleted("instance-A", 1, 2, "r2"))
	enqueueOrch(t, p, activityCompleted("instance-A", 1, 3, "r3"))
	requireNoFetch(t, p, "the instance is locked")
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: runningMetadata()})

	item = mustFetchInstance(t, p, testLock, "instance-A")
	require.Equal(t, []uint64{2, 3}, completionIDs(t, item.Messages))
}

func testMultiThreadedLockContention(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	enqueueOrch(t, p, startItem("instance-A"))
	results := make([]fetchResult, 10)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 5 * time.Millisecond)
			results[i] = fetchRetryingTransient(ctx, p, contentionRetryBudget)
		})
	}
	wg.Wait()
	winners := 0
	for i, r := range results {
		require.NoError(t, r.err, "fetcher %d: only a retryable error may be retried, and only within the budget", i)
		if r.item != nil {
			require.Equal(t, "instance-A", r.item.Instance)
			winners++
		}
	}
	require.Equal(t, 1, winners, "exactly one fetcher may lock the instance")
	requireNoFetch(t, p, "the winner still holds the lock")
}

// contentionRetryBudget is how long a contender of
// test_multi_threaded_lock_contention retries retryable fetch errors
// (duroxide da71f3cb: a store may refuse a contended claim with a
// retryable conflict; that is not a second lock holder). Rust's is 5s.
const contentionRetryBudget = 5 * time.Second

// fetchRetryingTransient fetches once, retrying retryable errors every
// 10ms until budget has passed; a permanent error, or a retryable one
// that outlasts the budget, is returned.
func fetchRetryingTransient(ctx context.Context, p duroxide.Provider, budget time.Duration) fetchResult {
	deadline := time.Now().Add(budget)
	for {
		item, err := p.FetchOrchestrationItem(ctx, testLock, 0, nil)
		if err == nil || !duroxide.IsRetryable(err) || !time.Now().Before(deadline) {
			return fetchResult{item, err}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testMultiThreadedNoDuplicateProcessing(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	const instances, workers = 20, 40
	for i := range instances {
		enqueueOrch(t, p, startItem(fmt.Sprintf("instance-%d", i)))
	}
	results := make([]fetchResult, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			for range 3 { // retry transient errors, as Rust does
				item, err := p.FetchOrchestrationItem(ctx, testLock, 0, nil)
				results[i] = fetchResult{item, err}
				if err == nil {
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	fetched := 0
	for _, r := range results {
		if r.item != nil {
			seen[r.item.Instance]++
			fetched++
		}
	}
	for inst, n := range seen {
		require.Equal(t, 1, n, "instance %s was fetched %d times", inst, n)
	}
	require.LessOrEqual(t, fetched, instances)
	require.Positive(t, fetched)
}

func testMultiThreadedLockExpirationRecovery(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	lock := f.LockTimeout()
	enqueueOrch(t, p, startItem("instance-A"))

	// Every wait is measured from the event it depends on: T1's lock is
	// taken during T1's fetch, so it is live from the moment that fetch
	// returns until at most lock after the fetch began, and certainly
	// expired lock after the fetch returned. On a loaded machine the
	// fetch itself can take long, so a fixed offset from a common start
	// would not do.
	t1Done := make(chan struct{})
	var t1Start, t1End, t2End time.Time
	var wg sync.WaitGroup
	results := make([]fetchResult, 3)
	wg.Go(func() {
		defer close(t1Done)
		t1Start = time.Now()
		item, err := p.FetchOrchestrationItem(ctx, lock, 0, nil)
		t1End = time.Now()
		results[0] = fetchResult{item, err}
	})
	wg.Go(func() {
		<-t1Done
		item, err := p.FetchOrchestrationItem(ctx, lock, 0, nil)
		t2End = time.Now()
		results[1] = fetchResult{item, err}
	})
	wg.Go(func() {
		<-t1Done
		time.Sleep(time.Until(t1End.Add(lock + 100*time.Millisecond)))
		item, err := p.FetchOrchestrationItem(ctx, lock, 0, nil)
		results[2] = fetchResult{item, err}
	})
	wg.Wait()
	for i, r := range results {
		require.NoError(t, r.err, "fetcher %d", i)
	}
	require.NotNil(t, results[0].item, "T1 locks the instance")
	if t2End.Before(t1Start.Add(lock)) {
		require.Nil(t, results[1].item, "T2 runs while T1's lock is live")
	} else {
		t.Logf("T2's fetch ended %v after T1's began, past the lock timeout: nothing to check about it", t2End.Sub(t1Start))
	}
	require.NotNil(t, results[2].item, "T3 runs after T1's lock expired")
	require.Equal(t, "instance-A", results[2].item.Instance)
	require.NotEqual(t, results[0].item.LockToken, results[2].item.LockToken)
}
