package cdb_test

// Cost benchmarks: how many Cosmos requests, documents, bytes and request
// units each provider operation spends, measured on the in-process
// cosmostest server. Costs are counts, so they are reported with
// b.ReportMetric and never asserted as wall-clock limits; the request
// budgets of issues 4 and 5 are asserted (as counts) by TestRequestBudget.
//
// Reproduce docs/costs.md with
//
//	go test -run '^$' -bench . -benchtime=5x -timeout 30m .
//
// The counts are deterministic, so a handful of iterations suffices; the
// turn benchmarks rotate instances every turnsPerInst turns, so any
// multiple of it gives the same averages.
//
// Metric units: req/X is provider requests per X (RequestStats), docs/X
// the documents in response bodies and B-read/X the response bytes (both
// from cosmostest's per-operation stats), RU/X the request charge the
// provider was billed (cosmostest's charges approximate the service's; see
// the cosmostest package documentation). wire-req/X appears only when the
// server saw more requests than the provider sent (SDK metadata calls).

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
)

// ---- orchestration turns ----

type turnKind string

const (
	turnPlain      turnKind = "plain"           // ExternalRaised in, two history events out
	turnKVStatus   turnKind = "kv+status"       // plus two KeyValueSet and a CustomStatusUpdated
	turnActivities turnKind = "5activities"     // plus five ActivityScheduled and their worker items
	turnSubOrch    turnKind = "suborch"         // plus a SubOrchestrationScheduled and the child's start (outbox)
	turnsPerInst            = 10                // turns before rotating to a fresh instance
	turnInstPrefix          = "turn"            // instance ids: turn-<kind>-<n>
	subOrchPrefix           = "::sub::"         // child ids: <parent>::sub::<event id>
	pokeName                = "poke"            // the external event every turn receives
	activityName            = "CostActivity"    // the activity scheduled by 5activities
	subOrchName             = "CostSubOrch"     // the child orchestration of suborch
	pokeData                = `{"payload":"x"}` // small, like a typical external event
)

// turnRunner drives steady-state turns: an instance that already exists
// receives an ExternalRaised, and the measured fetch + ack commits a couple
// of history events. Every turnsPerInst turns it rotates (unmeasured) to a
// fresh instance and deletes the old one, so the loaded history stays
// between 1 and 1+turnsPerInst×(events per turn) events and the container
// stays small whatever b.N is.
type turnRunner struct {
	e     *harness
	kind  turnKind
	inst  string
	next  uint64 // next event id
	turns int
	seq   int
	child string // the child started by the last suborch turn

	fetch, ack, turn tally
}

// prepare makes the next turn ready: rotate if due, enqueue the event.
func (r *turnRunner) prepare(tb testing.TB) {
	tb.Helper()
	if r.turns%turnsPerInst == 0 {
		if r.inst != "" {
			_, err := r.e.p.DeleteInstance(r.e.ctx, r.inst, true)
			must(tb, err)
		}
		r.seq++
		r.inst = fmt.Sprintf("%s-%s-%d", turnInstPrefix, r.kind, r.seq)
		r.next = r.e.startInstance(tb, r.inst)
	}
	must(tb, r.e.p.EnqueueForOrchestrator(r.e.ctx, duroxide.ExternalRaisedItem{Instance: r.inst, Name: pokeName, Data: pokeData}, 0))
}

// commit builds the turn's commit for the fetched item.
func (r *turnRunner) commit() duroxide.OrchestrationCommit {
	id := func() uint64 { r.next++; return r.next - 1 }
	c := duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: runningMeta()}
	c.HistoryDelta = append(c.HistoryDelta,
		ev(r.inst, 1, id(), duroxide.ExternalEvent{Name: pokeName, Data: pokeData}),
		ev(r.inst, 1, id(), duroxide.ExternalSubscribed{Name: pokeName}))
	switch r.kind {
	case turnKVStatus:
		c.HistoryDelta = append(c.HistoryDelta,
			ev(r.inst, 1, id(), duroxide.KeyValueSet{Key: "progress", Value: fmt.Sprint(r.turns), LastUpdatedAtMs: nowMs()}),
			ev(r.inst, 1, id(), duroxide.KeyValueSet{Key: "last-event", Value: pokeData, LastUpdatedAtMs: nowMs()}),
			ev(r.inst, 1, id(), duroxide.CustomStatusUpdated{Status: ptrTo(fmt.Sprintf(`{"turn":%d}`, r.turns))}))
	case turnActivities:
		for range 5 {
			eid := id()
			c.HistoryDelta = append(c.HistoryDelta, ev(r.inst, 1, eid, duroxide.ActivityScheduled{Name: activityName, Input: `{"n":1}`}))
			c.WorkerItems = append(c.WorkerItems, duroxide.ActivityExecuteItem{Instance: r.inst, ExecutionID: 1, ID: eid, Name: activityName, Input: `{"n":1}`})
		}
	case turnSubOrch:
		eid := id()
		r.child = fmt.Sprintf("%s%s%d", r.inst, subOrchPrefix, eid)
		c.HistoryDelta = append(c.HistoryDelta, ev(r.inst, 1, eid, duroxide.SubOrchestrationScheduled{Name: subOrchName, Instance: r.child, Input: "{}"}))
		c.OrchestratorItems = append(c.OrchestratorItems, duroxide.StartOrchestrationItem{Instance: r.child, Orchestration: subOrchName,
			Input: "{}", Version: ptrTo(costOrchVer), ParentInstance: ptrTo(r.inst), ParentID: ptrTo(eid), ExecutionID: 1})
	}
	return c
}

// run performs one measured turn and returns its fetch and ack costs.
func (r *turnRunner) run(tb testing.TB) (fetch, ack cost) {
	tb.Helper()
	var item *duroxide.OrchestrationItem
	fetch = r.e.measure(func() { item = r.e.fetchOrch(tb, r.inst) })
	if len(item.Messages) != 1 {
		tb.Fatalf("turn fetched %d messages, want 1", len(item.Messages))
	}
	c := r.commit()
	ack = r.e.measure(func() { must(tb, r.e.p.AckOrchestrationItem(r.e.ctx, item.LockToken, c)) })
	r.turns++
	r.fetch.add(fetch)
	r.ack.add(ack)
	t := fetch
	t.add(ack)
	r.turn.add(t)
	return fetch, ack
}

// cleanup removes what a turn left outside the instance (the child's
// start message, which would otherwise be the oldest visible item).
func (r *turnRunner) cleanup(tb testing.TB) {
	tb.Helper()
	if r.kind == turnSubOrch && r.child != "" {
		r.e.purge(tb, r.child, "orch_queue")
	}
}

func BenchmarkOrchestrationTurn(b *testing.B) {
	for _, kind := range []turnKind{turnPlain, turnKVStatus, turnActivities, turnSubOrch} {
		b.Run(string(kind), func(b *testing.B) {
			r := &turnRunner{e: newHarness(b, cdb.Options{}, withoutLag()), kind: kind}
			for b.Loop() {
				b.StopTimer()
				r.prepare(b)
				b.StartTimer()
				r.run(b)
				b.StopTimer()
				r.cleanup(b)
				b.StartTimer()
			}
			r.fetch.report(b, "fetch")
			r.ack.report(b, "ack")
			r.turn.report(b, "turn")
			r.fetch.logOps(b, "fetch")
			r.ack.logOps(b, "ack")
		})
	}
}

// ---- activities ----

type sessionMode string

const (
	sessionNone   sessionMode = "plain"              // no session
	sessionSteady sessionMode = "session-steady"     // the worker already owns the session
	sessionClaim  sessionMode = "session-firstclaim" // every item opens a new session
	activityInst              = "act-1"
	workerOwner               = "worker-1"
	purgeEvery                = 50
)

// activityRunner drives fetch_work_item + ack_work_item on one instance's
// activities; the completions (and, for first claims, the sessions) it
// leaves are purged every purgeEvery activities, unmeasured.
type activityRunner struct {
	e    *harness
	mode sessionMode
	cfg  *duroxide.SessionFetchConfig
	seq  uint64

	fetch, ack, total tally
}

func newActivityRunner(tb testing.TB, mode sessionMode) *activityRunner {
	return newActivityRunnerRanges(tb, mode, 1)
}

func newActivityRunnerRanges(tb testing.TB, mode sessionMode, ranges int) *activityRunner {
	r := &activityRunner{e: newHarness(tb, cdb.Options{}, withoutLag(), withRanges(ranges)), mode: mode}
	if mode != sessionNone {
		r.cfg = &duroxide.SessionFetchConfig{OwnerID: workerOwner, LockTimeout: costLock}
	}
	if mode == sessionSteady {
		// Claim the session once, outside the measurement.
		r.prepare(tb)
		w := r.e.fetchWork(tb, r.cfg)
		must(tb, r.e.p.AckWorkItem(r.e.ctx, w.LockToken, r.completion(w)))
	}
	return r
}

func (r *activityRunner) prepare(tb testing.TB) {
	tb.Helper()
	if r.seq > 0 && r.seq%purgeEvery == 0 {
		r.e.purge(tb, activityInst, "orch_queue", "orch_received")
		if r.mode == sessionClaim {
			r.e.purge(tb, activityInst, "session")
		}
	}
	r.seq++
	a := duroxide.ActivityExecuteItem{Instance: activityInst, ExecutionID: 1, ID: r.seq, Name: activityName, Input: `{"n":1}`}
	switch r.mode {
	case sessionSteady:
		a.SessionID = ptrTo("s-1")
	case sessionClaim:
		a.SessionID = ptrTo(fmt.Sprintf("s-%d", r.seq))
	}
	must(tb, r.e.p.EnqueueForWorker(r.e.ctx, a))
}

func (r *activityRunner) completion(w *duroxide.LockedWorkItem) duroxide.WorkItem {
	a := w.Item.(duroxide.ActivityExecuteItem)
	return duroxide.ActivityCompletedItem{Instance: a.Instance, ExecutionID: a.ExecutionID, ID: a.ID, Result: `{"ok":true}`}
}

func (r *activityRunner) run(tb testing.TB) (fetch, ack cost) {
	tb.Helper()
	var w *duroxide.LockedWorkItem
	fetch = r.e.measure(func() { w = r.e.fetchWork(tb, r.cfg) })
	if got := w.Item.(duroxide.ActivityExecuteItem).ID; got != r.seq {
		tb.Fatalf("fetched activity %d, want %d", got, r.seq)
	}
	ack = r.e.measure(func() { must(tb, r.e.p.AckWorkItem(r.e.ctx, w.LockToken, r.completion(w))) })
	r.fetch.add(fetch)
	r.ack.add(ack)
	t := fetch
	t.add(ack)
	r.total.add(t)
	return fetch, ack
}

func BenchmarkActivity(b *testing.B) {
	for _, mode := range []sessionMode{sessionNone, sessionSteady, sessionClaim} {
		b.Run(string(mode), func(b *testing.B) {
			r := newActivityRunner(b, mode)
			for b.Loop() {
				b.StopTimer()
				r.prepare(b)
				b.StartTimer()
				r.run(b)
			}
			r.fetch.report(b, "fetch")
			r.ack.report(b, "ack")
			r.total.report(b, "activity")
			r.fetch.logOps(b, "fetch")
			r.ack.logOps(b, "ack")
		})
	}
}

// ---- fetch cost against queue depth ----

// fillQueues writes n running instances, each with one visible
// orchestrator message (ExternalRaised) and one visible worker item, in
// one batch per instance. Instance ids sort in enqueue order.
func fillQueues(tb testing.TB, e *harness, n int) {
	tb.Helper()
	parts := map[string][][]byte{}
	now := time.Now().Add(-time.Second)
	base := now.UnixMicro()
	for i := range n {
		inst := fmt.Sprintf("q-%05d", i)
		docs := runningInstanceDocs(inst, now.UnixMilli())
		docs = append(docs,
			queueJSON(inst+":orch:fill", inst, "orch_queue", duroxide.ExternalRaisedItem{Instance: inst, Name: pokeName, Data: pokeData}, now, base+int64(2*i)),
			queueJSON(inst+":worker:1:2", inst, "worker_queue", duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: activityName, Input: `{"n":1}`}, now, base+int64(2*i+1)))
		parts[inst] = docs
	}
	e.writeBatches(tb, parts)
}

// seedDiscovery measures what the seed's discovery reads: the gateway
// refuses its cross-partition TOP 1 … ORDER BY, so finding the oldest
// visible entry means reading every visible entry's projection, all pages.
func seedDiscovery(tb testing.TB, e *harness, docType string) (requests, docs int, bytes int64, ru float64) {
	tb.Helper()
	e.settle()
	b := e.srv.Stats(cosmostest.OpQuery)
	q := "SELECT c.id, c.instanceId, c._etag, c.enqueuedAt FROM c WHERE c.type = @type AND c.visibleAt <= @now AND " +
		"(NOT IS_DEFINED(c.lockedUntil) OR IS_NULL(c.lockedUntil) OR c.lockedUntil <= @now)"
	rows := 0
	pager := e.sdk.NewQueryItemsPager(q, azcosmosCross(), queryParams("@type", docType, "@now", time.Now().UnixMilli()))
	for pager.More() {
		page, err := pager.NextPage(e.ctx)
		must(tb, err)
		rows += len(page.Items)
	}
	if rows == 0 {
		tb.Fatalf("seed discovery found no visible %s entries", docType)
	}
	e.settle()
	after := e.srv.Stats(cosmostest.OpQuery)
	return after.Requests - b.Requests, after.DocumentsReturned - b.DocumentsReturned, after.ResponseBytes - b.ResponseBytes, after.RequestCharge - b.RequestCharge
}

func BenchmarkFetchQueueDepth(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("visible=%d", n), func(b *testing.B) {
			e := newHarness(b, cdb.Options{}, withoutLag())
			fillQueues(b, e, n)
			b.Run("orchestrator", func(b *testing.B) {
				var fetch tally
				for b.Loop() {
					var item *duroxide.OrchestrationItem
					fetch.add(e.measure(func() { item = e.fetchOrch(b, "") }))
					b.StopTimer()
					must(b, e.p.AbandonOrchestrationItem(e.ctx, item.LockToken, 0, true))
					b.StartTimer()
				}
				fetch.report(b, "fetch")
				fetch.logOps(b, "fetch")
				req, docs, bytes, ru := seedDiscovery(b, e, "orch_queue")
				b.ReportMetric(float64(req), "seed-discovery-req/fetch")
				b.ReportMetric(float64(docs), "seed-discovery-docs/fetch")
				b.ReportMetric(float64(bytes), "seed-discovery-B-read/fetch")
				b.ReportMetric(ru, "seed-discovery-RU/fetch")
			})
			b.Run("worker", func(b *testing.B) {
				var fetch tally
				for b.Loop() {
					var w *duroxide.LockedWorkItem
					fetch.add(e.measure(func() { w = e.fetchWork(b, nil) }))
					b.StopTimer()
					must(b, e.p.AbandonWorkItem(e.ctx, w.LockToken, 0, true))
					b.StartTimer()
				}
				fetch.report(b, "fetch")
				fetch.logOps(b, "fetch")
				req, docs, bytes, ru := seedDiscovery(b, e, "worker_queue")
				b.ReportMetric(float64(req), "seed-discovery-req/fetch")
				b.ReportMetric(float64(docs), "seed-discovery-docs/fetch")
				b.ReportMetric(float64(bytes), "seed-discovery-B-read/fetch")
				b.ReportMetric(ru, "seed-discovery-RU/fetch")
			})
		})
	}
}

// ---- sessions ----

// ownSessions makes workerOwner own k sessions, one per instance, through
// the provider (enqueue, session-aware fetch that claims, ack).
func ownSessions(tb testing.TB, e *harness, k int) {
	tb.Helper()
	cfg := &duroxide.SessionFetchConfig{OwnerID: workerOwner, LockTimeout: costLock}
	for i := range k {
		inst := fmt.Sprintf("sess-%03d", i)
		must(tb, e.p.EnqueueForWorker(e.ctx, duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: activityName,
			Input: "{}", SessionID: ptrTo("s")}))
		w := e.fetchWork(tb, cfg)
		must(tb, e.p.AckWorkItem(e.ctx, w.LockToken, nil))
	}
}

func BenchmarkRenewSessionLock(b *testing.B) {
	for _, k := range []int{1, 100} {
		b.Run(fmt.Sprintf("owned=%d", k), func(b *testing.B) {
			e := newHarness(b, cdb.Options{}, withoutLag())
			ownSessions(b, e, k)
			var renew tally
			for b.Loop() {
				var n int
				renew.add(e.measure(func() {
					var err error
					n, err = e.p.RenewSessionLock(e.ctx, []string{workerOwner}, costLock, time.Hour)
					must(b, err)
				}))
				if n != k {
					b.Fatalf("renewed %d sessions, want %d", n, k)
				}
			}
			renew.report(b, "call")
			renew.logOps(b, "renew")
		})
	}
}

func BenchmarkCleanupOrphanedSessions(b *testing.B) {
	for _, k := range []int{0, 100} {
		b.Run(fmt.Sprintf("expired=%d", k), func(b *testing.B) {
			e := newHarness(b, cdb.Options{}, withoutLag())
			// 100 live sessions that cleanup must leave alone.
			live := map[string][][]byte{}
			now := time.Now()
			for i := range 100 {
				inst := fmt.Sprintf("live-%03d", i)
				live[inst] = [][]byte{sessionJSON(inst, "s", workerOwner, now.Add(time.Hour), now)}
			}
			e.writeBatches(b, live)
			var cleanup tally
			for b.Loop() {
				b.StopTimer()
				expired := map[string][][]byte{}
				at := time.Now()
				for i := range k {
					inst := fmt.Sprintf("exp-%03d", i)
					expired[inst] = [][]byte{sessionJSON(inst, "s", workerOwner, at.Add(-time.Minute), at.Add(-2*time.Minute))}
				}
				e.writeBatches(b, expired)
				b.StartTimer()
				var n int
				cleanup.add(e.measure(func() {
					var err error
					n, err = e.p.CleanupOrphanedSessions(e.ctx, time.Minute)
					must(b, err)
				}))
				if n != k {
					b.Fatalf("cleaned up %d sessions, want %d", n, k)
				}
			}
			cleanup.report(b, "call")
			cleanup.logOps(b, "cleanup")
		})
	}
}

// ---- admin ----

const victims = 100

// seedAdmin writes n instances to h: nine in ten Completed (one execution
// of two events, summarised on the instance document), one in ten Running
// with one history event, one pending orchestrator message and one pending
// worker item; it returns how many are running. The completed instances'
// history documents are left out: none of the measured calls reads them,
// and on cosmostest, whose queries scan instead of using an index, they
// would only slow the run and inflate the scan-based RU of cross-partition
// queries.
func seedAdmin(tb testing.TB, h *harness, n int) (running int) {
	tb.Helper()
	parts := map[string][][]byte{}
	now := time.Now().Add(-time.Hour)
	base := now.UnixMicro()
	for i := range n {
		inst := fmt.Sprintf("adm-%05d", i)
		created := now.UnixMilli() + int64(i)
		if i%10 == 9 {
			running++
			docs := runningInstanceDocs(inst, created)
			docs = append(docs,
				queueJSON(inst+":orch:fill", inst, "orch_queue", duroxide.ExternalRaisedItem{Instance: inst, Name: pokeName, Data: pokeData}, now, base+int64(2*i)),
				queueJSON(inst+":worker:1:2", inst, "worker_queue", duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: activityName, Input: "{}"}, now, base+int64(2*i+1)))
			parts[inst] = docs
			continue
		}
		completed := created + 1000
		parts[inst] = [][]byte{instanceJSON(inst, duroxide.StatusCompleted, created, &completed, 2)}
	}
	h.writeBatches(tb, parts)
	return running
}

// victimIDs are the instances the bulk-deletion benchmarks add (addVictims)
// before each measured call.
func victimIDs() []string {
	ids := make([]string, victims)
	for i := range ids {
		ids[i] = fmt.Sprintf("old-%03d", i)
	}
	return ids
}

// addVictims writes the victims to h: completed instances (with their
// history) that completed a day ago, before every seedAdmin instance.
func addVictims(tb testing.TB, h *harness) {
	tb.Helper()
	parts := map[string][][]byte{}
	old := time.Now().Add(-24 * time.Hour).UnixMilli()
	for i, inst := range victimIDs() {
		parts[inst] = completedInstanceDocs(inst, old+int64(i), old+int64(i)+1000)
	}
	h.writeBatches(tb, parts)
}

func BenchmarkAdmin(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			e := newHarness(b, cdb.Options{}, withoutLag())
			running := seedAdmin(b, e, n)
			call := func(b *testing.B, name string, f func() error) {
				var t tally
				for b.Loop() {
					t.add(e.measure(func() { must(b, f()) }))
				}
				t.report(b, "call")
				t.logOps(b, name)
			}
			b.Run("SystemMetrics", func(b *testing.B) {
				call(b, "metrics", func() error {
					m, err := e.p.SystemMetrics(e.ctx)
					if err == nil && m.TotalInstances != uint64(n) {
						err = fmt.Errorf("metrics count %d instances, want %d", m.TotalInstances, n)
					}
					return err
				})
			})
			b.Run("QueueDepths", func(b *testing.B) {
				call(b, "depths", func() error {
					d, err := e.p.QueueDepths(e.ctx)
					if err == nil && (d.OrchestratorQueue != running || d.WorkerQueue != running) {
						err = fmt.Errorf("queue depths %+v, want %d each", *d, running)
					}
					return err
				})
			})
			b.Run("ListInstances", func(b *testing.B) {
				call(b, "list", func() error {
					ids, err := e.p.ListInstances(e.ctx)
					if err == nil && len(ids) != n {
						err = fmt.Errorf("listed %d instances, want %d", len(ids), n)
					}
					return err
				})
			})
			bulk := func(b *testing.B, name string, filter func() duroxide.InstanceFilter) {
				var t tally
				for b.Loop() {
					b.StopTimer()
					addVictims(b, e)
					b.StartTimer()
					t.add(e.measure(func() {
						res, err := e.p.DeleteInstanceBulk(e.ctx, filter())
						must(b, err)
						if res.InstancesDeleted != victims {
							b.Fatalf("deleted %d instances, want %d", res.InstancesDeleted, victims)
						}
					}))
				}
				t.report(b, "call")
				b.ReportMetric(float64(t.c.Requests)/float64(max(t.n, 1))/victims, "req/deleted-instance")
				t.logOps(b, name)
			}
			b.Run("DeleteInstanceBulk/completed-before+limit=100", func(b *testing.B) {
				bulk(b, "bulk-limit", func() duroxide.InstanceFilter {
					return duroxide.InstanceFilter{CompletedBefore: ptrTo(nowMs()), Limit: ptrTo(uint32(victims))}
				})
			})
			b.Run("DeleteInstanceBulk/ids=100", func(b *testing.B) {
				bulk(b, "bulk-ids", func() duroxide.InstanceFilter {
					return duroxide.InstanceFilter{InstanceIDs: victimIDs()}
				})
			})
		})
	}
}

// ---- request budgets (counts, not time) ----

// Budgets from issue 4 (turn ≤ 4, activity ≤ 3) and issue 5 (the same for
// turns touching KV and custom status and for session-aware activities).
const (
	turnBudget     = 4
	activityBudget = 3
)

// knownGaps records budgets the provider is known to miss today, with
// the count it spends, so that the test still fails on any further
// regression while the gap is open and passes strictly once it is fixed
// (then delete the entry). See docs/costs.md.
var knownGaps = map[string]int64{}

// TestRequestBudget asserts the request budgets of steady-state turns and
// activities. Request counts are deterministic on cosmostest (no retries,
// no background work), so this is a count assertion, not a timing one.
func TestRequestBudget(t *testing.T) {
	check := func(t *testing.T, what string, budget int64, fetch, ack cost) {
		t.Helper()
		got := fetch.Requests + ack.Requests
		if got <= budget {
			if _, ok := knownGaps[t.Name()]; ok {
				t.Logf("%s: %d requests, within the budget of %d: the known gap is fixed, remove it from knownGaps", what, got, budget)
			}
			return
		}
		msg := fmt.Sprintf("%s: %d requests, budget %d (fetch %d: %s; ack %d: %s)", what, got, budget,
			fetch.Requests, fetch.ops(), ack.Requests, ack.ops())
		if gap, ok := knownGaps[t.Name()]; ok && got <= gap {
			t.Skip("known cost gap: " + msg)
		}
		t.Error(msg)
	}
	for _, kind := range []turnKind{turnPlain, turnKVStatus, turnActivities} {
		t.Run("turn/"+string(kind), func(t *testing.T) {
			r := &turnRunner{e: newHarness(t, cdb.Options{}, withoutLag()), kind: kind}
			for i := range 2*turnsPerInst + 1 { // crosses a rotation
				r.prepare(t)
				f, a := r.run(t)
				r.cleanup(t)
				check(t, fmt.Sprintf("turn %d", i+1), turnBudget, f, a)
			}
		})
	}
	for _, mode := range []sessionMode{sessionNone, sessionSteady} {
		t.Run("activity/"+string(mode), func(t *testing.T) {
			r := newActivityRunner(t, mode)
			for i := range 5 {
				r.prepare(t)
				f, a := r.run(t)
				check(t, fmt.Sprintf("activity %d", i+1), activityBudget, f, a)
			}
		})
	}
	// With several physical partitions a fetch's discovery reads one
	// (possibly empty) page per partition, up to Options.ScanPages: the
	// budgets grow by one query per extra partition, nothing else.
	const ranges = 8
	t.Run(fmt.Sprintf("ranges%d/turn/%s", ranges, turnPlain), func(t *testing.T) {
		r := &turnRunner{e: newHarness(t, cdb.Options{}, withoutLag(), withRanges(ranges)), kind: turnPlain}
		for i := range 3 {
			r.prepare(t)
			f, a := r.run(t)
			r.cleanup(t)
			t.Logf("turn %d at %d ranges: fetch %d (%s), ack %d (%s)", i+1, ranges, f.Requests, f.ops(), a.Requests, a.ops())
			check(t, fmt.Sprintf("turn %d", i+1), turnBudget+ranges-1, f, a)
		}
	})
	t.Run(fmt.Sprintf("ranges%d/activity/%s", ranges, sessionNone), func(t *testing.T) {
		r := newActivityRunnerRanges(t, sessionNone, ranges)
		for i := range 3 {
			r.prepare(t)
			f, a := r.run(t)
			t.Logf("activity %d at %d ranges: fetch %d (%s), ack %d (%s)", i+1, ranges, f.Requests, f.ops(), a.Requests, a.ops())
			check(t, fmt.Sprintf("activity %d", i+1), activityBudget+ranges-1, f, a)
		}
	})
}

// TestCostFixtureLayout keeps the documents the benchmarks write directly
// (to fill containers fast) in step with what the provider writes: same
// fields, same id patterns.
func TestCostFixtureLayout(t *testing.T) {
	e := newHarness(t, cdb.Options{}, withoutLag())
	const inst = "layout-1"
	e.startInstance(t, inst)
	must(t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: pokeName, Data: pokeData}, 0))
	must(t, e.p.EnqueueForWorker(e.ctx, duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: activityName, Input: "{}", SessionID: ptrTo("s")}))
	w := e.fetchWork(t, &duroxide.SessionFetchConfig{OwnerID: workerOwner, LockTimeout: costLock})
	must(t, e.p.AbandonWorkItem(e.ctx, w.LockToken, 0, true))

	stored := map[string]map[string]any{}
	for _, d := range mustDocs(t, e, inst) {
		stored[d["type"].(string)] = d
	}
	now := time.Now()
	ours := map[string][]byte{
		"instance":     instanceJSON(inst, duroxide.StatusRunning, now.UnixMilli(), nil, 1),
		"history":      historyJSON(inst, 1, ev(inst, 1, 1, duroxide.OrchestrationStarted{Name: costOrchName, Version: costOrchVer, Input: "{}"})),
		"orch_queue":   queueJSON("x", inst, "orch_queue", duroxide.ExternalRaisedItem{Instance: inst, Name: pokeName, Data: pokeData}, now, 1),
		"worker_queue": queueJSON("x", inst, "worker_queue", duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: activityName, Input: "{}"}, now, 1),
		"session":      sessionJSON(inst, "s", workerOwner, now, now),
	}
	// Fields the provider adds that the fixtures may leave out.
	optional := map[string]bool{"lastAckToken": true, "sessionId": true}
	for typ, raw := range ours {
		doc, ok := stored[typ]
		if !ok {
			t.Errorf("the provider wrote no %s document", typ)
			continue
		}
		var mine map[string]any
		must(t, json.Unmarshal(raw, &mine))
		for k := range doc {
			if _, ok := mine[k]; !ok && !strings.HasPrefix(k, "_") && !optional[k] {
				t.Errorf("%s: the provider writes %q, the fixture does not", typ, k)
			}
		}
		for k := range mine {
			if _, ok := doc[k]; !ok {
				t.Errorf("%s: the fixture writes %q, the provider does not", typ, k)
			}
		}
		if typ != "orch_queue" && typ != "worker_queue" && doc["id"] != mine["id"] {
			t.Errorf("%s: id %v, fixture id %v", typ, doc["id"], mine["id"])
		}
	}
}

func mustDocs(t *testing.T, e *harness, partition string) []map[string]any {
	t.Helper()
	pager := e.sdk.NewQueryItemsPager("SELECT * FROM c", azcosmos.NewPartitionKeyString(partition), nil)
	var out []map[string]any
	for pager.More() {
		page, err := pager.NextPage(e.ctx)
		must(t, err)
		for _, raw := range page.Items {
			var d map[string]any
			must(t, json.Unmarshal(raw, &d))
			out = append(out, d)
		}
	}
	return out
}
