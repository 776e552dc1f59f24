package durable

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/duroxide-go/cdb/duroxide"
)

// The SDK-backed span-tree and metric tests (client start → turns →
// activities → Cosmos calls) live in examples/otel, a module of its own so
// that the OpenTelemetry SDK stays out of this module's go.mod. The tests
// here use a minimal recording TracerProvider written against the API.

// Orchestration code that logs through ctx.TraceInfo runs again on every
// turn (replay), but each line is logged once: on the turn that first ran
// past it.
func TestReplaySafeLogsAppearOnce(t *testing.T) {
	var logs syncBuffer
	reg := NewRegistry()
	require.NoError(t, RegisterActivity(reg, "Step", func(_ ActivityContext, in string) (string, error) { return in + "!", nil }))
	require.NoError(t, RegisterOrchestration(reg, "Chatty", func(ctx *OrchestrationContext, in string) (string, error) {
		ctx.TraceInfo("chatty: before first")
		a, err := CallActivity[string](ctx, "Step", in).Await()
		if err != nil {
			return "", err
		}
		ctx.TraceInfo("chatty: between")
		b, err := CallActivity[string](ctx, "Step", a).Await()
		ctx.Logger().Info("chatty: done", "result", b)
		return b, err
	}))
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rt := startRuntime(t, newMemProvider(), reg, Options{Logger: logger})
	require.NoError(t, rt.Client().StartOrchestration(t.Context(), "chatty-1", "Chatty", "x"))
	st := waitDone(t, rt.Client(), "chatty-1")
	require.Equal(t, StateCompleted, st.State)
	require.Equal(t, "x!!", st.Output)
	out := logs.String()
	for _, line := range []string{"chatty: before first", "chatty: between", "chatty: done"} {
		assert.Equal(t, 1, strings.Count(out, line), "%q logged once across three turns:\n%s", line, out)
	}
	assert.Contains(t, out, "instance_id=chatty-1")
	assert.Contains(t, out, "execution_id=1")
}

// Turn, activity and client spans carry their attributes and outcomes;
// failures carry their kind and an Error status. The runtime ends each
// span on the goroutine that ran the work, after its ack has released the
// lock, so spans may end in any order and after the client has seen the
// orchestration finish: the second subtest forces the worst such order.
func TestSpansCarryOutcomesAndFailureKinds(t *testing.T) {
	t.Run("ended as they ran", func(t *testing.T) {
		checkSpanOutcomes(t, &recTracerProvider{})
	})
	t.Run("ended out of order", func(t *testing.T) {
		checkSpanOutcomes(t, lateTracerProvider(t))
	})
}

// lateTracerProvider records spans but ends them as late as a loaded
// scheduler may: the first turn's span only after the second turn's has
// ended (each slot ends its span after its ack, and the second turn can
// be fetched, run and acked by another slot in between), and the
// activity's span only after the test has first looked for it (the
// worker ends it after the ack that lets the orchestration finish).
func lateTracerProvider(t *testing.T) *recTracerProvider {
	secondTurnEnded := make(chan struct{})
	activityLookedFor := make(chan struct{})
	var looked sync.Once
	return &recTracerProvider{
		beforeEnd: func(s *recSpan) {
			var wait <-chan struct{}
			switch {
			case s.name == "orchestration Fails" && s.attr(attrOutcome) == "continue":
				wait = secondTurnEnded
			case s.name == "activity Boom":
				wait = activityLookedFor
			default:
				return
			}
			select {
			case <-wait:
			case <-t.Context().Done(): // the test ended without the other span
			}
		},
		afterEnd: func(s *recSpan) {
			if s.name == "orchestration Fails" && s.attr(attrOutcome) == "failed" {
				close(secondTurnEnded)
			}
		},
		lookedFor: func(name string) {
			if name == "activity Boom" {
				looked.Do(func() { close(activityLookedFor) })
			}
		},
	}
}

// checkSpanOutcomes runs an orchestration whose only activity fails and
// checks the spans tp recorded.
func checkSpanOutcomes(t *testing.T, tp *recTracerProvider) {
	reg := NewRegistry()
	require.NoError(t, RegisterActivity(reg, "Boom", func(ActivityContext, string) (string, error) {
		return "", errors.New("boom")
	}))
	require.NoError(t, RegisterOrchestration(reg, "Fails", func(ctx *OrchestrationContext, in string) (string, error) {
		return CallActivity[string](ctx, "Boom", in).Await()
	}))
	rt := startRuntime(t, newMemProvider(), reg, Options{TracerProvider: tp})
	c := rt.Client()
	require.NoError(t, c.StartOrchestration(t.Context(), "fails-1", "Fails", "x"))
	st := waitDone(t, c, "fails-1")
	require.Equal(t, StateFailed, st.State)
	// The client saw the orchestration fail, but the slots may not have
	// ended their spans yet: wait for every span checked below.
	requireEventually(t, func() bool {
		return len(tp.named("orchestration Fails")) == 2 && len(tp.named("activity Boom")) == 1
	}, "both turns and the activity ended")

	start := tp.named("client start_orchestration")
	require.Len(t, start, 1)
	assert.Equal(t, "fails-1", start[0].attr(attrInstance))
	assert.Equal(t, "Fails", start[0].attr(attrOrchestation))

	turns := tp.named("orchestration Fails")
	assert.Equal(t, "continue", turns[0].attr(attrOutcome))
	assert.Equal(t, "0", turns[0].attr(attrHistory))
	assert.Equal(t, "1", turns[0].attr(attrWorkerItems))
	assert.Equal(t, codes.Unset, turns[0].status)
	assert.Equal(t, "failed", turns[1].attr(attrOutcome))
	assert.Equal(t, "application", turns[1].attr(attrKind))
	assert.Equal(t, codes.Error, turns[1].status)
	for _, s := range turns {
		assert.Equal(t, "fails-1", s.attr(attrInstance))
		assert.Equal(t, "1", s.attr(attrExecution))
	}

	acts := tp.named("activity Boom")
	require.Len(t, acts, 1)
	assert.Equal(t, "failed", acts[0].attr(attrOutcome))
	assert.Equal(t, "application", acts[0].attr(attrKind))
	assert.Equal(t, "2", acts[0].attr(attrActivityID))
	assert.Equal(t, codes.Error, acts[0].status)

	wait := tp.named("client wait_for_orchestration")
	require.NotEmpty(t, wait)
}

// TraceParent and withTraceParent round-trip a span context; junk is
// ignored.
func TestTraceParentRoundTrip(t *testing.T) {
	assert.Empty(t, TraceParent(t.Context()))
	tp := &recTracerProvider{}
	ctx, span := tp.Tracer("t").Start(t.Context(), "s")
	defer span.End()
	tpStr := TraceParent(ctx)
	require.Regexp(t, "^00-[0-9a-f]{32}-[0-9a-f]{16}-01$", tpStr)
	back := trace.SpanContextFromContext(withTraceParent(t.Context(), tpStr))
	assert.Equal(t, span.SpanContext().TraceID(), back.TraceID())
	assert.Equal(t, span.SpanContext().SpanID(), back.SpanID())
	assert.True(t, back.IsRemote())
	assert.False(t, trace.SpanContextFromContext(withTraceParent(t.Context(), "garbage")).IsValid())
}

// BenchmarkTelemetryOff measures what the telemetry hooks cost with no
// SDK installed (no-op providers, the default): it runs whole
// orchestrations (two turns and one activity each) on the in-memory
// provider, then times the hooks of those two turns and one activity
// alone, and reports their share of one orchestration as overhead-%.
func BenchmarkTelemetryOff(b *testing.B) {
	reg := NewRegistry()
	_ = RegisterActivity(reg, "Echo", func(_ ActivityContext, in string) (string, error) { return in, nil })
	_ = RegisterOrchestration(reg, "One", func(ctx *OrchestrationContext, in string) (string, error) {
		return CallActivity[string](ctx, "Echo", in).Await()
	})
	rt, err := Start(b.Context(), newMemProvider(), reg, fastOptions(Options{}))
	require.NoError(b, err)
	defer func() { _ = rt.Shutdown(b.Context()) }()
	c := rt.Client()
	b.ResetTimer()
	began := time.Now()
	for i := range b.N {
		id := "bench-" + string(rune('a'+i%26)) + "-" + time.Now().Format("150405.000000000")
		if err := c.StartOrchestration(b.Context(), id, "One", "x"); err != nil {
			b.Fatal(err)
		}
		if _, err := c.WaitForOrchestration(b.Context(), id, WaitOptions{Timeout: time.Minute}); err != nil {
			b.Fatal(err)
		}
	}
	perOrchestration := time.Since(began) / time.Duration(b.N)
	b.StopTimer()

	tel := newTelemetry(tracenoop.NewTracerProvider(), metricnoop.NewMeterProvider())
	item := &duroxide.OrchestrationItem{Instance: "i", OrchestrationName: "One", ExecutionID: 1, LockToken: "t"}
	locked := &duroxide.LockedWorkItem{LockToken: "w"}
	act := duroxide.ActivityExecuteItem{Instance: "i", ExecutionID: 1, ID: 2, Name: "Echo"}
	oc := &duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: duroxide.ExecutionMetadata{}}
	const rounds = 2000
	hooksBegan := time.Now()
	for range rounds {
		for range 2 { // two turns
			end := tel.startTurn(b.Context(), item, time.Now())
			_ = tel.context("t", b.Context())
			tel.committed("t", oc)
			end()
		}
		end := tel.startActivity(b.Context(), locked, act)
		tel.acked("w", duroxide.ActivityCompletedItem{})
		end()
	}
	perHooks := time.Since(hooksBegan) / rounds
	b.ReportMetric(float64(perHooks.Nanoseconds()), "hook-ns/orchestration")
	b.ReportMetric(100*float64(perHooks)/float64(perOrchestration), "overhead-%")
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// recTracerProvider records ended spans (API only, no SDK).
type recTracerProvider struct {
	embedded.TracerProvider
	mu    sync.Mutex
	ended []*recSpan
	next  atomic.Uint64

	// Optional hooks that let a test delay spans' ends as a loaded
	// scheduler could: beforeEnd and afterEnd run on the goroutine ending
	// a span, lookedFor on the test's each time it looks spans up.
	beforeEnd, afterEnd func(*recSpan)
	lookedFor           func(name string)
}

func (p *recTracerProvider) Tracer(string, ...trace.TracerOption) trace.Tracer {
	return recTracer{p: p}
}

// named returns the ended spans called name, in the order they started:
// work that follows other work starts after it, but the goroutines that
// ran them may end their spans in either order.
func (p *recTracerProvider) named(name string) []*recSpan {
	if p.lookedFor != nil {
		p.lookedFor(name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*recSpan
	for _, s := range p.ended {
		if s.name == name {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *recSpan) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

type recTracer struct {
	embedded.Tracer
	p *recTracerProvider
}

func (t recTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	cfg := trace.NewSpanStartConfig(opts...)
	parent := trace.SpanContextFromContext(ctx)
	var tid trace.TraceID
	var sid trace.SpanID
	n := t.p.next.Add(1)
	if parent.IsValid() {
		tid = parent.TraceID()
	} else {
		binary.BigEndian.PutUint64(tid[8:], n)
	}
	binary.BigEndian.PutUint64(sid[:], n)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	s := &recSpan{p: t.p, seq: n, name: name, sc: sc, parent: parent, attrs: append([]attribute.KeyValue{}, cfg.Attributes()...)}
	return trace.ContextWithSpan(ctx, s), s
}

type recSpan struct {
	tracenoop.Span
	p      *recTracerProvider
	seq    uint64 // start order
	name   string
	sc     trace.SpanContext
	parent trace.SpanContext
	mu     sync.Mutex
	attrs  []attribute.KeyValue
	status codes.Code
}

func (s *recSpan) SpanContext() trace.SpanContext { return s.sc }
func (s *recSpan) IsRecording() bool              { return true }
func (s *recSpan) SetAttributes(kv ...attribute.KeyValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attrs = append(s.attrs, kv...)
}
func (s *recSpan) SetStatus(c codes.Code, _ string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = c
}
func (s *recSpan) End(...trace.SpanEndOption) {
	if s.p.beforeEnd != nil {
		s.p.beforeEnd(s)
	}
	s.p.mu.Lock()
	s.p.ended = append(s.p.ended, s)
	s.p.mu.Unlock()
	if s.p.afterEnd != nil {
		s.p.afterEnd(s)
	}
}

// attr is the last value set for key.
func (s *recSpan) attr(key attribute.Key) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := ""
	for _, a := range s.attrs {
		if a.Key == key {
			v = a.Value.Emit()
		}
	}
	return v
}

// BenchmarkTelemetryHooks reports the allocations of one turn's and one
// activity's hooks with the global providers (no SDK installed), which a
// runtime without TracerProvider or MeterProvider uses.
func BenchmarkTelemetryHooks(b *testing.B) {
	tel := newTelemetry(nil, nil)
	item := &duroxide.OrchestrationItem{Instance: "i", OrchestrationName: "One", ExecutionID: 1, LockToken: "t"}
	locked := &duroxide.LockedWorkItem{LockToken: "w"}
	act := duroxide.ActivityExecuteItem{Instance: "i", ExecutionID: 1, ID: 2, Name: "Echo"}
	done := duroxide.StatusCompleted
	oc := &duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: duroxide.ExecutionMetadata{Status: &done}}
	b.ReportAllocs()
	for b.Loop() {
		end := tel.startTurn(b.Context(), item, time.Now())
		tel.committed("t", oc)
		end()
		end = tel.startActivity(b.Context(), locked, act)
		tel.acked("w", duroxide.ActivityCompletedItem{})
		end()
	}
}
