package cdb_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// faultAt fails the n-th Cosmos call (0-based) after it is armed, either
// before it is sent or — lost response — after it was applied.
type faultAt struct {
	mu       sync.Mutex
	armed    bool
	n, calls int
	after    bool
	log      []cdb.Op
}

var errInjected = errors.New("injected fault")

func (f *faultAt) hooks() *testhooks.Hooks {
	return &testhooks.Hooks{
		Before: func(_ context.Context, c testhooks.Call) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			if !f.armed {
				return nil
			}
			f.log = append(f.log, c.Op)
			if !f.after && f.calls == f.n {
				f.calls++
				return errInjected
			}
			return nil
		},
		After: func(_ context.Context, c testhooks.Call, err error) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			if !f.armed {
				return err
			}
			i := f.calls
			f.calls++
			if f.after && i == f.n && err == nil {
				return errInjected
			}
			return err
		},
	}
}

func (f *faultAt) arm(n int, after bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed, f.n, f.after, f.calls, f.log = true, n, after, 0, nil
}

func (f *faultAt) disarm() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed = false
	return f.calls
}

const (
	bigEvents     = 120
	bigActivities = 110
	bigKeys       = 105
)

func str(s string) *string { return &s }

func started(inst string) duroxide.Event {
	return duroxide.Event{EventID: 1, InstanceID: inst, ExecutionID: 1, DuroxideVersion: "0.1.29",
		Kind: duroxide.OrchestrationStarted{Name: "Big", Version: "1.0.0", Input: "{}"}}
}

// bigTurn is a turn far beyond one batch: 300 events, 250 activities,
// 120 KV keys and two timers for itself.
func bigTurn(inst string) duroxide.OrchestrationCommit {
	c := duroxide.OrchestrationCommit{ExecutionID: 1}
	for i := 0; i < bigEvents; i++ {
		c.HistoryDelta = append(c.HistoryDelta, duroxide.Event{EventID: uint64(2 + i), InstanceID: inst, ExecutionID: 1, DuroxideVersion: "0.1.29",
			Kind: duroxide.ActivityScheduled{Name: "Work", Input: fmt.Sprintf("%04d", i)}})
	}
	for i := 0; i < bigKeys; i++ {
		c.HistoryDelta = append(c.HistoryDelta, duroxide.Event{EventID: uint64(2 + bigEvents + i), InstanceID: inst, ExecutionID: 1, DuroxideVersion: "0.1.29",
			Kind: duroxide.KeyValueSet{Key: fmt.Sprintf("k/%03d", i), Value: "v", LastUpdatedAtMs: 1}})
	}
	for i := 0; i < bigActivities; i++ {
		c.WorkerItems = append(c.WorkerItems, duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: uint64(2 + i), Name: "Work", Input: "x"})
	}
	for i := 0; i < 2; i++ {
		c.OrchestratorItems = append(c.OrchestratorItems, duroxide.TimerFiredItem{Instance: inst, ExecutionID: 1, ID: uint64(900 + i), FireAtMs: 1})
	}
	return c
}

func newFaultyProvider(t *testing.T, srv *cosmostest.Server, container string, hooks *testhooks.Hooks) *cdb.Provider {
	t.Helper()
	ctx := testhooks.With(t.Context(), &testhooks.Seam{Cosmos: hooks})
	p, err := cdb.New(ctx, cdb.Config{Endpoint: srv.Endpoint(), Key: srv.Key(), Database: "db", Container: container,
		// The processes share this clock: locks expire exactly when the
		// tests wait for (no skew margin).
		ClientOptions: &azcosmos.ClientOptions{ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}}}, &cdb.Options{MaintenanceInterval: -1, MaxClockSkew: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// prepare creates the instance and leaves a locked item for the big turn.
func prepare(t *testing.T, p *cdb.Provider, inst string) *duroxide.OrchestrationItem {
	ctx := t.Context()
	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: inst, Orchestration: "Big", Input: "{}", Version: str("1.0.0"), ExecutionID: 1}, 0))
	it, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, it)
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{started(inst)}, Metadata: duroxide.ExecutionMetadata{OrchestrationName: str("Big"), OrchestrationVersion: str("1.0.0")}}))
	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "go", Data: "1"}, 0))
	it, err = p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, it)
	return it
}

// checkBigTurn asserts the turn is fully and exactly once visible.
func checkBigTurn(t *testing.T, srv *cosmostest.Server, p *cdb.Provider, db, container, inst string) {
	t.Helper()
	ctx := t.Context()
	hist, err := p.Read(ctx, inst)
	require.NoError(t, err)
	require.Len(t, hist, 1+bigEvents+bigKeys)
	for i, e := range hist {
		require.Equal(t, uint64(i+1), e.EventID)
	}
	kv, err := p.KVValues(ctx, inst)
	require.NoError(t, err)
	require.Len(t, kv, bigKeys)
	docs, err := srv.Documents(db, container)
	require.NoError(t, err)
	counts := map[string]int{}
	for _, d := range docs {
		if d["instanceId"] != inst {
			continue
		}
		require.Nil(t, d["staged"], "no staged document may remain: %v", d["id"])
		require.NotEqual(t, "turn_journal", d["type"], "no journal may remain")
		counts[d["type"].(string)]++
		if d["type"] == "instance" {
			require.Nil(t, d["pendingTurn"])
		}
	}
	require.Equal(t, bigActivities, counts["worker_queue"], "every activity exactly once")
	require.Equal(t, 2, counts["orch_queue"], "the two timers, and the consumed message gone")
	// Every activity is fetchable exactly once.
	seen := map[uint64]bool{}
	for {
		w, err := p.FetchWorkItem(ctx, time.Minute, 0, nil, duroxide.DefaultOnly())
		require.NoError(t, err)
		if w == nil {
			break
		}
		a := w.Item.(duroxide.ActivityExecuteItem)
		require.False(t, seen[a.ID])
		seen[a.ID] = true
	}
	require.Len(t, seen, bigActivities)
}

// TestLargeTurnSurvivesAFaultAtEveryCall commits a turn of ~340 documents
// (many batches) while failing each of its Cosmos calls in turn, once
// before the call is sent and once after it was applied (a lost
// response). Whatever fails, retrying the ack — or, after the commit,
// the reconciler — leaves the turn complete exactly once, and nothing of
// it is visible before its commit.
func TestLargeTurnSurvivesAFaultAtEveryCall(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, nil)
	ctx := t.Context()

	// A clean run counts the calls of the ack.
	f := &faultAt{}
	p := newFaultyProvider(t, srv, "clean", f.hooks())
	it := prepare(t, p, "big")
	f.arm(-1, false)
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, bigTurn("big")))
	calls := f.disarm()
	require.Greater(t, calls, 10, "the turn must span many batches")
	checkBigTurn(t, srv, p, "db", "clean", "big")

	for _, after := range []bool{false, true} {
		for n := 0; n < calls; n++ {
			name := fmt.Sprintf("before/call-%02d", n)
			if after {
				name = fmt.Sprintf("after/call-%02d", n)
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel() // its own container and fault hooks
				container := fmt.Sprintf("c%v%d", after, n)
				f := &faultAt{}
				p := newFaultyProvider(t, srv, container, f.hooks())
				it := prepare(t, p, "big")
				f.arm(n, after)
				err := p.AckOrchestrationItem(ctx, it.LockToken, bigTurn("big"))
				f.disarm()
				if err != nil {
					require.True(t, duroxide.IsRetryable(err), "an infrastructure fault is retryable: %v", err)
					// Nothing of an uncommitted turn is visible.
					hist, rerr := p.Read(ctx, "big")
					require.NoError(t, rerr)
					if len(hist) != 1 {
						require.Len(t, hist, 1+bigEvents+bigKeys, "history is all or nothing")
					}
					require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, bigTurn("big")), "the retried ack completes the turn")
				}
				_, err = p.RunMaintenance(ctx)
				require.NoError(t, err)
				checkBigTurn(t, srv, p, "db", container, "big")
			})
		}
	}
}

// TestLargeTurnCrashBeforeCommitIsRetriedByTheNextLockHolder: the acking
// process dies half-way through staging; its lock expires; the next fetch
// cleans up the leftovers and the re-run turn commits exactly once.
func TestLargeTurnCrashBeforeCommitIsRetriedByTheNextLockHolder(t *testing.T) {
	srv := cosmostest.New(t, nil)
	ctx := t.Context()
	var dead atomic.Bool
	var batches atomic.Int32
	hooks := &testhooks.Hooks{Before: func(_ context.Context, c testhooks.Call) error {
		if dead.Load() {
			return errInjected
		}
		if c.Op == cdb.OpBatch && c.Operations > 50 && batches.Add(1) == 3 {
			dead.Store(true) // the process dies here
			return errInjected
		}
		return nil
	}}
	p1 := newFaultyProvider(t, srv, "crash", hooks)
	require.NoError(t, p1.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: "big", Orchestration: "Big", Input: "{}", Version: str("1.0.0"), ExecutionID: 1}, 0))
	it, err := p1.FetchOrchestrationItem(ctx, 300*time.Millisecond, 0, nil)
	require.NoError(t, err)
	commit := bigTurn("big")
	commit.HistoryDelta = append([]duroxide.Event{started("big")}, commit.HistoryDelta...)
	require.Error(t, p1.AckOrchestrationItem(ctx, it.LockToken, commit))

	p2 := newFaultyProvider(t, srv, "crash", nil)
	h, err := p2.Read(ctx, "big")
	require.NoError(t, err)
	require.Empty(t, h, "nothing of the failed turn is visible")
	w, err := p2.FetchWorkItem(ctx, time.Minute, 0, nil, duroxide.AnyTag())
	require.NoError(t, err)
	require.Nil(t, w, "no staged activity is visible")

	var it2 *duroxide.OrchestrationItem
	require.Eventually(t, func() bool {
		it2, err = p2.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
		return err == nil && it2 != nil
	}, 5*time.Second, 50*time.Millisecond)
	require.Empty(t, it2.History)
	require.NoError(t, p2.AckOrchestrationItem(ctx, it2.LockToken, commit))
	checkBigTurn(t, srv, p2, "db", "crash", "big")
}

// TestListExecutionsHidesAnUncommittedExecution: a large turn that
// starts execution 2 (a continue-as-new or a rewind) stages its history
// before its commit; until the commit, and if the acking process dies
// before it, the instance has one execution.
func TestListExecutionsHidesAnUncommittedExecution(t *testing.T) {
	srv := cosmostest.New(t, nil)
	ctx := t.Context()
	var dead atomic.Bool
	var batches atomic.Int32
	hooks := &testhooks.Hooks{Before: func(_ context.Context, c testhooks.Call) error {
		if dead.Load() {
			return errInjected
		}
		if c.Op == cdb.OpBatch && c.Operations > 50 && batches.Add(1) == 3 {
			dead.Store(true) // the process dies half-way through staging
			return errInjected
		}
		return nil
	}}
	p1 := newFaultyProvider(t, srv, "uncommitted", hooks)
	require.NoError(t, p1.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: "big", Orchestration: "Big", Input: "{}", Version: str("1.0.0"), ExecutionID: 1}, 0))
	it, err := p1.FetchOrchestrationItem(ctx, 300*time.Millisecond, 0, nil)
	require.NoError(t, err)
	require.NoError(t, p1.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{started("big")}, Metadata: duroxide.ExecutionMetadata{Status: str(duroxide.StatusRunning)}}))
	require.NoError(t, p1.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: "big", Name: "e", Data: "{}"}, 0))
	it, err = p1.FetchOrchestrationItem(ctx, 300*time.Millisecond, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, it)
	commit := bigTurn("big")
	commit.ExecutionID = 2
	for i := range commit.HistoryDelta {
		commit.HistoryDelta[i].ExecutionID = 2
	}
	s := started("big")
	s.ExecutionID = 2
	commit.HistoryDelta = append([]duroxide.Event{s}, commit.HistoryDelta...)
	for i, w := range commit.WorkerItems {
		a := w.(duroxide.ActivityExecuteItem)
		a.ExecutionID = 2
		commit.WorkerItems[i] = a
	}
	commit.OrchestratorItems = nil
	require.Error(t, p1.AckOrchestrationItem(ctx, it.LockToken, commit))

	p2 := newFaultyProvider(t, srv, "uncommitted", nil)
	execs, err := p2.ListExecutions(ctx, "big")
	require.NoError(t, err)
	require.Equal(t, []uint64{1}, execs, "the staged execution is not committed")
	h, err := p2.Read(ctx, "big")
	require.NoError(t, err)
	require.Len(t, h, 1)
	require.Equal(t, uint64(1), h[0].ExecutionID)
}

// TestALargeTurnRetriedWithAnotherCommitWritesThatCommit: a large turn's
// ack fails after some of its staging batches applied, and the runtime
// then acks the same lock with a different commit (it fails the
// orchestration instead, or re-plans). What the first attempt staged is
// not the new commit's: the committed history must be the second
// commit's, never documents the first attempt staged under the same ids.
// The kitchen sink saw a resumed instance's wake turn fail as "duplicate
// history event" and stay Running with its messages consumed.
func TestALargeTurnRetriedWithAnotherCommitWritesThatCommit(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, nil)
	ctx := t.Context()
	var bigBatches atomic.Int32
	fail := atomic.Bool{}
	hooks := &testhooks.Hooks{Before: func(_ context.Context, c testhooks.Call) error {
		if fail.Load() && c.Op == cdb.OpBatch && c.Operations > 50 && bigBatches.Add(1) == 3 {
			return errInjected // two staging batches applied, the third fails
		}
		return nil
	}}
	p := newFaultyProvider(t, srv, "replanned", hooks)
	it := prepare(t, p, "big")
	fail.Store(true)
	require.Error(t, p.AckOrchestrationItem(ctx, it.LockToken, bigTurn("big")))
	fail.Store(false)

	second := bigTurn("big")
	for i := range second.HistoryDelta {
		if s, ok := second.HistoryDelta[i].Kind.(duroxide.ActivityScheduled); ok {
			s.Input = "second:" + s.Input
			second.HistoryDelta[i].Kind = s
		}
	}
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, second), "the second commit is written")
	checkBigTurn(t, srv, p, "db", "replanned", "big")
	hist, err := p.Read(ctx, "big")
	require.NoError(t, err)
	for _, e := range hist[1 : 1+bigEvents] {
		require.Contains(t, e.Kind.(duroxide.ActivityScheduled).Input, "second:", "event %d is the second commit's", e.EventID)
	}
}
