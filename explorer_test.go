package cdb_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// TestExplorer runs the interleaving explorer (explorer_helpers_test.go)
// over the provider's race-prone mechanisms: a large turn against a
// second dispatcher after lock expiry, a reader and the reconciler; a
// pending turn against the reconciler, the next dispatcher and KV
// readers; a deletion against a worker acking; a bulk deletion against a
// child running again; a prune against a deletion and re-creation of its
// instance; a pending turn's roll-forward on lagging replicas. By default it explores 25 schedules with at most
// one preemption per scenario and two random ones (seconds);
// CDB_EXPLORE_BUDGET (a duration, e.g.
// 10m) makes it a long run: two preemptions, then random schedules until
// the budget is spent. CDB_EXPLORE_SEED replays random schedules from a
// seed; the default run uses seed 1.
func TestExplorer(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, nil)
	e := &explorer{tb: t, srv: srv}
	bound, limit, randomRuns := 1, 25, 2
	budget := time.Duration(0)
	if s := os.Getenv("CDB_EXPLORE_BUDGET"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("CDB_EXPLORE_BUDGET: %v", err)
		}
		budget, bound, limit, randomRuns = d, 2, 0, 0
	}
	// The default run is reproducible (a fixed seed, so a failure in CI
	// is the same failure on a laptop); a long run draws a new seed each
	// time to cover new ground, and prints it.
	seed := int64(1)
	if budget > 0 {
		seed = time.Now().UnixNano()
	}
	if s := os.Getenv("CDB_EXPLORE_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	start := time.Now()
	scenarios := explorerScenarios()
	for i, sc := range scenarios {
		before := e.schedules
		// A long run gives the systematic phase half its budget, shared
		// equally by the scenarios.
		deadline := start.Add(time.Hour)
		if budget > 0 {
			deadline = start.Add(budget / 2 * time.Duration(i+1) / time.Duration(len(scenarios)))
		}
		exhausted := e.systematic(sc, bound, limit, deadline)
		t.Logf("%s: %d schedules with at most %d preemption(s) (space exhausted: %v)", sc.name, e.schedules-before, bound, exhausted)
		if t.Failed() {
			return
		}
	}
	if budget > 0 {
		deadline := start.Add(budget)
		for i := 0; time.Now().Before(deadline); i++ {
			sc := scenarios[i%len(scenarios)]
			e.random(sc, seed+int64(i)*1000, 50, deadline)
			if t.Failed() {
				return
			}
		}
	} else {
		for _, sc := range scenarios {
			e.random(sc, seed, randomRuns, time.Now().Add(time.Minute))
		}
	}
	t.Logf("explored %d schedules in %v (random seed %d)", e.schedules, time.Since(start).Round(time.Millisecond), seed)
}

func explorerScenarios() []scenario {
	return []scenario{largeTurnRace(), pendingTurnRace(), completedTurnDeletionRace(), deletionRace(), bulkDeletionRace(), sessionRace(),
		pruneRecreateRace(), laggingPendingTurnRace()}
}

// An explorer-sized large turn: past one batch, few batches.
const (
	xEvents = 130
	xKeys   = 20
)

func xTurn(inst string) duroxide.OrchestrationCommit {
	c := duroxide.OrchestrationCommit{ExecutionID: 1}
	for i := 0; i < xEvents; i++ {
		c.HistoryDelta = append(c.HistoryDelta, duroxide.Event{EventID: uint64(2 + i), InstanceID: inst, ExecutionID: 1, DuroxideVersion: "0.1.29",
			Kind: duroxide.ActivityScheduled{Name: "Work", Input: fmt.Sprintf("%04d", i)}})
	}
	for i := 0; i < xKeys; i++ {
		c.HistoryDelta = append(c.HistoryDelta, duroxide.Event{EventID: uint64(2 + xEvents + i), InstanceID: inst, ExecutionID: 1, DuroxideVersion: "0.1.29",
			Kind: duroxide.KeyValueSet{Key: fmt.Sprintf("k/%03d", i), Value: "v", LastUpdatedAtMs: 1}})
	}
	return c
}

const xWhole = 1 + xEvents + xKeys

// xPrepare starts inst (one committed turn) and enqueues an event.
func xPrepare(w *world, inst string) {
	ctx := w.tb.Context()
	p := w.admin
	wmust(w, p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: inst, Orchestration: "Big", Input: "{}", Version: str("1.0.0"), ExecutionID: 1}, 0))
	it, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	wmust(w, err)
	wmust(w, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{started(inst)}, Metadata: duroxide.ExecutionMetadata{OrchestrationName: str("Big"), OrchestrationVersion: str("1.0.0")}}))
	wmust(w, p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "go", Data: "1"}, 0))
}

func wmust(w *world, err error) {
	if err != nil {
		w.tb.Fatalf("setup: %v", err)
	}
}

// historyViolations checks that inst's committed history is one of the
// allowed lengths and contiguous from 1.
func historyViolations(w *world, inst string, allowed ...int) []string {
	h, err := w.admin.Read(w.tb.Context(), inst)
	if err != nil {
		return []string{fmt.Sprintf("Read: %v", err)}
	}
	var v []string
	ok := false
	for _, n := range allowed {
		ok = ok || len(h) == n
	}
	if !ok {
		v = append(v, fmt.Sprintf("history has %d events, want one of %v", len(h), allowed))
	}
	for i, e := range h {
		if e.EventID != uint64(i+1) {
			v = append(v, fmt.Sprintf("history not contiguous: position %d holds event %d", i, e.EventID))
			break
		}
	}
	return v
}

// wholeRead is a reader actor: Read and the KV view each show a large
// turn whole or not at all.
func wholeRead(inst string, events []int, keys []int) actor {
	return actor{name: "reader", run: func(ctx context.Context, w *world, p *cdb.Provider) error {
		h, err := p.Read(ctx, inst)
		if err == nil && !inInts(len(h), events) {
			w.violate("a reader saw %d events (part of a turn; whole is one of %v)", len(h), events)
		}
		kv, err2 := p.KVValues(ctx, inst)
		if err2 == nil && !inInts(len(kv), keys) {
			w.violate("a reader saw %d KV keys (part of a turn; whole is one of %v)", len(kv), keys)
		}
		if err != nil {
			return err
		}
		return err2
	}}
}

func inInts(n int, set []int) bool {
	for _, s := range set {
		if n == s {
			return true
		}
	}
	return false
}

func reconcilerActor() actor {
	return actor{name: "reconciler", run: func(ctx context.Context, _ *world, p *cdb.Provider) error {
		_, err := p.RunMaintenance(ctx)
		return err
	}}
}

// largeTurnRace: the lock holder acks a large turn; a second dispatcher
// takes the lock once it expired and acks the same turn; the reconciler
// and a reader run alongside. At most one of the two acks commits, the
// committed turn is whole, the consumed message is gone exactly when the
// turn committed, readers never see part of it.
func largeTurnRace() scenario {
	const inst = "big"
	return scenario{
		name: "large-turn",
		setup: func(w *world) {
			xPrepare(w, inst)
			// The lock holder fetched in another process before the
			// schedule; it acks with the token (its lock is rebuilt from
			// the instance document).
			it, err := w.admin.FetchOrchestrationItem(w.tb.Context(), time.Minute, 0, nil)
			wmust(w, err)
			w.vals.Store("token", it.LockToken)
		},
		actors: []actor{
			{name: "holder", run: func(ctx context.Context, w *world, p *cdb.Provider) error {
				return p.AckOrchestrationItem(ctx, w.val("token").(string), xTurn(inst))
			}},
			{name: "second-dispatcher", run: func(ctx context.Context, w *world, p *cdb.Provider) error {
				w.clock.advance(2 * time.Minute) // whatever lock there is has expired
				it, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
				if err != nil {
					return err
				}
				if it == nil {
					return errNothing
				}
				return p.AckOrchestrationItem(ctx, it.LockToken, xTurn(inst))
			}},
			reconcilerActor(),
			wholeRead(inst, []int{1, xWhole}, []int{0, xKeys}),
		},
		check: func(w *world, results []error) []string {
			var v []string
			commits := 0
			for _, r := range results[:2] {
				if r == nil {
					commits++
				}
			}
			if commits > 1 {
				v = append(v, "two lock holders both committed the turn")
			}
			if _, err := w.admin.RunMaintenance(w.tb.Context()); err != nil {
				v = append(v, fmt.Sprintf("reconciler: %v", err))
			}
			want := 1
			if commits == 1 {
				want = xWhole
			}
			v = append(v, historyViolations(w, inst, want)...)
			queued := 0
			for _, d := range w.docs(inst) {
				if d["type"] == "orch_queue" {
					queued++
				}
			}
			if commits == 1 && queued != 0 {
				v = append(v, fmt.Sprintf("the turn committed but %d queue messages remain", queued))
			}
			if commits == 0 && queued != 1 {
				v = append(v, fmt.Sprintf("no turn committed but %d queue messages remain (the event must stay)", queued))
			}
			kv, err := w.admin.KVValues(w.tb.Context(), inst)
			if err != nil || (commits == 1 && len(kv) != xKeys) || (commits == 0 && len(kv) != 0) {
				v = append(v, fmt.Sprintf("KV has %d keys after %d commits (%v)", len(kv), commits, err))
			}
			return v
		},
	}
}

var errNothing = fmt.Errorf("nothing to fetch")

// pendingTurnRace: a large turn is committed but not rolled forward; the
// reconciler, the next dispatcher (which rolls it forward and commits a
// newer value for k/000) and a reader race. The newer value stands, the
// history is whole, readers see the pending turn whole.
func pendingTurnRace() scenario {
	const inst = "pend"
	return scenario{
		name: "pending-turn",
		setup: func(w *world) {
			xPrepare(w, inst)
			g := &gate{}
			p := w.openProvider(g.hooks())
			defer func() { _ = p.Close() }()
			ctx := w.tb.Context()
			it, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
			wmust(w, err)
			g.setFail(func(c testhooks.Call) error {
				if isJournalRead(c) {
					return errInjected
				}
				return nil
			})
			wmust(w, p.AckOrchestrationItem(ctx, it.LockToken, xTurn(inst)))
			wmust(w, p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "next", Data: "2"}, 0))
		},
		actors: []actor{
			reconcilerActor(),
			{name: "dispatcher", run: func(ctx context.Context, w *world, p *cdb.Provider) error {
				it, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
				if err != nil {
					return err
				}
				if it == nil {
					return errNothing
				}
				if len(it.History) != xWhole {
					w.violate("the dispatcher loaded %d events, want %d", len(it.History), xWhole)
				}
				return p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
					HistoryDelta: []duroxide.Event{{EventID: uint64(len(it.History) + 1), InstanceID: inst, ExecutionID: 1, DuroxideVersion: "0.1.29",
						Kind: duroxide.KeyValueSet{Key: "k/000", Value: "NEW", LastUpdatedAtMs: 2}}}})
			}},
			wholeRead(inst, []int{xWhole, xWhole + 1}, []int{xKeys}),
		},
		check: func(w *world, results []error) []string {
			var v []string
			if _, err := w.admin.RunMaintenance(w.tb.Context()); err != nil {
				v = append(v, fmt.Sprintf("reconciler: %v", err))
			}
			want, val := xWhole, "v"
			if results[1] == nil {
				want, val = xWhole+1, "NEW"
			}
			v = append(v, historyViolations(w, inst, want)...)
			got, _, err := w.admin.KVValue(w.tb.Context(), inst, "k/000")
			if err != nil || got != val {
				v = append(v, fmt.Sprintf("k/000 = %q (%v), want %q: an older turn overwrote a newer one", got, err, val))
			}
			return v
		},
	}
}

// completedTurnDeletionRace: a large turn completed the instance and is
// pending; the reconciler rolls it forward while a client deletes the
// instance (no force: it is Completed) and a reader reads it. Once the
// deletion succeeded nothing of the instance remains or comes back, and
// the reader sees the turn whole or the instance gone.
func completedTurnDeletionRace() scenario {
	const inst = "done"
	return scenario{
		name: "completed-turn-deletion",
		setup: func(w *world) {
			xPrepare(w, inst)
			g := &gate{}
			p := w.openProvider(g.hooks())
			defer func() { _ = p.Close() }()
			ctx := w.tb.Context()
			it, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
			wmust(w, err)
			g.setFail(func(c testhooks.Call) error {
				if isJournalRead(c) {
					return errInjected
				}
				return nil
			})
			c := xTurn(inst)
			c.Metadata = duroxide.ExecutionMetadata{Status: str(duroxide.StatusCompleted), Output: str(`"done"`)}
			wmust(w, p.AckOrchestrationItem(ctx, it.LockToken, c))
		},
		actors: []actor{
			reconcilerActor(),
			{name: "deleter", run: func(ctx context.Context, w *world, p *cdb.Provider) error {
				_, err := p.DeleteInstance(ctx, inst, false)
				return err
			}},
			wholeRead(inst, []int{0, xWhole}, []int{0, xKeys}),
		},
		check: func(w *world, results []error) []string {
			var v []string
			ctx := w.tb.Context()
			if results[1] != nil {
				return []string{fmt.Sprintf("deleting a completed instance failed: %v", results[1])}
			}
			if _, err := w.admin.RunMaintenance(ctx); err != nil {
				v = append(v, fmt.Sprintf("reconciler: %v", err))
			}
			if n := len(withoutRetired(w.docs(inst))); n > 0 {
				v = append(v, fmt.Sprintf("%d documents of the deleted instance came back", n))
			}
			if _, ok, err := w.admin.KVValue(ctx, inst, "k/000"); err != nil || ok {
				v = append(v, fmt.Sprintf("a KV key of the deleted instance is readable (%v)", err))
			}
			return v
		},
	}
}

// deletionRace: a forced deletion of a running instance races a worker
// acking its activity. Nothing of the instance remains (no orphan
// completion), and a new instance with the same id receives only its
// own start.
func deletionRace() scenario {
	const inst = "del"
	return scenario{
		name: "deletion",
		setup: func(w *world) {
			ctx := w.tb.Context()
			p := w.admin
			wmust(w, p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: inst, Orchestration: "Big", Input: "{}", Version: str("1.0.0"), ExecutionID: 1}, 0))
			it, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
			wmust(w, err)
			wmust(w, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
				HistoryDelta: []duroxide.Event{started(inst), {EventID: 2, InstanceID: inst, ExecutionID: 1, DuroxideVersion: "0.1.29", Kind: duroxide.ActivityScheduled{Name: "Work", Input: "x"}}},
				WorkerItems:  []duroxide.WorkItem{duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: "Work", Input: "x"}},
				Metadata:     duroxide.ExecutionMetadata{OrchestrationName: str("Big"), OrchestrationVersion: str("1.0.0")}}))
			wi, err := p.FetchWorkItem(ctx, time.Minute, 0, nil, duroxide.AnyTag())
			wmust(w, err)
			w.vals.Store("token", wi.LockToken)
		},
		actors: []actor{
			{name: "deleter", run: func(ctx context.Context, w *world, p *cdb.Provider) error {
				_, err := p.DeleteInstance(ctx, inst, true)
				return err
			}},
			{name: "worker", run: func(ctx context.Context, w *world, p *cdb.Provider) error {
				w.clock.advance(time.Second) // the ack comes later than any tombstone
				return p.AckWorkItem(ctx, w.val("token").(string), duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "old"})
			}},
			reconcilerActor(),
		},
		check: func(w *world, results []error) []string {
			var v []string
			ctx := w.tb.Context()
			if results[0] != nil {
				return []string{fmt.Sprintf("forced deletion failed: %v", results[0])}
			}
			if _, err := w.admin.RunMaintenance(ctx); err != nil {
				v = append(v, fmt.Sprintf("reconciler: %v", err))
			}
			if left := withoutRetired(w.docs(inst)); len(left) > 0 {
				var ids []string
				for _, d := range left {
					ids = append(ids, fmt.Sprint(d["id"]))
				}
				sort.Strings(ids)
				v = append(v, fmt.Sprintf("documents of the deleted instance remain (orphans): %v", ids))
			}
			w.clock.advance(time.Second)
			wmust(w, w.admin.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: inst, Orchestration: "Big", Input: "{}", Version: str("1.0.0"), ExecutionID: 1}, 0))
			it, err := w.admin.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
			if err != nil || it == nil || len(it.Messages) != 1 {
				v = append(v, fmt.Sprintf("the new instance with the deleted id received %v (%v), want only its start", itemMessages(it), err))
			}
			return v
		},
	}
}

func itemMessages(it *duroxide.OrchestrationItem) []string {
	if it == nil {
		return nil
	}
	var out []string
	for _, m := range it.Messages {
		out = append(out, m.Variant())
	}
	return out
}

// bulkDeletionRace: a bulk deletion of a finished tree races its child
// running again. A running instance is never deleted by the (non-force)
// bulk call and no child outlives its root.
func bulkDeletionRace() scenario {
	return scenario{
		name: "bulk-deletion",
		setup: func(w *world) {
			completeTreeW(w, "root", "child")
			wmust(w, w.admin.EnqueueForOrchestrator(w.tb.Context(), duroxide.ExternalRaisedItem{Instance: "child", Name: "again", Data: "1"}, 0))
		},
		actors: []actor{
			{name: "bulk-deleter", run: func(ctx context.Context, w *world, p *cdb.Provider) error {
				_, err := p.DeleteInstanceBulk(ctx, duroxide.InstanceFilter{InstanceIDs: []string{"root"}})
				return err
			}},
			{name: "child", run: func(ctx context.Context, w *world, p *cdb.Provider) error {
				it, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
				if err != nil {
					return err
				}
				if it == nil {
					return errNothing
				}
				return p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 2,
					HistoryDelta: []duroxide.Event{hEvent("child", 2, 1, duroxide.OrchestrationStarted{Name: "HChild", Version: "1.0.0", Input: "{}"})}, Metadata: hRunning("HChild")})
			}},
		},
		check: func(w *world, results []error) []string {
			var v []string
			ctx := w.tb.Context()
			if results[0] != nil {
				v = append(v, fmt.Sprintf("bulk deletion failed: %v", results[0]))
			}
			_, _ = w.admin.RunMaintenance(ctx)
			childInfo, childErr := w.admin.InstanceInfo(ctx, "child")
			_, rootErr := w.admin.InstanceInfo(ctx, "root")
			if results[1] == nil && (childErr != nil || childInfo.Status != duroxide.StatusRunning) {
				v = append(v, fmt.Sprintf("the child runs again (its ack committed) but was deleted by a non-force call (%v)", childErr))
			}
			if rootErr != nil && childErr == nil {
				v = append(v, "the root was deleted but its child remains (an orphan)")
			}
			return v
		},
	}
}

// completeTreeW creates root (Completed) with a Completed child.
func completeTreeW(w *world, root, child string) {
	ctx := w.tb.Context()
	p := w.admin
	wmust(w, p.EnqueueForOrchestrator(ctx, hStart(root), 0))
	it, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	wmust(w, err)
	wmust(w, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{hStarted(root, "HOrch")}, Metadata: hStatus("HOrch", duroxide.StatusCompleted, `"ok"`)}))
	wmust(w, p.EnqueueForOrchestrator(ctx, hChildStart(root, child, 2), 0))
	it, err = p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	wmust(w, err)
	md := hStatus("HChild", duroxide.StatusCompleted, `"ok"`)
	md.ParentInstanceID = str(root)
	wmust(w, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{hStarted(child, "HChild")}, Metadata: md}))
}

// sessionRace: the owner of a session acks one of its activities while a
// session renewer runs and, later, a second worker looks for session
// work once the original lock would have expired. A renewal that starts
// while the session is live and owned renews it; a session renewed before
// the second worker arrives is not claimed by it.
func sessionRace() scenario {
	const inst = "sess"
	sid := "S"
	return scenario{
		name: "session",
		setup: func(w *world) {
			ctx := w.tb.Context()
			p := w.admin
			wmust(w, p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: inst, Orchestration: "Big", Input: "{}", Version: str("1.0.0"), ExecutionID: 1}, 0))
			it, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
			wmust(w, err)
			c := duroxide.OrchestrationCommit{ExecutionID: 1, HistoryDelta: []duroxide.Event{started(inst)},
				Metadata: duroxide.ExecutionMetadata{OrchestrationName: str("Big"), OrchestrationVersion: str("1.0.0")}}
			for id := uint64(2); id <= 3; id++ {
				c.HistoryDelta = append(c.HistoryDelta, duroxide.Event{EventID: id, InstanceID: inst, ExecutionID: 1, DuroxideVersion: "0.1.29",
					Kind: duroxide.ActivityScheduled{Name: "Work", Input: "x", SessionID: &sid}})
				c.WorkerItems = append(c.WorkerItems, duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: id, Name: "Work", Input: "x", SessionID: &sid})
			}
			wmust(w, p.AckOrchestrationItem(ctx, it.LockToken, c))
			wi, err := p.FetchWorkItem(ctx, 30*time.Second, 0, &duroxide.SessionFetchConfig{OwnerID: "o1", LockTimeout: 30 * time.Second}, duroxide.AnyTag())
			wmust(w, err)
			w.vals.Store("token", wi.LockToken)
			w.vals.Store("id", wi.Item.(duroxide.ActivityExecuteItem).ID)
		},
		actors: []actor{
			{name: "owner", run: func(ctx context.Context, w *world, p *cdb.Provider) error {
				w.clock.advance(time.Second) // some work happened
				return p.AckWorkItem(ctx, w.val("token").(string), duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: w.val("id").(uint64), Result: "r"})
			}},
			{name: "session-renewer", ownClock: true, run: func(ctx context.Context, w *world, p *cdb.Provider) error {
				// Its clock stays at the start: to it the session is live.
				n, err := p.RenewSessionLock(ctx, []string{"o1"}, time.Minute, 10*time.Minute)
				if err == nil && n != 1 && sessionOwner(w, inst) == "o1" {
					w.violate("the renewal of a live session still owned by o1 renewed %d sessions", n)
				}
				if err == nil && n == 1 {
					w.vals.Store("renewed", true)
				}
				return err
			}},
			{name: "second-worker", run: func(ctx context.Context, w *world, p *cdb.Provider) error {
				renewed := w.val("renewed") != nil
				w.clock.advance(45 * time.Second) // past the first lock, inside a renewal
				wi, err := p.FetchWorkItem(ctx, 30*time.Second, 0, &duroxide.SessionFetchConfig{OwnerID: "o2", LockTimeout: 30 * time.Second}, duroxide.AnyTag())
				if err == nil && wi != nil && renewed {
					w.violate("session %s was renewed for o1, yet o2 claimed it", sid)
				}
				return err
			}},
		},
		check: func(w *world, results []error) []string {
			// The owner's ack may fail: its item's lock may have run out
			// before it acked. The others never fail.
			var v []string
			for i, r := range results[1:] {
				if r != nil {
					v = append(v, fmt.Sprintf("actor %d failed: %v", i+1, r))
				}
			}
			return v
		},
	}
}

// sessionOwner reads the owner of inst's session document ("" if none).
func sessionOwner(w *world, inst string) string {
	for _, d := range w.docs(inst) {
		if d["type"] == "session" {
			o, _ := d["ownerId"].(string)
			return o
		}
	}
	return ""
}
