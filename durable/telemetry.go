package durable

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/duroxide-go/cdb/duroxide"
)

// OpenTelemetry for the runtime and the client. The library depends on the
// OpenTelemetry API only: with no SDK installed every tracer and meter is a
// no-op, so a service that does not configure OpenTelemetry pays for a few
// interface calls per turn and nothing more. The metric names and their
// meaning are documented in docs/operations.md.

// instrumentationName is the tracer and meter name (the import path, as
// OpenTelemetry's conventions ask).
const instrumentationName = "github.com/duroxide-go/cdb/durable"

// Span and metric attribute keys, shared with the provider's logs.
const (
	attrInstance     = attribute.Key("duroxide.instance_id")
	attrExecution    = attribute.Key("duroxide.execution_id")
	attrOrchestation = attribute.Key("duroxide.orchestration")
	attrVersion      = attribute.Key("duroxide.orchestration.version")
	attrActivity     = attribute.Key("duroxide.activity")
	attrActivityID   = attribute.Key("duroxide.activity_id")
	attrOutcome      = attribute.Key("duroxide.outcome")
	attrKind         = attribute.Key("duroxide.failure.kind")
	attrQueue        = attribute.Key("duroxide.queue")
	attrMessages     = attribute.Key("duroxide.messages")
	attrHistory      = attribute.Key("duroxide.history.events")
	attrNewEvents    = attribute.Key("duroxide.history.new_events")
	attrAttempt      = attribute.Key("duroxide.attempt")
	attrWorkerItems  = attribute.Key("duroxide.worker_items")
	attrOrchItems    = attribute.Key("duroxide.orchestrator_items")
	attrResult       = attribute.Key("duroxide.result")
	attrThreshold    = attribute.Key("duroxide.history.threshold")
)

// Queue names used as the duroxide.queue attribute.
const (
	queueOrchestrator = "orchestrator"
	queueWorker       = "worker"
)

// traceContext is the W3C propagator that turns a span context into the
// traceparent string stored with the work and back.
var traceContext = propagation.TraceContext{}

// TraceParent returns the W3C traceparent of the span in ctx ("" when ctx
// carries no valid span). Providers store it with the work they enqueue so
// that the trace continues where the work is fetched (OrchestrationItem
// and LockedWorkItem TraceParent).
func TraceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	traceContext.Inject(ctx, carrier)
	return carrier.Get("traceparent")
}

// withTraceParent returns ctx carrying traceparent as its remote parent;
// an empty or malformed traceparent leaves ctx as it is.
func withTraceParent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// telemetry holds one runtime's (or client's) tracer and instruments.
type telemetry struct {
	tracer trace.Tracer

	turns, activities, failures, poison, renewals metric.Int64Counter
	nondeterministic                              metric.Int64Counter
	busy                                          metric.Int64UpDownCounter
	turnDuration, activityDuration                metric.Float64Histogram
	historyBytes, historyEvents                   metric.Int64Histogram
	historyWarnings                               metric.Int64Counter

	// options caches metric attribute sets by their values: building a
	// set sorts and allocates, which would dominate the hooks' cost when
	// no SDK is installed.
	// A plain map, not a sync.Map, so that a lookup by the key's bytes
	// allocates nothing.
	optionsMu sync.RWMutex
	options   map[string]metric.MeasurementOption

	// active maps a lock token to the span context of the turn or
	// activity holding it, so provider calls made under that lock (ack,
	// abandon, the activity's own calls) nest under its span.
	active sync.Map // string → *workSpan
}

// workSpan is one turn or activity in flight.
type workSpan struct {
	ctx     context.Context
	span    trace.Span
	start   time.Time
	name    attribute.KeyValue // the metric attribute naming the work
	outcome string
	kind    string
}

// newTelemetry builds the instruments from the providers (nil: the
// global ones, no-ops unless the service installed an SDK).
func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) *telemetry {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(instrumentationName)
	t := &telemetry{tracer: tp.Tracer(instrumentationName)}
	// Instrument creation only fails on invalid names; ours are constants
	// and a failed instrument is still a usable no-op.
	t.turns, _ = m.Int64Counter("duroxide.orchestration.turns", metric.WithUnit("{turn}"),
		metric.WithDescription("Orchestration turns committed, by orchestration and outcome."))
	t.activities, _ = m.Int64Counter("duroxide.activity.executions", metric.WithUnit("{execution}"),
		metric.WithDescription("Activity executions finished, by activity and outcome."))
	t.failures, _ = m.Int64Counter("duroxide.failures", metric.WithUnit("{failure}"),
		metric.WithDescription("Failed orchestrations and activities, by failure kind."))
	t.poison, _ = m.Int64Counter("duroxide.poison.messages", metric.WithUnit("{message}"),
		metric.WithDescription("Messages that exceeded MaxAttempts and were failed as poison, by queue."))
	t.nondeterministic, _ = m.Int64Counter("duroxide.orchestration.nondeterminism", metric.WithUnit("{turn}"),
		metric.WithDescription("Turns whose code did not match the instance's history, by orchestration and policy (blocked or failed)."))
	t.renewals, _ = m.Int64Counter("duroxide.lock.renewals", metric.WithUnit("{renewal}"),
		metric.WithDescription("Lock renewals, by queue and result (renewed or lost)."))
	t.busy, _ = m.Int64UpDownCounter("duroxide.dispatcher.busy_slots", metric.WithUnit("{slot}"),
		metric.WithDescription("Dispatcher slots running a turn or activity now, by queue."))
	t.turnDuration, _ = m.Float64Histogram("duroxide.orchestration.turn.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from a fetched orchestration item to its commit."))
	t.activityDuration, _ = m.Float64Histogram("duroxide.activity.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from a fetched activity to its ack."))
	t.historyBytes, _ = m.Int64Histogram("duroxide.history.bytes", metric.WithUnit("By"),
		metric.WithDescription("An execution's history bytes after each committed turn, by orchestration."))
	t.historyEvents, _ = m.Int64Histogram("duroxide.history.events", metric.WithUnit("{event}"),
		metric.WithDescription("An execution's history events after each committed turn, by orchestration."))
	t.historyWarnings, _ = m.Int64Counter("duroxide.history.limit_warnings", metric.WithUnit("{execution}"),
		metric.WithDescription("Executions whose history passed 75 % or 90 % of Options.HistoryLimits, by orchestration and threshold."))
	return t
}

// observeRuntime registers the runtime's observable gauges: configured
// slots, and queue depths through the provider's admin API (read only when
// a metric reader collects).
func (t *telemetry) observeRuntime(mp metric.MeterProvider, rt *Runtime) (unregister func()) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(instrumentationName)
	slots, _ := m.Int64ObservableGauge("duroxide.dispatcher.slots", metric.WithUnit("{slot}"),
		metric.WithDescription("Configured dispatcher slots, by queue; utilization is busy_slots / slots."))
	depth, _ := m.Int64ObservableGauge("duroxide.queue.depth", metric.WithUnit("{message}"),
		metric.WithDescription("Messages waiting in each queue (provider admin QueueDepths)."))
	orch := metric.WithAttributes(attrQueue.String(queueOrchestrator))
	work := metric.WithAttributes(attrQueue.String(queueWorker))
	reg, err := m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		o.ObserveInt64(slots, int64(max(rt.opts.OrchestrationConcurrency, 0)), orch)
		o.ObserveInt64(slots, int64(max(rt.opts.WorkerConcurrency, 0)), work)
		if a := rt.p.Admin(); a != nil && rt.opts.QueueDepthMetrics {
			if d, err := a.QueueDepths(ctx); err == nil && d != nil {
				o.ObserveInt64(depth, int64(d.OrchestratorQueue), orch)
				o.ObserveInt64(depth, int64(d.WorkerQueue), work)
			}
		}
		return nil
	}, slots, depth)
	if err != nil {
		return func() {}
	}
	return func() { _ = reg.Unregister() }
}

// context returns the context of the turn or activity holding token, or
// fallback when none is traced.
func (t *telemetry) context(token string, fallback context.Context) context.Context {
	if w, ok := t.active.Load(token); ok {
		return w.(*workSpan).ctx
	}
	return fallback
}

// startTurn opens the span of one orchestration turn. fetched is when the
// fetch began, so the span covers fetch → replay → ack.
func (t *telemetry) startTurn(base context.Context, item *duroxide.OrchestrationItem, fetched time.Time) func() {
	name := item.OrchestrationName
	if name == "" {
		name = startName(item.Messages)
	}
	ctx := withTraceParent(base, item.TraceParent)
	ctx, span := t.tracer.Start(ctx, "orchestration "+name, trace.WithTimestamp(fetched), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attrInstance.String(item.Instance), attrExecution.Int64(int64(item.ExecutionID)),
			attrOrchestation.String(name), attrVersion.String(item.Version), attrMessages.Int(len(item.Messages)),
			attrHistory.Int(len(item.History)), attrAttempt.Int64(int64(item.AttemptCount))))
	w := &workSpan{ctx: ctx, span: span, start: fetched, outcome: "abandoned",
		name: attrOrchestation.String(name)}
	t.active.Store(item.LockToken, w)
	return func() {
		t.active.Delete(item.LockToken)
		t.finish(w, t.turns, t.turnDuration)
	}
}

// startName is the orchestration a batch starts (a new instance's item
// carries no name yet).
func startName(messages []duroxide.WorkItem) string {
	for _, m := range messages {
		switch s := m.(type) {
		case duroxide.StartOrchestrationItem:
			return s.Orchestration
		case duroxide.ContinueAsNewItem:
			return s.Orchestration
		}
	}
	return "unknown"
}

// committed records what a turn's commit did: the outcome (continue,
// completed, failed, continued_as_new) and, for a failure, its kind.
func (t *telemetry) committed(token string, oc *duroxide.OrchestrationCommit) {
	v, ok := t.active.Load(token)
	if !ok {
		return
	}
	w := v.(*workSpan)
	w.outcome = "continue"
	if oc.Metadata.Status != nil {
		switch *oc.Metadata.Status {
		case duroxide.StatusCompleted:
			w.outcome = "completed"
		case duroxide.StatusFailed:
			w.outcome = "failed"
		case duroxide.StatusContinuedAsNew:
			w.outcome = "continued_as_new"
		}
	}
	for _, e := range oc.HistoryDelta {
		if f, ok := e.Kind.(duroxide.OrchestrationFailed); ok {
			w.kind = failureKind(f.Details)
		}
	}
	if w.span.IsRecording() {
		w.span.SetAttributes(attrExecution.Int64(int64(oc.ExecutionID)), attrNewEvents.Int(len(oc.HistoryDelta)),
			attrWorkerItems.Int(len(oc.WorkerItems)), attrOrchItems.Int(len(oc.OrchestratorItems)))
	}
}

// poisoned counts a poison message and marks the work's outcome.
func (t *telemetry) poisoned(token, queue string) {
	if v, ok := t.active.Load(token); ok {
		w := v.(*workSpan)
		w.outcome, w.kind = "poison", "poison"
	}
	t.poison.Add(context.Background(), 1, t.option(attrQueue.String(queue)))
}

// nondeterminism counts a nondeterministic turn of orchestration name,
// with the policy's outcome.
func (t *telemetry) nondeterminism(name string, policy NondeterminismPolicy) {
	outcome := "blocked"
	if policy == NondeterminismFail {
		outcome = "failed"
	}
	t.nondeterministic.Add(context.Background(), 1, t.option(attrOrchestation.String(name), attrOutcome.String(outcome)))
}

// blocked marks the turn holding token as blocked (not committed). It is
// not a failure (duroxide.failures): the instance is held, not failed.
func (t *telemetry) blocked(token string) {
	if v, ok := t.active.Load(token); ok {
		w := v.(*workSpan)
		w.outcome = "blocked"
		w.span.SetStatus(codes.Error, "nondeterminism: blocked")
	}
}

// startActivity opens the span of one activity execution.
func (t *telemetry) startActivity(base context.Context, locked *duroxide.LockedWorkItem, item duroxide.ActivityExecuteItem) func() {
	ctx := withTraceParent(base, locked.TraceParent)
	ctx, span := t.tracer.Start(ctx, "activity "+item.Name, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attrInstance.String(item.Instance), attrExecution.Int64(int64(item.ExecutionID)),
			attrActivity.String(item.Name), attrActivityID.Int64(int64(item.ID)), attrAttempt.Int64(int64(locked.AttemptCount))))
	w := &workSpan{ctx: ctx, span: span, start: time.Now(), outcome: "abandoned",
		name: attrActivity.String(item.Name)}
	t.active.Store(locked.LockToken, w)
	return func() {
		t.active.Delete(locked.LockToken)
		t.finish(w, t.activities, t.activityDuration)
	}
}

// busySlots returns the function that moves queue's busy-slots metric:
// a slot is busy while it runs code (dispatch_slots.go).
func (t *telemetry) busySlots(queue string) func(int64) {
	q := t.option(attrQueue.String(queue))
	return func(delta int64) { t.busy.Add(context.Background(), delta, q) }
}

// acked records an activity's completion (nil: cancelled).
func (t *telemetry) acked(token string, completion duroxide.WorkItem) {
	v, ok := t.active.Load(token)
	if !ok {
		return
	}
	w := v.(*workSpan)
	switch c := completion.(type) {
	case nil:
		w.outcome = "cancelled"
	case duroxide.ActivityCompletedItem:
		w.outcome = "completed"
	case duroxide.ActivityFailedItem:
		if w.outcome != "poison" {
			w.outcome, w.kind = "failed", failureKind(c.Details)
		}
	}
}

// finish ends w's span and records its counter and duration.
func (t *telemetry) finish(w *workSpan, count metric.Int64Counter, duration metric.Float64Histogram) {
	// A span that records nothing (no SDK, or not sampled) ignores its
	// attributes: not building them saves the variadic slices.
	recording := w.span.IsRecording()
	if recording {
		w.span.SetAttributes(attrOutcome.String(w.outcome))
	}
	if w.kind != "" {
		if recording {
			w.span.SetAttributes(attrKind.String(w.kind))
		}
		w.span.SetStatus(codes.Error, w.kind)
		t.failures.Add(w.ctx, 1, t.option(w.name, attrKind.String(w.kind)))
	} else if w.outcome == "abandoned" {
		w.span.SetStatus(codes.Error, "abandoned")
	}
	attrs := t.option(w.name, attrOutcome.String(w.outcome))
	count.Add(w.ctx, 1, attrs)
	duration.Record(w.ctx, time.Since(w.start).Seconds(), attrs)
	w.span.End()
}

// option returns the measurement option for attrs, built once per
// distinct set of values (orchestration and activity names, outcomes and
// kinds are few).
func (t *telemetry) option(attrs ...attribute.KeyValue) metric.MeasurementOption {
	var buf [128]byte
	key := buf[:0]
	for _, a := range attrs {
		key = append(key, a.Key...)
		key = append(key, '=')
		key = append(key, a.Value.Emit()...)
		key = append(key, 0)
	}
	t.optionsMu.RLock()
	o, ok := t.options[string(key)]
	t.optionsMu.RUnlock()
	if ok {
		return o
	}
	o = metric.WithAttributeSet(attribute.NewSet(attrs...))
	t.optionsMu.Lock()
	defer t.optionsMu.Unlock()
	if t.options == nil {
		t.options = map[string]metric.MeasurementOption{}
	}
	t.options[string(key)] = o
	return o
}

// renewal counts one lock renewal attempt: renewed, retrying (a transient
// failure, retried) or lost.
func (t *telemetry) renewal(queue string, err error) {
	result := "renewed"
	switch {
	case duroxide.IsRetryable(err):
		result = "retrying" // transient: the lock is still ours, retried
	case err != nil:
		result = "lost"
	}
	t.renewals.Add(context.Background(), 1, t.option(attrQueue.String(queue), attrResult.String(result)))
}

// failureKind names an ErrorDetails variant for the failure.kind
// attribute: application, infrastructure, configuration or poison.
func failureKind(d duroxide.ErrorDetails) string {
	switch d.(type) {
	case duroxide.ApplicationError:
		return "application"
	case duroxide.InfrastructureError:
		return "infrastructure"
	case duroxide.ConfigurationError:
		return "configuration"
	case duroxide.PoisonError:
		return "poison"
	}
	return "unknown"
}

// clientSpan opens a client call's span; end records err on it.
func (t *telemetry) clientSpan(ctx context.Context, op, instance string, attrs ...attribute.KeyValue) (context.Context, func(error)) {
	ctx, span := t.tracer.Start(ctx, "client "+op, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(append(attrs, attrInstance.String(instance))...))
	return ctx, func(err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}
