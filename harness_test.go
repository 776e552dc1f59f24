package cdb_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testbackend"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// This file is the root package's one test harness (newHarness and its
// options): one in-process cosmostest server per test (or a backend),
// providers built with cdb.New on it, direct access to the stored
// documents to check what was (not) written, a manual clock for the
// live-actor tests and the request metering of the cost tests and
// benchmarks (bench_helpers_test.go). The explorer's per-schedule world
// and the validation suite's factory (providertest.Factory) build their
// providers themselves: thousands of schedules share one server, and the
// suite asks for a fresh container per test.
//
// Parallelism: a test that owns its server (a harness, its own
// cosmostest server or backend database) and asserts no timing calls
// t.Parallel. These stay serial, so nothing else competes for the CPU
// while they run: the lease tests (lease renewal and expiry run on wall
// time), tests of background reconcilers and retry delays (their waits and
// Retry-After checks are timed), the lagging-replica test (its staleness
// window is wall time), the two-process contention test, the request-budget
// tests (their counts settle within a wall-clock bound), the startup
// deadline and refused-connection tests, the large-turn crash test (it
// waits for a lock to expire) and tests that set environment variables.
// Pure unit tests without a server stay serial too: they take microseconds.

const (
	hDatabase  = "hdb"
	hContainer = "hcoll"
	// hLock is the lock timeout the harness tests fetch with: long enough
	// that no lock expires during a test.
	hLock = 30 * time.Second
)

// harness is one container, bootstrapped by a first provider (p), on a
// cosmostest server of its own or a backend.
type harness struct {
	t   testing.TB
	ctx context.Context    // t.Context()
	srv *cosmostest.Server // nil on a backend other than cosmostest
	p   *cdb.Provider
	// served counts the requests the harness's own server has finished,
	// stats included (nil on a backend): the server counts a response's
	// documents and bytes only after writing it, so a client can see a
	// response before its stats land (settle waits for them).
	served *atomic.Int64

	// Where the container is; on other backends, how to reach it.
	endpoint, key, db, coll string
	clientOpts              *azcosmos.ClientOptions
	sdk                     *azcosmos.ContainerClient // direct SDK access: setup and checks, never measured

	// clock is the manual clock of the providers actor opens (nil unless
	// withManualClock).
	clock *manualClock
}

// hClientOptions turns the SDK's own retries off, so a fault injected
// once is seen once and request counts are exact.
func hClientOptions() *azcosmos.ClientOptions {
	o := &azcosmos.ClientOptions{}
	o.Retry = policy.RetryOptions{MaxRetries: -1}
	return o
}

// manualClock is a clock shared by several providers (testhooks.Seam.Now);
// it only moves when a test advances it. It starts on a whole millisecond,
// the resolution of the expiries the provider stores, so a lock or lease
// expires exactly when a test advances the clock past it.
type manualClock struct{ ns atomic.Int64 }

func newManualClock() *manualClock {
	c := &manualClock{}
	c.ns.Store(time.Now().Truncate(time.Millisecond).UnixNano())
	return c
}

func (c *manualClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *manualClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// harnessOption chooses what newHarness builds. The default is a
// cosmostest server of its own with lagging replicas and one partition-key
// range, and a first provider that bootstraps the container.
type harnessOption func(*harnessConfig)

type harnessConfig struct {
	server   cosmostest.Options
	backend  *testbackend.Backend
	clock    *manualClock
	seam     testhooks.Seam // the first provider's (withSeam)
	db, coll string
}

// withoutLag runs the server without lagging replicas. Two groups of tests
// use it, each an open finding rather than a property of the tests: the
// Cosmos lease tests (lease documents of other processes are read stale,
// so convergence takes longer there; ETag-conditional claims keep it
// safe), and tests that hand one process's lock token or session owner to
// another process (that process has no session token for the partition,
// so its first read may miss the item; the runtime only ever renews its
// own locks and sessions). The live-actor and multi-range tests (what is
// stored after precisely staged interleavings) and the cost tests and
// benchmarks (exact request counts) use it too.
func withoutLag() harnessOption {
	return func(c *harnessConfig) { c.server.Lag = nil }
}

// withRanges gives the server's containers n physical partitions.
func withRanges(n int) harnessOption {
	return func(c *harnessConfig) { c.server.PartitionKeyRanges = n }
}

// onBackend runs on b instead of a server of the harness's own: a
// cosmostest backend's server, or a fresh database on another backend
// (deleted when t ends), whose documents are then read through the SDK.
func onBackend(b testbackend.Backend) harnessOption {
	return func(c *harnessConfig) { c.backend = &b }
}

// inContainer puts the harness's container, coll, in the database db,
// which the caller made (on a backend, instead of a fresh database): the
// validation suite's factory gives each test its own container in one
// database per run.
func inContainer(db, coll string) harnessOption {
	return func(c *harnessConfig) { c.db, c.coll = db, coll }
}

// withSeam gives the harness's first provider, the one newHarness opens,
// the test seam s (its fault hooks and clock); openWith gives one to the
// providers a test opens later.
func withSeam(s testhooks.Seam) harnessOption {
	return func(c *harnessConfig) { c.seam = s }
}

// withManualClock gives the harness a manual clock, which the providers
// actor opens read: the live-actor tests advance it to expire locks and
// leases instead of waiting.
func withManualClock() harnessOption {
	return func(c *harnessConfig) { c.clock = newManualClock() }
}

// newHarness starts a server (or takes a backend, onBackend) and opens a
// provider on it, which bootstraps the container. The outbox reconciler
// is off unless o asks for it.
func newHarness(t testing.TB, o cdb.Options, opts ...harnessOption) *harness {
	t.Helper()
	// By default the tests run on lagging replicas (the cosmostest-lagging
	// backend's settings): a read without a covering session token may miss
	// recent writes, as on a real account; reads that draw an up-to-date
	// replica behave exactly like plain cosmostest.
	c := harnessConfig{server: cosmostest.Options{Lag: testbackend.LagOptions()}}
	for _, opt := range opts {
		opt(&c)
	}
	h := &harness{t: t, ctx: t.Context(), db: cmp.Or(c.db, hDatabase), coll: cmp.Or(c.coll, hContainer), clientOpts: hClientOptions(), clock: c.clock}
	client := func() *azcosmos.Client { return h.srv.Client() }
	switch b := c.backend; {
	case b == nil:
		// The server logs each request once, after counting its response.
		h.served = &atomic.Int64{}
		c.server.Logf = func(string, ...any) { h.served.Add(1) }
		h.srv = cosmostest.New(t, &c.server)
	case b.Server != nil:
		h.srv = b.Server
		if c.db == "" {
			h.db = testbackend.NewDatabaseName(t)
		}
	default:
		h.clientOpts = b.ClientOptions()
		if c.db == "" {
			h.db = b.NewDatabase(t).ID()
		}
		client = func() *azcosmos.Client { return b.Client }
	}
	if c.backend != nil {
		h.endpoint, h.key = c.backend.Endpoint, c.backend.Key
	} else {
		h.endpoint, h.key = h.srv.Endpoint(), h.srv.Key()
	}
	h.p = h.openWith(c.seam, o)
	sdk, err := client().NewContainer(h.db, h.coll)
	require.NoError(t, err)
	h.sdk = sdk
	return h
}

// config is the key-auth Config for the harness container.
func (h *harness) config() cdb.Config {
	return cdb.Config{Endpoint: h.endpoint, Key: h.key, Database: h.db, Container: h.coll,
		ClientOptions: h.clientOpts}
}

// open creates another provider on the same container: another process.
func (h *harness) open(o cdb.Options) *cdb.Provider {
	h.t.Helper()
	return h.openWith(testhooks.Seam{}, o)
}

// openWith is open for a provider with the test seam s: the seam travels
// in the context given to cdb.New, which reads it once.
func (h *harness) openWith(s testhooks.Seam, o cdb.Options) *cdb.Provider {
	h.t.Helper()
	if o.MaintenanceInterval == 0 {
		o.MaintenanceInterval = -1
	}
	if o.MaxClockSkew == 0 {
		// The processes of one test share a clock: locks expire exactly
		// when the tests expect (clockskew_test.go checks the margin).
		o.MaxClockSkew = -1
	}
	p, err := cdb.New(testhooks.With(h.t.Context(), &s), h.config(), &o)
	require.NoError(h.t, err)
	h.t.Cleanup(func() { _ = p.Close() })
	return p
}

// actor opens a provider (another process) on the manual clock whose
// calls pass through g (nil: no hooks). Unlike open, it keeps the default
// clock-skew margin: the actors share the manual clock, and the tests
// advance it past lock expiry plus the margin.
func (h *harness) actor(g *gate) *cdb.Provider {
	h.t.Helper()
	require.NotNil(h.t, h.clock, "actor needs withManualClock")
	var hooks *testhooks.Hooks
	if g != nil {
		hooks = g.hooks()
	}
	return h.openWith(testhooks.Seam{Cosmos: hooks, Now: h.clock.now}, cdb.Options{MaxClockSkew: cdb.DefaultMaxClockSkew})
}

// ids lists the ids of instance's documents (for short failure messages).
func (h *harness) ids(instance string) []string {
	h.t.Helper()
	var out []string
	for _, d := range h.docsWhere("", instance) {
		out = append(out, fmt.Sprint(d["id"]))
	}
	return out
}

// leftovers lists the ids of instance's documents but the retired start
// record a deletion leaves in place of the instance (recreate.go): after
// a deletion, nothing else may remain.
func (h *harness) leftovers(instance string) []string {
	h.t.Helper()
	var out []string
	for _, d := range withoutRetired(h.docsWhere("", instance)) {
		out = append(out, fmt.Sprint(d["id"]))
	}
	return out
}

// withoutRetired drops from docs the retired start records deletions
// left.
func withoutRetired(docs []map[string]any) []map[string]any {
	var out []map[string]any
	for _, d := range docs {
		if retired, _ := d["retired"].(bool); !retired || d["type"] != "start_record" {
			out = append(out, d)
		}
	}
	return out
}

// docs returns every stored document.
func (h *harness) docs() []map[string]any {
	h.t.Helper()
	if h.srv != nil {
		d, err := h.srv.Documents(h.db, h.coll)
		require.NoError(h.t, err)
		return d
	}
	// Through the SDK: a cross-partition read of everything, with the
	// provider's merged session token (sessiontokens.go) so that a real
	// account's replicas show what it wrote.
	var out []map[string]any
	pager := h.sdk.NewQueryItemsPager("SELECT * FROM c", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{SessionToken: sessionTokenPtr(cdb.SessionTokenFor(h.p, ""))})
	for pager.More() {
		page, err := pager.NextPage(h.t.Context())
		require.NoError(h.t, err)
		for _, raw := range page.Items {
			var d map[string]any
			require.NoError(h.t, json.Unmarshal(raw, &d))
			out = append(out, d)
		}
	}
	return out
}

func sessionTokenPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// docsWhere returns the stored documents of type typ ("" = any) in the
// partition of instance ("" = any).
func (h *harness) docsWhere(typ, instance string) []map[string]any {
	h.t.Helper()
	var out []map[string]any
	for _, d := range h.docs() {
		if (typ == "" || d["type"] == typ) && (instance == "" || d["instanceId"] == instance) {
			out = append(out, d)
		}
	}
	return out
}

// snapshot is a comparable picture of the container: id, partition and
// ETag of every document, so "nothing was written" also catches a
// rewrite of an existing document.
func (h *harness) snapshot() []string {
	h.t.Helper()
	var out []string
	for _, d := range h.docs() {
		b, _ := json.Marshal([]any{d["instanceId"], d["id"], d["_etag"]})
		out = append(out, string(b))
	}
	sort.Strings(out)
	return out
}

// requireUnchanged fails unless the container is exactly as in before.
func (h *harness) requireUnchanged(before []string, msgAndArgs ...any) {
	h.t.Helper()
	require.Equal(h.t, before, h.snapshot(), msgAndArgs...)
}

// pkMatch matches requests addressed to the logical partition of
// instance (point operations and single-partition batches/queries).
func pkMatch(instance string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		var got []any
		if json.Unmarshal([]byte(r.Header.Get("x-ms-documentdb-partitionkey")), &got) != nil || len(got) != 1 {
			return false
		}
		s, ok := got[0].(string)
		return ok && s == instance
	}
}

// ---- work items, events, turns ----

func hptr[T any](v T) *T { return &v }

func hNowMs() uint64 { return uint64(time.Now().UnixMilli()) }

func hStart(instance string) duroxide.StartOrchestrationItem {
	return duroxide.StartOrchestrationItem{Instance: instance, Orchestration: "HOrch", Input: `{"in":1}`, Version: hptr("1.0.0"), ExecutionID: 1}
}

func hChildStart(parent, child string, parentEventID uint64) duroxide.StartOrchestrationItem {
	s := hStart(child)
	s.Orchestration = "HChild"
	s.ParentInstance = hptr(parent)
	s.ParentID = hptr(parentEventID)
	s.ParentExecutionID = hptr(uint64(1))
	return s
}

func hEvent(instance string, exec, id uint64, kind duroxide.EventKind) duroxide.Event {
	return duroxide.Event{EventID: id, InstanceID: instance, ExecutionID: exec, TimestampMs: hNowMs(), DuroxideVersion: "0.1.31", Kind: kind}
}

func hStarted(instance, name string) duroxide.Event {
	return hEvent(instance, 1, 1, duroxide.OrchestrationStarted{Name: name, Version: "1.0.0", Input: `{"in":1}`})
}

func hRunning(name string) duroxide.ExecutionMetadata {
	return duroxide.ExecutionMetadata{OrchestrationName: hptr(name), OrchestrationVersion: hptr("1.0.0")}
}

func hStatus(name, status, output string) duroxide.ExecutionMetadata {
	m := hRunning(name)
	m.Status, m.Output = hptr(status), hptr(output)
	return m
}

// mustFetchOrch fetches an orchestration item and requires one for
// instance.
func mustFetchOrch(t *testing.T, p *cdb.Provider, instance string) *duroxide.OrchestrationItem {
	t.Helper()
	item, err := p.FetchOrchestrationItem(t.Context(), hLock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item, "expected an orchestration item for %q", instance)
	require.Equal(t, instance, item.Instance)
	return item
}

// requireNoOrch requires that no orchestration item can be fetched.
func requireNoOrch(t *testing.T, p *cdb.Provider, msgAndArgs ...any) {
	t.Helper()
	item, err := p.FetchOrchestrationItem(t.Context(), hLock, 0, nil)
	require.NoError(t, err)
	if item != nil {
		require.Failf(t, "expected no orchestration item", "got %q with %d messages; %v", item.Instance, len(item.Messages), msgAndArgs)
	}
}

// createInstance starts instance with one turn (Running).
func createHInstance(t *testing.T, p *cdb.Provider, instance string) {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, p.EnqueueForOrchestrator(ctx, hStart(instance), 0))
	item := mustFetchOrch(t, p, instance)
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1, HistoryDelta: []duroxide.Event{hStarted(instance, "HOrch")}, Metadata: hRunning("HOrch"),
	}))
}

// requirePermanentErr requires a non-retryable provider error.
func requirePermanentErr(t *testing.T, err error, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	var pe *duroxide.ProviderError
	require.ErrorAs(t, err, &pe, msgAndArgs...)
	require.False(t, duroxide.IsRetryable(err), "expected a permanent error, got a retryable one: %v", err)
	require.ErrorIs(t, err, duroxide.ErrPermanent)
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, cond func() bool, msgAndArgs ...any) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			require.Fail(t, "condition not met in time", msgAndArgs...)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
