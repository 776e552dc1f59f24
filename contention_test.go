package cdb_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
)

// TestContentionTwoProcesses runs 20 orchestrations, each a chain of three
// activities, with two providers on one container (two processes) and four
// dispatcher goroutines each, all fetching both queues. It checks that no
// instance and no work item is ever held by two dispatchers at once, that
// every turn and every activity is processed exactly once (every ack
// succeeds, each history is exactly the expected sequence), and that
// nothing is left locked or queued at the end. Run it with -race.
func TestContentionTwoProcesses(t *testing.T) {
	const (
		instances  = 20
		activities = 3
		perProcess = 4
	)
	h := newHarness(t, cdb.Options{})
	procs := []*cdb.Provider{h.p, h.open(cdb.Options{})}
	ctx := t.Context()

	var ids []string
	for i := range instances {
		id := fmt.Sprintf("contend-%02d", i)
		ids = append(ids, id)
		require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(id), 0))
	}

	var (
		mu         sync.Mutex
		heldOrch   = map[string]string{} // instance -> dispatcher holding it
		heldWork   = map[string]string{} // instance/activity -> dispatcher
		turns      = map[string]int{}    // instance/history length -> times processed
		ran        = map[string]int{}    // instance/activity -> times executed
		violations []string
		completed  atomic.Int32
		perProc    [2]atomic.Int32 // units of work each process did
	)
	hold := func(m map[string]string, key, who string) {
		mu.Lock()
		defer mu.Unlock()
		if other, ok := m[key]; ok {
			violations = append(violations, fmt.Sprintf("%s locked by %s while %s holds it", key, who, other))
		}
		m[key] = who
	}
	release := func(m map[string]string, key string) {
		mu.Lock()
		defer mu.Unlock()
		delete(m, key)
	}
	count := func(m map[string]int, key string) {
		mu.Lock()
		defer mu.Unlock()
		m[key]++
	}

	// A double lock shows up deterministically: two dispatchers holding one
	// instance both see the same history (the same turn key), two holding
	// one work item both run it. The held maps also catch overlaps in time.

	// turn builds the commit for one orchestration turn: start the chain,
	// record a completion and schedule the next activity, or complete.
	turn := func(item *duroxide.OrchestrationItem) (duroxide.OrchestrationCommit, bool, error) {
		inst := item.Instance
		c := duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: hRunning("HOrch")}
		next := uint64(len(item.History)) + 1
		add := func(e duroxide.Event) { c.HistoryDelta = append(c.HistoryDelta, e); next++ }
		done := 0
		for _, e := range item.History {
			if _, ok := e.Kind.(duroxide.ActivityCompleted); ok {
				done++
			}
		}
		if len(item.Messages) != 1 {
			return c, false, fmt.Errorf("%s: turn with %d messages", inst, len(item.Messages))
		}
		switch m := item.Messages[0].(type) {
		case duroxide.StartOrchestrationItem:
			if len(item.History) != 0 {
				return c, false, fmt.Errorf("%s: start delivered again", inst)
			}
			add(hStarted(inst, "HOrch"))
		case duroxide.ActivityCompletedItem:
			e := hEvent(inst, 1, next, duroxide.ActivityCompleted{Result: m.Result})
			e.SourceEventID = hptr(m.ID)
			add(e)
			done++
		default:
			return c, false, fmt.Errorf("%s: unexpected %T", inst, m)
		}
		if done == activities {
			add(hEvent(inst, 1, next, duroxide.OrchestrationCompleted{Output: "ok"}))
			c.Metadata = hStatus("HOrch", duroxide.StatusCompleted, "ok")
			return c, true, nil
		}
		id := next
		add(hEvent(inst, 1, id, duroxide.ActivityScheduled{Name: "Step", Input: fmt.Sprint(done)}))
		c.WorkerItems = []duroxide.WorkItem{duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: id, Name: "Step", Input: fmt.Sprint(done)}}
		return c, false, nil
	}

	errs := make(chan error, 2*perProcess)
	var wg sync.WaitGroup
	deadline := time.Now().Add(2 * time.Minute)
	for pi, p := range procs {
		for g := range perProcess {
			who := fmt.Sprintf("p%d/g%d", pi, g)
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- func() error {
					for completed.Load() < instances {
						if time.Now().After(deadline) {
							return fmt.Errorf("%s: timed out with %d of %d instances completed", who, completed.Load(), instances)
						}
						idle := true
						item, err := p.FetchOrchestrationItem(ctx, hLock, 0, nil)
						if err != nil {
							return fmt.Errorf("%s: fetch orchestration: %w", who, err)
						}
						if item != nil {
							idle = false
							perProc[pi].Add(1)
							hold(heldOrch, item.Instance, who)
							count(turns, fmt.Sprintf("%s/%d", item.Instance, len(item.History)))
							commit, last, err := turn(item)
							if err != nil {
								return err
							}
							release(heldOrch, item.Instance)
							if err := p.AckOrchestrationItem(ctx, item.LockToken, commit); err != nil {
								return fmt.Errorf("%s: ack %s: %w", who, item.Instance, err)
							}
							if last {
								completed.Add(1)
							}
						}
						w, err := p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.DefaultOnly())
						if err != nil {
							return fmt.Errorf("%s: fetch work: %w", who, err)
						}
						if w != nil {
							idle = false
							perProc[pi].Add(1)
							a, ok := w.Item.(duroxide.ActivityExecuteItem)
							if !ok {
								return fmt.Errorf("%s: unexpected work item %T", who, w.Item)
							}
							key := fmt.Sprintf("%s/%d", a.Instance, a.ID)
							hold(heldWork, key, who)
							count(ran, key)
							release(heldWork, key)
							done := duroxide.ActivityCompletedItem{Instance: a.Instance, ExecutionID: a.ExecutionID, ID: a.ID, Result: "r" + a.Input}
							if err := p.AckWorkItem(ctx, w.LockToken, done); err != nil {
								return fmt.Errorf("%s: ack work %s: %w", who, key, err)
							}
						}
						if idle {
							time.Sleep(time.Millisecond) // nothing visible: poll again
						}
					}
					return nil
				}()
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Empty(t, violations, "an instance or work item was held by two dispatchers at once")
	t.Logf("turns and activities per process: %d, %d; work item lock races lost: %d",
		perProc[0].Load(), perProc[1].Load(),
		procs[0].RequestStats()[cdb.OpPatch].Failures+procs[1].RequestStats()[cdb.OpPatch].Failures)
	require.Equal(t, int32(instances*(2*activities+1)), perProc[0].Load()+perProc[1].Load())
	require.Positive(t, perProc[0].Load(), "process 0 did no work: no contention was tested")
	require.Positive(t, perProc[1].Load(), "process 1 did no work: no contention was tested")

	require.Len(t, turns, instances*(activities+1))
	for k, n := range turns {
		require.Equal(t, 1, n, "turn %s processed %d times", k, n)
	}
	require.Len(t, ran, instances*activities)
	for k, n := range ran {
		require.Equal(t, 1, n, "activity %s executed %d times", k, n)
	}
	for _, id := range ids {
		// h.p did not commit these turns: without their session tokens its
		// reads are eventually consistent (a lagging replica may still miss
		// the last turn for a moment).
		var hist []duroxide.Event
		eventually(t, time.Minute, func() bool {
			var err error
			hist, err = h.p.Read(ctx, id)
			require.NoError(t, err)
			return len(hist) == 2+2*activities
		}, "history of %s never reached %d events", id, 2+2*activities)
		for i, e := range hist {
			require.Equal(t, uint64(i+1), e.EventID, "history of %s", id)
		}
		_, ok := hist[len(hist)-1].Kind.(duroxide.OrchestrationCompleted)
		require.True(t, ok, "%s did not complete", id)
		// The instance document is read separately and may come from
		// another replica, one that has not yet applied the last turn.
		eventually(t, time.Minute, func() bool {
			info, err := h.p.InstanceInfo(ctx, id)
			require.NoError(t, err)
			return info.Status == duroxide.StatusCompleted
		}, "status of %s never became Completed", id)
	}
	require.Empty(t, h.docsWhere("orch_queue", ""), "orchestrator messages left")
	require.Empty(t, h.docsWhere("worker_queue", ""), "work items left")
	for _, d := range h.docsWhere("instance", "") {
		require.Nil(t, d["lockToken"], "instance %v still locked", d["instanceId"])
	}
}
