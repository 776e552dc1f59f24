package cdb_test

// Helpers for the cost benchmarks (bench_test.go) and TestRequestBudget:
// a provider on an in-process cosmostest server, request meters that read
// both the provider's RequestStats and the server's per-operation stats,
// and fast ways to fill a container with many instances or queue entries.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
)

const (
	costLock      = 5 * time.Minute // long enough that no lock expires during a run
	costOrchName  = "CostOrch"
	costOrchVer   = "1.0.0"
	costDuroxide  = "0.1.29"
	costFillConns = 8 // concurrent requests while filling a container
)

// ---- metering ----

// cost is what a measured section spent.
type cost struct {
	Requests       int64   // provider requests (RequestStats.Total)
	RU             float64 // request charge reported to the provider
	Docs           int     // documents in response bodies (cosmostest)
	Bytes          int64   // response body bytes (cosmostest)
	ServerRequests int     // requests the server saw (includes any SDK metadata calls)
	ByOp           map[cdb.Op]int64
}

func (c *cost) add(o cost) {
	c.Requests += o.Requests
	c.RU += o.RU
	c.Docs += o.Docs
	c.Bytes += o.Bytes
	c.ServerRequests += o.ServerRequests
	if c.ByOp == nil {
		c.ByOp = map[cdb.Op]int64{}
	}
	for op, n := range o.ByOp {
		c.ByOp[op] += n
	}
}

// ops renders ByOp as "batch=1 query=2", in a stable order.
func (c cost) ops() string {
	var parts []string
	for op, n := range c.ByOp {
		if n != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", op, n))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

type snapshot struct {
	prov cdb.RequestStats
	srv  map[cosmostest.Op]cosmostest.Stats
}

func (h *harness) snap() snapshot {
	h.settle()
	s := snapshot{prov: h.p.RequestStats(), srv: map[cosmostest.Op]cosmostest.Stats{}}
	for op := range h.srv.Counts() {
		s.srv[op] = h.srv.Stats(op)
	}
	return s
}

// settle waits until the server has finished accounting for every request
// it received (bounded, in case a request was abandoned mid-flight).
func (h *harness) settle() {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		total := 0
		for _, n := range h.srv.Counts() {
			total += n
		}
		if h.served.Load() >= int64(total) {
			return
		}
		time.Sleep(20 * time.Microsecond)
	}
}

func (a snapshot) to(b snapshot) cost {
	c := cost{ByOp: map[cdb.Op]int64{}}
	for op, st := range b.prov {
		d := st.Requests - a.prov[op].Requests
		c.Requests += d
		c.RU += st.RequestCharge - a.prov[op].RequestCharge
		if d != 0 {
			c.ByOp[op] = d
		}
	}
	for op, st := range b.srv {
		c.Docs += st.DocumentsReturned - a.srv[op].DocumentsReturned
		c.Bytes += st.ResponseBytes - a.srv[op].ResponseBytes
		c.ServerRequests += st.Requests - a.srv[op].Requests
	}
	return c
}

// measure runs f and returns what it cost. Nothing else may use the
// server meanwhile.
func (h *harness) measure(f func()) cost {
	before := h.snap()
	f()
	return before.to(h.snap())
}

// tally accumulates the cost of n operations of one kind.
type tally struct {
	n int
	c cost
}

func (t *tally) add(c cost) { t.n++; t.c.add(c) }

func (t *tally) per() cost {
	if t.n == 0 {
		return cost{}
	}
	n := float64(t.n)
	out := cost{Requests: int64(float64(t.c.Requests)/n + 0.5), RU: t.c.RU / n, Docs: int(float64(t.c.Docs)/n + 0.5),
		Bytes: int64(float64(t.c.Bytes)/n + 0.5), ServerRequests: int(float64(t.c.ServerRequests)/n + 0.5), ByOp: map[cdb.Op]int64{}}
	for op, v := range t.c.ByOp {
		out.ByOp[op] = int64(float64(v)/n + 0.5)
	}
	return out
}

// report publishes the averages per operation: requests, documents and
// bytes read and RU, with the unit suffix naming the operation
// ("req/fetch", "docs/fetch", ...). Requests are reported unrounded.
func (t *tally) report(b *testing.B, unit string) {
	b.Helper()
	if t.n == 0 {
		return
	}
	n := float64(t.n)
	b.ReportMetric(float64(t.c.Requests)/n, "req/"+unit)
	b.ReportMetric(float64(t.c.Docs)/n, "docs/"+unit)
	b.ReportMetric(float64(t.c.Bytes)/n, "B-read/"+unit)
	b.ReportMetric(t.c.RU/n, "RU/"+unit)
	if t.c.ServerRequests != int(t.c.Requests) {
		b.ReportMetric(float64(t.c.ServerRequests)/n, "wire-req/"+unit)
	}
}

// logOps logs the per-kind breakdown of the average operation.
func (t *tally) logOps(tb testing.TB, unit string) {
	tb.Helper()
	if t.n > 0 {
		p := t.per()
		tb.Logf("%-6s avg over %d: %d requests (%s), %d docs, %d bytes, %.1f RU", unit, t.n, p.Requests, p.ops(), p.Docs, p.Bytes, p.RU)
	}
}

// ---- provider-level scenario steps ----

func ptrTo[T any](v T) *T { return &v }

func nowMs() uint64 { return uint64(time.Now().UnixMilli()) }

func ev(inst string, exec, id uint64, kind duroxide.EventKind) duroxide.Event {
	return duroxide.Event{EventID: id, InstanceID: inst, ExecutionID: exec, TimestampMs: nowMs(), DuroxideVersion: costDuroxide, Kind: kind}
}

func runningMeta() duroxide.ExecutionMetadata {
	return duroxide.ExecutionMetadata{OrchestrationName: ptrTo(costOrchName), OrchestrationVersion: ptrTo(costOrchVer)}
}

// startInstance creates inst through the provider (enqueue, fetch, ack
// with OrchestrationStarted) and returns the next free event id. The
// queue must hold nothing else that is visible.
func (h *harness) startInstance(tb testing.TB, inst string) uint64 {
	tb.Helper()
	must(tb, h.p.EnqueueForOrchestrator(h.ctx, duroxide.StartOrchestrationItem{Instance: inst, Orchestration: costOrchName,
		Input: "{}", Version: ptrTo(costOrchVer), ExecutionID: 1}, 0))
	item := h.fetchOrch(tb, inst)
	must(tb, h.p.AckOrchestrationItem(h.ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{ev(inst, 1, 1, duroxide.OrchestrationStarted{Name: costOrchName, Version: costOrchVer, Input: "{}"})},
		Metadata:     runningMeta()}))
	return 2
}

// fetchOrch fetches an orchestration item and requires it to be inst's.
func (h *harness) fetchOrch(tb testing.TB, inst string) *duroxide.OrchestrationItem {
	tb.Helper()
	item, err := h.p.FetchOrchestrationItem(h.ctx, costLock, 0, nil)
	must(tb, err)
	if item == nil {
		tb.Fatalf("fetch_orchestration_item: nothing fetched, want %s", inst)
	}
	if inst != "" && item.Instance != inst {
		tb.Fatalf("fetch_orchestration_item: got %s, want %s", item.Instance, inst)
	}
	if item.HistoryError != nil {
		tb.Fatalf("fetch_orchestration_item: history error: %s", *item.HistoryError)
	}
	return item
}

func (h *harness) fetchWork(tb testing.TB, session *duroxide.SessionFetchConfig) *duroxide.LockedWorkItem {
	tb.Helper()
	w, err := h.p.FetchWorkItem(h.ctx, costLock, 0, session, duroxide.AnyTag())
	must(tb, err)
	if w == nil {
		tb.Fatal("fetch_work_item: nothing fetched")
	}
	return w
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// ---- direct container access (setup only) ----

// purge deletes every document of the given types in one partition,
// through the SDK (not the provider), to keep a long benchmark's
// container small.
func (h *harness) purge(tb testing.TB, partition string, types ...string) {
	tb.Helper()
	q := "SELECT c.id FROM c WHERE ARRAY_CONTAINS(@types, c.type)"
	pager := h.sdk.NewQueryItemsPager(q, azcosmos.NewPartitionKeyString(partition),
		&azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@types", Value: types}}})
	var ids []string
	for pager.More() {
		page, err := pager.NextPage(h.ctx)
		must(tb, err)
		for _, raw := range page.Items {
			var r struct {
				ID string `json:"id"`
			}
			must(tb, json.Unmarshal(raw, &r))
			ids = append(ids, r.ID)
		}
	}
	for len(ids) > 0 {
		n := min(len(ids), 100)
		b := h.sdk.NewTransactionalBatch(azcosmos.NewPartitionKeyString(partition))
		for _, id := range ids[:n] {
			b.DeleteItem(id, nil)
		}
		r, err := h.sdk.ExecuteTransactionalBatch(h.ctx, b, nil)
		must(tb, err)
		if !r.Success {
			tb.Fatalf("purge %s: batch failed", partition)
		}
		ids = ids[n:]
	}
}

// writeBatches writes each partition's documents with one transactional
// batch, costFillConns at a time.
func (h *harness) writeBatches(tb testing.TB, parts map[string][][]byte) {
	tb.Helper()
	keys := make([]string, 0, len(parts))
	for k := range parts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	work := make(chan string)
	errs := make(chan error, costFillConns)
	var wg sync.WaitGroup
	for range costFillConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range work {
				docs := parts[k]
				for len(docs) > 0 {
					n := min(len(docs), 100)
					b := h.sdk.NewTransactionalBatch(azcosmos.NewPartitionKeyString(k))
					for _, d := range docs[:n] {
						b.UpsertItem(d, nil)
					}
					r, err := h.sdk.ExecuteTransactionalBatch(h.ctx, b, nil)
					if err == nil && !r.Success {
						err = fmt.Errorf("batch for %s failed", k)
					}
					if err != nil {
						select {
						case errs <- err:
						default:
						}
						return
					}
					docs = docs[n:]
				}
			}
		}()
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		tb.Fatal(err)
	default:
	}
}

// The document layouts below mirror what the provider writes (see
// instanceDoc, historyDoc, queueDoc and sessionDoc in documents.go and
// session.go; ids in ids.go). They are only used to fill containers
// quickly; plain ASCII instance ids need no id escaping.

type execJSON struct {
	ExecutionID uint64 `json:"executionId"`
	Status      string `json:"status"`
	StartedAt   int64  `json:"startedAt"`
	CompletedAt *int64 `json:"completedAt,omitempty"`
	EventCount  int    `json:"eventCount"`
}

// instanceJSON is an instance document of one execution with the given
// status; completedAt is set for a terminal status.
func instanceJSON(inst, status string, createdAt int64, completedAt *int64, events int) []byte {
	doc := map[string]any{
		"id": inst + ":instance", "instanceId": inst, "type": "instance",
		"orchestrationName": costOrchName, "orchestrationVersion": costOrchVer, "currentExecutionId": 1,
		"status": status, "output": nil, "parentInstanceId": nil, "pinnedDuroxideVersion": nil, "pinnedVersionPacked": nil,
		"customStatus": nil, "customStatusVersion": 0, "lockToken": nil, "lockedUntil": nil,
		"createdAt": createdAt, "updatedAt": createdAt,
		"executions":     []execJSON{{ExecutionID: 1, Status: status, StartedAt: createdAt, CompletedAt: completedAt, EventCount: events}},
		"executionCount": 1,
		"eventCount":     events,
	}
	if completedAt != nil {
		doc["output"] = `"done"`
		doc["completedAt"] = *completedAt
		doc["updatedAt"] = *completedAt
	}
	return mustMarshal(doc)
}

func historyJSON(inst string, exec uint64, e duroxide.Event) []byte {
	data, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	return mustMarshal(map[string]any{"id": fmt.Sprintf("%s:history:%d:%d", inst, exec, e.EventID), "instanceId": inst, "type": "history",
		"executionId": exec, "eventId": e.EventID, "eventData": string(data)})
}

// queueJSON is an orch_queue or worker_queue document, visible now.
func queueJSON(id, inst, docType string, item duroxide.WorkItem, now time.Time, order int64) []byte {
	data, err := duroxide.MarshalWorkItem(item)
	if err != nil {
		panic(err)
	}
	doc := map[string]any{"id": id, "instanceId": inst, "type": docType, "workItem": string(data),
		"dispatchSlot": cdb.DispatchSlot(inst), "visibleAt": now.UnixMilli(), "enqueuedAt": now.UnixMilli(),
		"lockToken": nil, "lockedUntil": nil, "attemptCount": 0, "enqueueOrder": order}
	if a, ok := item.(duroxide.ActivityExecuteItem); ok {
		doc["executionId"], doc["activityId"] = a.ExecutionID, a.ID
	}
	return mustMarshal(doc)
}

func sessionJSON(inst, sid, owner string, lockedUntil, lastActivity time.Time) []byte {
	return mustMarshal(map[string]any{"id": inst + ":session:" + sid, "instanceId": inst, "type": "session", "sessionId": sid,
		"ownerId": owner, "lockedUntil": lockedUntil.UnixMilli(), "lastActivity": lastActivity.UnixMilli(), "createdAt": lastActivity.UnixMilli()})
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// completedInstanceDocs are the documents of a completed one-execution
// instance: instance document, OrchestrationStarted, OrchestrationCompleted.
func completedInstanceDocs(inst string, createdAt, completedAt int64) [][]byte {
	return [][]byte{
		instanceJSON(inst, duroxide.StatusCompleted, createdAt, &completedAt, 2),
		historyJSON(inst, 1, ev(inst, 1, 1, duroxide.OrchestrationStarted{Name: costOrchName, Version: costOrchVer, Input: "{}"})),
		historyJSON(inst, 1, ev(inst, 1, 2, duroxide.OrchestrationCompleted{Output: `"done"`})),
	}
}

// runningInstanceDocs are the documents of a running instance with one
// history event.
func runningInstanceDocs(inst string, createdAt int64) [][]byte {
	return [][]byte{
		instanceJSON(inst, duroxide.StatusRunning, createdAt, nil, 1),
		historyJSON(inst, 1, ev(inst, 1, 1, duroxide.OrchestrationStarted{Name: costOrchName, Version: costOrchVer, Input: "{}"})),
	}
}

// azcosmosCross is the partition key of a cross-partition query.
func azcosmosCross() azcosmos.PartitionKey { return azcosmos.NewPartitionKey() }

// queryParams builds query options from name/value pairs.
func queryParams(kv ...any) *azcosmos.QueryOptions {
	o := &azcosmos.QueryOptions{}
	for i := 0; i+1 < len(kv); i += 2 {
		o.QueryParameters = append(o.QueryParameters, azcosmos.QueryParameter{Name: kv[i].(string), Value: kv[i+1]})
	}
	return o
}
