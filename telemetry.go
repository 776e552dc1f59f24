package cdb

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// OpenTelemetry for the provider. Cosmos requests are traced by azcore
// itself (every azcosmos call and its HTTP attempts become spans) once the
// client has a tracing provider: NewTracingProvider adapts an
// OpenTelemetry TracerProvider to azcore's, so the library needs no
// dependency beyond the OpenTelemetry API (azotel, the Azure SDK's own
// adapter, is a separate module that would pull in more). Request cost
// (requests, RU, throttles, retries by operation) is exported from the
// same counters as RequestStats, as observable counters read only when a
// metric reader collects. docs/operations.md lists the metrics.
//
// Trace context travels with the work: a queue document carries the W3C
// traceparent of the span that enqueued it (queueDoc.TraceParent), and a
// fetch hands it back in OrchestrationItem/LockedWorkItem.TraceParent, so
// a trace continues across processes and restarts. The field lives on the
// provider's document, next to the work item JSON, which stays byte for
// byte what the Rust crate writes; readers that do not know it ignore it.

// instrumentationName is the tracer and meter name (the import path).
const instrumentationName = "github.com/duroxide-go/cdb"

// attrOp is the metric attribute naming a request kind (Op).
const attrOp = attribute.Key("cdb.operation")

var w3c = propagation.TraceContext{}

// traceParent is the W3C traceparent of ctx's span, "" when it has none.
func traceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c.Get("traceparent")
}

// NewTracingProvider adapts an OpenTelemetry TracerProvider to azcore's
// tracing.Provider, for azcosmos.ClientOptions.TracingProvider. New does
// this itself from Options.TracerProvider; use it for a container client
// passed to NewWithContainer.
func NewTracingProvider(tp trace.TracerProvider) tracing.Provider {
	return tracing.NewProvider(func(name, version string) tracing.Tracer {
		t := tp.Tracer(name, trace.WithInstrumentationVersion(version))
		return tracing.NewTracer(func(ctx context.Context, spanName string, o *tracing.SpanOptions) (context.Context, tracing.Span) {
			var opts []trace.SpanStartOption
			if o != nil {
				opts = append(opts, trace.WithSpanKind(trace.SpanKind(o.Kind)), trace.WithAttributes(convertAttrs(o.Attributes)...))
			}
			ctx, s := t.Start(ctx, spanName, opts...)
			return ctx, wrapSpan(s)
		}, &tracing.TracerOptions{SpanFromContext: func(ctx context.Context) tracing.Span {
			return wrapSpan(trace.SpanFromContext(ctx))
		}})
	}, nil)
}

// wrapSpan exposes an OpenTelemetry span as an azcore span.
func wrapSpan(s trace.Span) tracing.Span {
	return tracing.NewSpan(tracing.SpanImpl{
		End:           func() { s.End() },
		SetAttributes: func(a ...tracing.Attribute) { s.SetAttributes(convertAttrs(a)...) },
		AddEvent: func(name string, a ...tracing.Attribute) {
			s.AddEvent(name, trace.WithAttributes(convertAttrs(a)...))
		},
		SetStatus: func(code tracing.SpanStatus, desc string) {
			switch code {
			case tracing.SpanStatusError:
				s.SetStatus(codes.Error, desc)
			case tracing.SpanStatusOK:
				s.SetStatus(codes.Ok, desc)
			}
		},
	})
}

// convertAttrs maps azcore attributes to OpenTelemetry ones (other value
// types are rendered as strings, as azcore documents).
func convertAttrs(in []tracing.Attribute) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(in))
	for _, a := range in {
		switch v := a.Value.(type) {
		case string:
			out = append(out, attribute.String(a.Key, v))
		case int:
			out = append(out, attribute.Int(a.Key, v))
		case int64:
			out = append(out, attribute.Int64(a.Key, v))
		case float64:
			out = append(out, attribute.Float64(a.Key, v))
		case bool:
			out = append(out, attribute.Bool(a.Key, v))
		default:
			out = append(out, attribute.String(a.Key, fmt.Sprintf("%v", v)))
		}
	}
	return out
}

// providerMetrics registers the provider's observable instruments on mp
// (nil: the global MeterProvider); the returned func unregisters them.
func (p *Provider) registerMetrics(mp metric.MeterProvider) (unregister func()) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(instrumentationName)
	requests, _ := m.Int64ObservableCounter("cdb.cosmos.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Cosmos DB requests sent, by operation (RequestStats.Requests)."))
	failures, _ := m.Int64ObservableCounter("cdb.cosmos.request.failures", metric.WithUnit("{request}"),
		metric.WithDescription("Cosmos DB requests that failed, by operation; 404/409/412 that the provider expects count too."))
	charge, _ := m.Float64ObservableCounter("cdb.cosmos.request.charge", metric.WithUnit("{RU}"),
		metric.WithDescription("Request units Cosmos DB reported, by operation."))
	throttles, _ := m.Int64ObservableCounter("cdb.cosmos.throttles", metric.WithUnit("{request}"),
		metric.WithDescription("Requests answered 429 (azcore does not retry them), by operation."))
	retries, _ := m.Int64ObservableCounter("cdb.cosmos.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Throttled requests the provider sent again, by operation."))
	backlog, _ := m.Int64ObservableGauge("cdb.outbox.backlog", metric.WithUnit("{intent}"),
		metric.WithDescription("Undelivered outbox intents the last maintenance round found."))
	orphans, _ := m.Int64ObservableCounter("cdb.orphans.dropped", metric.WithUnit("{message}"),
		metric.WithDescription("Orchestrator messages deleted because their instance never started (Options.OrphanLifetime)."))
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(orphans, p.orphansDropped.Load())
		for op, c := range p.st.Counters() {
			if c.Requests == 0 {
				continue
			}
			a := metric.WithAttributes(attrOp.String(string(op)))
			o.ObserveInt64(requests, c.Requests, a)
			o.ObserveInt64(failures, c.Failures, a)
			o.ObserveFloat64(charge, c.RequestCharge, a)
			o.ObserveInt64(throttles, c.Throttles, a)
			o.ObserveInt64(retries, c.Retries, a)
		}
		if p.opts.MaintenanceInterval > 0 {
			o.ObserveInt64(backlog, p.outboxBacklog.Load())
		}
		return nil
	}, requests, failures, charge, throttles, retries, backlog, orphans)
	if err != nil {
		return func() {}
	}
	return func() { _ = reg.Unregister() }
}
