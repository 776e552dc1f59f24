package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/durable"
)

// The span tree of one orchestration: the client's start is the root; the
// first turn is its child; every later turn is the child of the span that
// enqueued its message (activity, child orchestration); every activity is
// the child of the turn that scheduled it; the sub-orchestration's first
// turn is the child of the parent's turn; every Cosmos request is nested
// under the span that made it. The runtime never sees the client's
// context: the only way the turn can find its parent is the traceparent
// stored with the queue document in Cosmos, which is what makes a trace
// survive restarts and moves between workers.
func TestSpanTreeOfOneOrchestration(t *testing.T) {
	out, err := workload(t.Context(), setupTelemetry())
	require.NoError(t, err)
	require.Equal(t, "book reserved charged dispatched", out.output)

	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range out.spans {
		byID[s.SpanContext().SpanID()] = s
	}
	parentOf := func(s sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan { return byID[s.Parent().SpanID()] }

	var start sdktrace.ReadOnlySpan
	for _, s := range out.spans {
		if s.Name() == "client start_orchestration" {
			require.Nil(t, start, "one client start")
			start = s
		}
	}
	require.NotNil(t, start)
	assert.Equal(t, "order-1", attr(start, "duroxide.instance_id"))
	traceID := start.SpanContext().TraceID()

	names := map[string]int{}
	for _, s := range out.spans {
		if s.SpanContext().TraceID() != traceID {
			continue
		}
		names[s.Name()]++
		switch {
		case strings.HasPrefix(s.Name(), "orchestration "):
			p := parentOf(s)
			require.NotNil(t, p, "turn %s has its parent in the trace", s.Name())
			assert.Regexp(t, "^(client start_orchestration|activity |orchestration )", p.Name())
			assert.NotEmpty(t, attr(s, "duroxide.outcome"))
			assert.Contains(t, childNames(out.spans, s), "execute_batch duroxide", "the ack's Cosmos batch is under the turn")
		case strings.HasPrefix(s.Name(), "activity "):
			p := parentOf(s)
			require.NotNil(t, p)
			assert.True(t, strings.HasPrefix(p.Name(), "orchestration "), "activity %s under a turn, got %s", s.Name(), p.Name())
			assert.Equal(t, attr(p, "duroxide.instance_id"), attr(s, "duroxide.instance_id"))
			assert.Equal(t, "completed", attr(s, "duroxide.outcome"))
			assert.Contains(t, childNames(out.spans, s), "execute_batch duroxide", "the activity's ack is under it")
		case strings.HasPrefix(s.Name(), "HTTP "):
			assert.Contains(t, parentOf(s).Name(), " duroxide", "an HTTP attempt is under its Cosmos operation")
		}
	}
	assert.Equal(t, 4, names["orchestration Order"], "Order: start, after Reserve, after Charge, after Ship")
	assert.Equal(t, 2, names["orchestration Ship"])
	assert.Equal(t, 1, names["activity Reserve"])
	assert.Equal(t, 1, names["activity Charge"])
	assert.Equal(t, 1, names["activity Dispatch"])

	// The first Order turn hangs off the client start; the first Ship turn
	// off an Order turn.
	var firstOrder, firstShip sdktrace.ReadOnlySpan
	for _, s := range out.spans {
		if s.Name() == "orchestration Order" && attr(s, "duroxide.history.events") == "0" {
			firstOrder = s
		}
		if s.Name() == "orchestration Ship" && attr(s, "duroxide.history.events") == "0" {
			firstShip = s
		}
	}
	require.NotNil(t, firstOrder)
	require.NotNil(t, firstShip)
	assert.Equal(t, start.SpanContext().SpanID(), firstOrder.Parent().SpanID())
	assert.Equal(t, "orchestration Order", parentOf(firstShip).Name())
	assert.Equal(t, traceID, firstShip.SpanContext().TraceID())
}

// The counters move as docs/operations.md says.
func TestMetricsMoveAsDocumented(t *testing.T) {
	out, err := workload(t.Context(), setupTelemetry())
	require.NoError(t, err)
	m := out.metrics

	assert.Equal(t, int64(1), sum(m, "duroxide.orchestration.turns", "duroxide.orchestration=Order", "duroxide.outcome=completed"))
	assert.Equal(t, int64(3), sum(m, "duroxide.orchestration.turns", "duroxide.orchestration=Order", "duroxide.outcome=continue"))
	assert.Equal(t, int64(1), sum(m, "duroxide.orchestration.turns", "duroxide.orchestration=Ship", "duroxide.outcome=completed"))
	assert.Equal(t, int64(3), sum(m, "duroxide.activity.executions", "duroxide.outcome=completed"))
	assert.Equal(t, int64(0), sum(m, "duroxide.failures"))
	assert.Equal(t, int64(0), sum(m, "duroxide.dispatcher.busy_slots"), "every slot is free again")
	assert.Equal(t, uint64(6), histCount(m, "duroxide.orchestration.turn.duration"))
	assert.Equal(t, uint64(3), histCount(m, "duroxide.activity.duration"))
	// Six turns, three activities: each acks with one transactional batch.
	assert.GreaterOrEqual(t, sum(m, "cdb.cosmos.requests", "cdb.operation=batch"), int64(9))
	assert.Greater(t, fsum(m, "cdb.cosmos.request.charge"), 0.0)
	assert.Equal(t, int64(0), sum(m, "cdb.cosmos.throttles"))

	slots, depths := 0, 0
	for _, g := range out.gauges {
		for _, p := range g.Data.(metricdata.Gauge[int64]).DataPoints {
			switch g.Name {
			case "duroxide.dispatcher.slots":
				slots += int(p.Value)
			case "duroxide.queue.depth":
				depths++
			}
		}
	}
	assert.Equal(t, 4, slots, "two orchestration and two worker slots by default")
	assert.Equal(t, 2, depths, "one depth per queue (QueueDepthMetrics is on)")
}

// The example prints the tree and the metrics.
func TestRunPrintsTreeAndMetrics(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, run(t.Context(), &buf))
	s := buf.String()
	assert.Contains(t, s, "client start_orchestration")
	assert.Contains(t, s, "    orchestration Order")
	assert.Contains(t, s, "duroxide.orchestration.turns")
	assert.Contains(t, s, "cdb.cosmos.request.charge")
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.Emit()
		}
	}
	return ""
}

func childNames(spans []sdktrace.ReadOnlySpan, parent sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		if s.Parent().SpanID() == parent.SpanContext().SpanID() {
			out = append(out, s.Name())
		}
	}
	return out
}

// matches reports whether set holds every "key=value" of want.
func matches(set attribute.Set, want []string) bool {
	for _, w := range want {
		k, v, _ := strings.Cut(w, "=")
		got, ok := set.Value(attribute.Key(k))
		if !ok || got.Emit() != v {
			return false
		}
	}
	return true
}

func sum(rm metricdata.ResourceMetrics, name string, want ...string) int64 {
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if d, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
				for _, p := range d.DataPoints {
					if matches(p.Attributes, want) {
						n += p.Value
					}
				}
			}
		}
	}
	return n
}

func fsum(rm metricdata.ResourceMetrics, name string) float64 {
	var n float64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if d, ok := m.Data.(metricdata.Sum[float64]); ok && m.Name == name {
				for _, p := range d.DataPoints {
					n += p.Value
				}
			}
		}
	}
	return n
}

func histCount(rm metricdata.ResourceMetrics, name string) uint64 {
	var n uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if d, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == name {
				for _, p := range d.DataPoints {
					n += p.Count
				}
			}
		}
	}
	return n
}

// A trace survives a restart: the client starts the instance through one
// provider while no runtime runs; a new provider and runtime (another
// process, as far as the store knows) later run it, and its first turn is
// still the child of the client's span.
func TestTraceSurvivesRestart(t *testing.T) {
	ctx := t.Context()
	tel := setupTelemetry()
	srv, err := cosmostest.NewServer(nil)
	require.NoError(t, err)
	defer srv.Close()
	cfg := cdb.Config{Endpoint: srv.Endpoint(), Key: srv.Key()}
	opts := &cdb.Options{TracerProvider: tel.tp, MaintenanceInterval: -1}

	before, err := cdb.New(ctx, cfg, opts)
	require.NoError(t, err)
	client := durable.NewClient(before, durable.ClientOptions{TracerProvider: tel.tp})
	require.NoError(t, client.StartOrchestration(ctx, "restart-1", "Ship", "parcel"))
	require.NoError(t, before.Close())

	after, err := cdb.New(ctx, cfg, opts)
	require.NoError(t, err)
	defer after.Close()
	reg, err := register()
	require.NoError(t, err)
	rt, err := durable.Start(ctx, after, reg, &durable.Options{TracerProvider: tel.tp})
	require.NoError(t, err)
	st, err := durable.NewClient(after).WaitForOrchestration(ctx, "restart-1", durable.WaitOptions{Timeout: time.Minute})
	require.NoError(t, err)
	require.NoError(t, rt.Shutdown(ctx))
	require.Equal(t, durable.StateCompleted, st.State)

	var start, first sdktrace.ReadOnlySpan
	for _, s := range tel.spans.Ended() {
		switch {
		case s.Name() == "client start_orchestration":
			start = s
		case s.Name() == "orchestration Ship" && attr(s, "duroxide.history.events") == "0":
			first = s
		}
	}
	require.NotNil(t, start)
	require.NotNil(t, first)
	assert.Equal(t, start.SpanContext().TraceID(), first.SpanContext().TraceID())
	assert.Equal(t, start.SpanContext().SpanID(), first.Parent().SpanID())
	assert.True(t, first.Parent().IsRemote(), "the parent came from the store")
}

// Poison and failure counters: an activity no runtime registers is
// abandoned until it exceeds MaxAttempts, then failed as poison.
func TestPoisonIsCounted(t *testing.T) {
	ctx := t.Context()
	tel := setupTelemetry()
	srv, err := cosmostest.NewServer(nil)
	require.NoError(t, err)
	defer srv.Close()
	p, err := cdb.New(ctx, cdb.Config{Endpoint: srv.Endpoint(), Key: srv.Key()},
		&cdb.Options{TracerProvider: tel.tp, MeterProvider: tel.mp, MaintenanceInterval: -1})
	require.NoError(t, err)
	defer p.Close()
	reg := durable.NewRegistry()
	require.NoError(t, durable.RegisterOrchestration(reg, "CallsMissing", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallActivity[string](ctx, "Missing", in).Await()
	}))
	rt, err := durable.Start(ctx, p, reg, &durable.Options{TracerProvider: tel.tp, MeterProvider: tel.mp, MaxAttempts: 2,
		UnregisteredBackoff: durable.Backoff{Base: time.Millisecond, Max: 5 * time.Millisecond}})
	require.NoError(t, err)
	client := durable.NewClient(p)
	require.NoError(t, client.StartOrchestration(ctx, "poison-1", "CallsMissing", "x"))
	st, err := client.WaitForOrchestration(ctx, "poison-1", durable.WaitOptions{Timeout: time.Minute})
	require.NoError(t, err)
	require.NoError(t, rt.Shutdown(ctx))
	require.Equal(t, durable.StateFailed, st.State)

	var m metricdata.ResourceMetrics
	require.NoError(t, tel.reader.Collect(ctx, &m))
	assert.Equal(t, int64(1), sum(m, "duroxide.poison.messages", "duroxide.queue=worker"))
	assert.Equal(t, int64(1), sum(m, "duroxide.failures", "duroxide.activity=Missing", "duroxide.failure.kind=poison"))
	assert.Equal(t, int64(1), sum(m, "duroxide.activity.executions", "duroxide.activity=Missing", "duroxide.outcome=poison"))
	assert.Equal(t, int64(2), sum(m, "duroxide.activity.executions", "duroxide.activity=Missing", "duroxide.outcome=abandoned"),
		"two fetches were abandoned (not registered) before the third was poison")
	assert.Equal(t, int64(1), sum(m, "duroxide.orchestration.turns", "duroxide.orchestration=CallsMissing", "duroxide.outcome=failed"))
}

// A nondeterministic turn under the default NondeterminismBlock policy is
// counted by duroxide.orchestration.nondeterminism (outcome blocked), once
// per blocked turn, and the turn's own outcome is blocked.
func TestNondeterminismIsCounted(t *testing.T) {
	ctx := t.Context()
	tel := setupTelemetry()
	srv, err := cosmostest.NewServer(nil)
	require.NoError(t, err)
	defer srv.Close()
	p, err := cdb.New(ctx, cdb.Config{Endpoint: srv.Endpoint(), Key: srv.Key()}, &cdb.Options{MaintenanceInterval: -1})
	require.NoError(t, err)
	defer p.Close()
	swap := func(first string) *durable.Registry {
		reg := durable.NewRegistry()
		for _, name := range []string{"A", "B"} {
			require.NoError(t, durable.RegisterActivity(reg, name, func(_ durable.ActivityContext, in string) (string, error) { return in, nil }))
		}
		require.NoError(t, durable.RegisterOrchestration(reg, "Swap", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			if _, err := durable.CallActivity[string](ctx, first, in).Await(); err != nil {
				return "", err
			}
			return durable.WaitEvent[string](ctx, "go").Await()
		}))
		return reg
	}
	client := durable.NewClient(p)
	rt, err := durable.Start(ctx, p, swap("A"), nil)
	require.NoError(t, err)
	require.NoError(t, client.StartOrchestration(ctx, "swap-1", "Swap", "x"))
	require.Eventually(t, func() bool {
		h, err := p.Read(ctx, "swap-1")
		return err == nil && len(h) == 4 // started, scheduled, completed, subscribed
	}, time.Minute, 5*time.Millisecond)
	require.NoError(t, rt.Shutdown(ctx))

	rt, err = durable.Start(ctx, p, swap("B"), &durable.Options{TracerProvider: tel.tp, MeterProvider: tel.mp,
		NondeterminismBackoff: durable.Backoff{Base: time.Millisecond, Max: 5 * time.Millisecond}})
	require.NoError(t, err)
	require.NoError(t, client.RaiseEvent(ctx, "swap-1", "go", "now"))
	require.Eventually(t, func() bool {
		st, err := client.Status(ctx, "swap-1")
		return err == nil && st.State == durable.StateBlocked
	}, time.Minute, 5*time.Millisecond)
	require.NoError(t, rt.Shutdown(ctx))

	var m metricdata.ResourceMetrics
	require.NoError(t, tel.reader.Collect(ctx, &m))
	blocked := sum(m, "duroxide.orchestration.nondeterminism", "duroxide.orchestration=Swap", "duroxide.outcome=blocked")
	assert.Positive(t, blocked)
	assert.Equal(t, blocked, sum(m, "duroxide.orchestration.turns", "duroxide.orchestration=Swap", "duroxide.outcome=blocked"))
	assert.Equal(t, int64(0), sum(m, "duroxide.orchestration.turns", "duroxide.orchestration=Swap", "duroxide.outcome=failed"))
	assert.Equal(t, int64(0), sum(m, "duroxide.failures"), "a blocked instance has not failed")
}
