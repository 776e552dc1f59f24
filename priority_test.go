package cdb_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/localcosmos"
)

// Priority-based execution (issue 31, item 3): what each provider call
// sends as Low, read off the wire (the x-ms-cosmos-priority-level header
// the server received), not off the provider's intentions.

// wireRequest is one data-plane request as the server received it.
type wireRequest struct {
	op       cosmostest.Op
	cross    bool   // a query across partitions (no partition key header)
	priority string // the header's value; "" when absent
}

func (w wireRequest) String() string {
	scope := "partition"
	if w.cross {
		scope = "cross-partition"
	}
	return fmt.Sprintf("%s (%s) priority=%q", w.op, scope, w.priority)
}

// wireRecorder records the data-plane requests a server receives, through
// a fault that matches nothing.
type wireRecorder struct {
	mu   sync.Mutex
	reqs []wireRequest
}

// dataPlane are the operations the provider's store sends; the SDK's own
// metadata reads (the account, partition key ranges) are not the
// provider's and carry no level.
var dataPlane = map[cosmostest.Op]bool{
	cosmostest.OpCreateItem: true, cosmostest.OpUpsertItem: true, cosmostest.OpReadItem: true, cosmostest.OpReplaceItem: true,
	cosmostest.OpDeleteItem: true, cosmostest.OpPatchItem: true, cosmostest.OpQuery: true, cosmostest.OpBatch: true,
}

func recordWire(srv *cosmostest.Server) *wireRecorder {
	rec := &wireRecorder{}
	srv.InjectFault(cosmostest.Fault{Match: func(r *http.Request) bool {
		op := localcosmos.RequestOp(r)
		if dataPlane[op] {
			rec.mu.Lock()
			rec.reqs = append(rec.reqs, wireRequest{op: op, cross: r.Header.Get("x-ms-documentdb-partitionkey") == "",
				priority: r.Header.Get("x-ms-cosmos-priority-level")})
			rec.mu.Unlock()
		}
		return false // record only: the request is served
	}})
	return rec
}

// during returns the requests f made.
func (rec *wireRecorder) during(t *testing.T, f func()) []wireRequest {
	t.Helper()
	rec.mu.Lock()
	rec.reqs = nil
	rec.mu.Unlock()
	f()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.NotEmpty(t, rec.reqs, "the call sent no request")
	return append([]wireRequest(nil), rec.reqs...)
}

// requireAll requires every request to carry priority (a header value,
// "" for none).
func requireAll(t *testing.T, what string, reqs []wireRequest, priority string) {
	t.Helper()
	for _, r := range reqs {
		require.Equal(t, priority, r.priority, "%s: every request must be sent with priority %q; got %v", what, priority, reqs)
	}
}

// requireFetchSplit requires a fetch that found work to have sent its
// discovery (the cross-partition queries) as Low and everything that
// locked and loaded what it found without a level.
func requireFetchSplit(t *testing.T, what string, reqs []wireRequest) {
	t.Helper()
	var low, high int
	for _, r := range reqs {
		if r.op == cosmostest.OpQuery && r.cross {
			require.Equal(t, "Low", r.priority, "%s: discovery is background; got %v", what, reqs)
			low++
		} else {
			require.Empty(t, r.priority, "%s: locking and loading a found item is the turn's; got %v", what, reqs)
			high++
		}
	}
	require.Positive(t, low, "%s: no discovery query: %v", what, reqs)
	require.Positive(t, high, "%s: nothing locked: %v", what, reqs)
}

// TestPriorityOfEachCall: discovery polls (found work or not), the
// maintenance round, session cleanup, searches, full-container admin
// reads, prunes and bulk deletes are sent Low; enqueues, the lock and
// load of a found item, renewals, acks and status reads carry no level
// (High). Seen failing before the call sites were marked: the idle fetch
// sent its discovery query without a level.
func TestPriorityOfEachCall(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{}, withoutLag())
	ctx := t.Context()
	rec := recordWire(h.srv)
	p := h.p
	const inst = "prio-1"

	requireAll(t, "idle orchestration fetch", rec.during(t, func() {
		item, err := p.FetchOrchestrationItem(ctx, hLock, 0, nil)
		require.NoError(t, err)
		require.Nil(t, item)
	}), "Low")
	requireAll(t, "idle work-item fetch", rec.during(t, func() {
		w, err := p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.AnyTag())
		require.NoError(t, err)
		require.Nil(t, w)
	}), "Low")

	requireAll(t, "enqueue", rec.during(t, func() {
		require.NoError(t, p.EnqueueForOrchestrator(ctx, hStart(inst), 0))
	}), "")
	var item *duroxide.OrchestrationItem
	requireFetchSplit(t, "orchestration fetch", rec.during(t, func() { item = mustFetchOrch(t, p, inst) }))
	requireAll(t, "orchestration lock renewal", rec.during(t, func() {
		require.NoError(t, p.RenewOrchestrationItemLock(ctx, item.LockToken, hLock))
	}), "")
	act := duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: "A", Input: "i"}
	requireAll(t, "orchestration ack", rec.during(t, func() {
		require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
			HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch"), hEvent(inst, 1, 2, duroxide.ActivityScheduled{Name: "A", Input: "i"})},
			WorkerItems:  []duroxide.WorkItem{act}, Metadata: hRunning("HOrch")}))
	}), "")

	var w *duroxide.LockedWorkItem
	requireFetchSplit(t, "work-item fetch", rec.during(t, func() { w = mustFetchWork(t, p, nil) }))
	requireAll(t, "work-item lock renewal", rec.during(t, func() {
		require.NoError(t, p.RenewWorkItemLock(ctx, w.LockToken, hLock))
	}), "")
	requireAll(t, "work-item ack", rec.during(t, func() {
		require.NoError(t, p.AckWorkItem(ctx, w.LockToken, hCompleted(inst, 2)))
	}), "")
	requireAll(t, "status read", rec.during(t, func() {
		_, err := p.ReadStatus(ctx, inst)
		require.NoError(t, err)
	}), "")

	requireAll(t, "maintenance", rec.during(t, func() {
		_, err := p.RunMaintenance(ctx)
		require.NoError(t, err)
	}), "Low")
	requireAll(t, "session cleanup", rec.during(t, func() {
		_, err := p.CleanupOrphanedSessions(ctx, 0)
		require.NoError(t, err)
	}), "Low")
	requireAll(t, "search", rec.during(t, func() {
		_, err := p.SearchInstances(ctx, duroxide.InstanceQuery{})
		require.NoError(t, err)
	}), "Low")
	for name, call := range map[string]func() error{
		"ListInstances":         func() error { _, err := p.ListInstances(ctx); return err },
		"ListInstancesByStatus": func() error { _, err := p.ListInstancesByStatus(ctx, duroxide.StatusRunning); return err },
		"SystemMetrics":         func() error { _, err := p.SystemMetrics(ctx); return err },
		"QueueDepths":           func() error { _, err := p.QueueDepths(ctx); return err },
		"PruneExecutions": func() error {
			_, err := p.PruneExecutions(ctx, inst, duroxide.PruneOptions{KeepLast: hptr(uint32(1))})
			return err
		},
		"PruneExecutionsBulk": func() error {
			_, err := p.PruneExecutionsBulk(ctx, duroxide.InstanceFilter{InstanceIDs: []string{inst}}, duroxide.PruneOptions{KeepLast: hptr(uint32(1))})
			return err
		},
		"DeleteInstanceBulk": func() error {
			_, err := p.DeleteInstanceBulk(ctx, duroxide.InstanceFilter{CompletedBefore: hptr(hNowMs())})
			return err
		},
	} {
		requireAll(t, name, rec.during(t, func() { require.NoError(t, call()) }), "Low")
	}
}

// TestPriorityCallerHint: a caller's duroxide.RequestPriority outranks
// the provider's choice both ways: PriorityLow makes a status read Low
// (the dashboard's reads), PriorityHigh makes a search and an idle poll
// go without a level. Seen failing before callerPriority was installed:
// the hinted status read went without a level.
func TestPriorityCallerHint(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{}, withoutLag())
	ctx := t.Context()
	rec := recordWire(h.srv)
	const inst = "prio-hint"
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(inst), 0))

	low := duroxide.WithRequestPriority(ctx, duroxide.PriorityLow)
	requireAll(t, "status read hinted Low", rec.during(t, func() {
		_, err := h.p.ReadStatus(low, inst)
		require.NoError(t, err)
	}), "Low")
	high := duroxide.WithRequestPriority(ctx, duroxide.PriorityHigh)
	requireAll(t, "search hinted High", rec.during(t, func() {
		_, err := h.p.SearchInstances(high, duroxide.InstanceQuery{})
		require.NoError(t, err)
	}), "")
	requireAll(t, "maintenance hinted High", rec.during(t, func() {
		_, err := h.p.RunMaintenance(high)
		require.NoError(t, err)
	}), "")
	requireAll(t, "fetch hinted High", rec.during(t, func() {
		item, err := h.p.FetchOrchestrationItem(high, hLock, 0, nil)
		require.NoError(t, err)
		require.NotNil(t, item)
	}), "")
}

// TestPriorityBackgroundHigh: with BackgroundPriority High the provider
// sends no level at all, background or not: the requests are those it
// sent before priorities existed. Seen failing with the option ignored
// (newProvider not passing it to the store): the idle poll went Low.
func TestPriorityBackgroundHigh(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{BackgroundPriority: azcosmos.PriorityLevelHigh}, withoutLag())
	ctx := t.Context()
	rec := recordWire(h.srv)
	requireAll(t, "idle fetch", rec.during(t, func() {
		item, err := h.p.FetchOrchestrationItem(ctx, hLock, 0, nil)
		require.NoError(t, err)
		require.Nil(t, item)
	}), "")
	requireAll(t, "maintenance", rec.during(t, func() {
		_, err := h.p.RunMaintenance(ctx)
		require.NoError(t, err)
	}), "")
	requireAll(t, "hinted Low", rec.during(t, func() {
		_, err := h.p.SearchInstances(duroxide.WithRequestPriority(ctx, duroxide.PriorityLow), duroxide.InstanceQuery{})
		require.NoError(t, err)
	}), "")
}

// TestPriorityOptionChecked: a BackgroundPriority that is neither level
// is a configuration error, not a silent default.
func TestPriorityOptionChecked(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, nil)
	_, err := cdb.New(t.Context(), cdb.Config{Endpoint: srv.Endpoint(), Key: srv.Key(), SkipBootstrap: true},
		&cdb.Options{BackgroundPriority: "low"})
	require.ErrorIs(t, err, cdb.ErrConfig)
	require.False(t, duroxide.IsRetryable(err))
	require.True(t, strings.Contains(err.Error(), "BackgroundPriority"), err.Error())
	c, err := srv.Client().NewContainer("db", "coll")
	require.NoError(t, err)
	_, err = cdb.NewWithContainer(context.Background(), c, &cdb.Options{BackgroundPriority: "Medium"})
	require.ErrorIs(t, err, cdb.ErrConfig)
}

// prioWorkload registers PrioChain (two activities in a row) and starts a
// runtime on p that polls often.
func prioWorkload(t *testing.T, p *cdb.Provider) *durable.Client {
	t.Helper()
	reg := durable.NewRegistry()
	require.NoError(t, durable.RegisterActivity(reg, "Echo", func(_ durable.ActivityContext, in string) (string, error) { return in, nil }))
	require.NoError(t, durable.RegisterOrchestration(reg, "PrioChain", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		a, err := durable.CallActivity[string](ctx, "Echo", in+"-a").Await()
		if err != nil {
			return "", err
		}
		return durable.CallActivity[string](ctx, "Echo", a+"-b").Await()
	}))
	rt, err := durable.Start(t.Context(), p, reg, &durable.Options{MinPollInterval: 10 * time.Millisecond, MaxIdlePollInterval: 50 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Shutdown(context.Background())) })
	return durable.NewClient(p)
}

// startChains starts n PrioChain instances named prefix-i; the starts are
// client writes, never background.
func startChains(t *testing.T, c *durable.Client, prefix string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		require.NoError(t, c.StartOrchestration(t.Context(), id, "PrioChain", id), "a start is not background: it is not shed")
		ids = append(ids, id)
	}
	return ids
}

func requireChainsDone(t *testing.T, c *durable.Client, ids []string) {
	t.Helper()
	for _, id := range ids {
		st, err := c.WaitForOrchestration(t.Context(), id, durable.WaitOptions{Timeout: time.Minute})
		require.NoError(t, err)
		require.Equal(t, durable.StateCompleted, st.State, "%s: %s", id, st.Output)
		require.Equal(t, id+"-a-b", st.Output)
	}
}

// TestPriorityLowThrottledWorkCompletes: while every Low request is
// answered 429/3092 (a container over its RU/s shedding low-priority
// work), clients' starts still succeed and a background call fails
// retryable with the service's throttle; once the shedding stops the
// instances started during it complete. While every other Low request is
// shed, instances complete with the shedding still on.
func TestPriorityLowThrottledWorkCompletes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{Retry: cdb.RetryOptions{MaxThrottleRetries: 3}}, withoutLag())
	c := prioWorkload(t, h.p)

	var shed atomic.Int64
	all := cosmostest.LowPriorityThrottle(20 * time.Millisecond)
	all.Match = func(*http.Request) bool { shed.Add(1); return true }
	stop := h.srv.InjectFault(all)
	ids := startChains(t, c, "shed-all", 4)
	_, err := h.p.SearchInstances(t.Context(), duroxide.InstanceQuery{})
	var re *cdb.RequestError
	require.ErrorAs(t, err, &re, "a background call meets the shedding")
	require.Equal(t, http.StatusTooManyRequests, re.StatusCode)
	require.Equal(t, cosmostest.SubStatusLowPriorityThrottled, re.SubStatus)
	require.True(t, duroxide.IsRetryable(err), "a shed request is retryable: %v", err)
	eventually(t, 10*time.Second, func() bool { return shed.Load() > 20 }, "the dispatchers' polls are shed")
	stop()
	requireChainsDone(t, c, ids)

	var n, halfShed atomic.Int64
	half := cosmostest.LowPriorityThrottle(5 * time.Millisecond)
	half.Match = func(*http.Request) bool {
		if n.Add(1)%2 == 0 {
			return false
		}
		halfShed.Add(1)
		return true
	}
	stop = h.srv.InjectFault(half)
	defer stop()
	requireChainsDone(t, c, startChains(t, c, "shed-half", 4))
	require.Positive(t, halfShed.Load(), "Low requests were shed while the instances ran")
}

// TestPriorityBackgroundHighIsNotShed: with BackgroundPriority High
// nothing is sent Low, so shedding Low requests touches nothing: the
// instances complete with the shedding on from start to end. Seen
// failing with the option ignored: no instance completed while every
// poll was shed.
func TestPriorityBackgroundHighIsNotShed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{BackgroundPriority: azcosmos.PriorityLevelHigh}, withoutLag())
	var shed atomic.Int64
	f := cosmostest.LowPriorityThrottle(20 * time.Millisecond)
	f.Match = func(*http.Request) bool { shed.Add(1); return true }
	defer h.srv.InjectFault(f)()
	c := prioWorkload(t, h.p)
	requireChainsDone(t, c, startChains(t, c, "not-shed", 4))
	_, err := h.p.SearchInstances(t.Context(), duroxide.InstanceQuery{})
	require.NoError(t, err)
	require.Zero(t, shed.Load(), "no request was sent Low")
	for op := range h.srv.Counts() {
		require.Zero(t, h.srv.Stats(op).LowPriorityRequests, "%s: no request was sent Low", op)
	}
}
