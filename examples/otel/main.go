// Command otel runs a small durable workload on cosmostest (the in-process
// fake of Cosmos DB) with the OpenTelemetry SDK installed, and prints the
// span tree of one orchestration and the metrics it moved:
//
//	go run ./examples/otel        (from examples/otel: go run .)
//
// It needs nothing but Go. The library itself depends on the
// OpenTelemetry API only; this example is its own module so that the SDK
// stays out of the library's go.mod. A service does the same as
// setupTelemetry below, with an exporter (OTLP, stdout) instead of the
// in-memory recorder and manual reader used here to print the result.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/durable"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "otel example:", err)
		os.Exit(1)
	}
}

// Order is the example orchestration: two activities, then a
// sub-orchestration, so the trace shows all three kinds of work.
func Order(ctx *durable.OrchestrationContext, item string) (string, error) {
	ctx.TraceInfo("order received: " + item) // replay-safe: logged once, not on every replay
	reserved, err := durable.CallActivity[string](ctx, "Reserve", item).Await()
	if err != nil {
		return "", err
	}
	charged, err := durable.CallActivity[string](ctx, "Charge", reserved).Await()
	if err != nil {
		return "", err
	}
	return durable.CallSubOrchestration[string](ctx, "Ship", charged).Await()
}

// Ship is the sub-orchestration.
func Ship(ctx *durable.OrchestrationContext, parcel string) (string, error) {
	return durable.CallActivity[string](ctx, "Dispatch", parcel).Await()
}

func register() (*durable.Registry, error) {
	reg := durable.NewRegistry()
	step := func(verb string) func(durable.ActivityContext, string) (string, error) {
		return func(_ durable.ActivityContext, in string) (string, error) { return in + " " + verb, nil }
	}
	return reg, errors.Join(
		durable.RegisterOrchestration(reg, "Order", Order),
		durable.RegisterOrchestration(reg, "Ship", Ship),
		durable.RegisterActivity(reg, "Reserve", step("reserved")),
		durable.RegisterActivity(reg, "Charge", step("charged")),
		durable.RegisterActivity(reg, "Dispatch", step("dispatched")),
	)
}

// telemetry is the SDK side: a span recorder and a manual metric reader.
type telemetry struct {
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func setupTelemetry() *telemetry {
	t := &telemetry{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(t.spans))
	t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(t.reader))
	return t
}

// outcome is what one workload run produced.
type outcome struct {
	instance string
	output   string
	spans    []sdktrace.ReadOnlySpan
	metrics  metricdata.ResourceMetrics // read after Shutdown
	gauges   []metricdata.Metrics       // read while the runtime ran
}

// workload starts cosmostest, a provider and a runtime traced by tel,
// runs one Order to completion and collects the spans and metrics.
func workload(ctx context.Context, tel *telemetry) (*outcome, error) {
	srv, err := cosmostest.NewServer(nil)
	if err != nil {
		return nil, fmt.Errorf("starting cosmostest: %w", err)
	}
	defer srv.Close()
	p, err := cdb.New(ctx, cdb.Config{Endpoint: srv.Endpoint(), Key: srv.Key()},
		&cdb.Options{TracerProvider: tel.tp, MeterProvider: tel.mp})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	reg, err := register()
	if err != nil {
		return nil, err
	}
	rt, err := durable.Start(ctx, p, reg, &durable.Options{TracerProvider: tel.tp, MeterProvider: tel.mp, QueueDepthMetrics: true})
	if err != nil {
		return nil, err
	}
	client := durable.NewClient(p, durable.ClientOptions{TracerProvider: tel.tp})
	const instance = "order-1"
	if err := client.StartOrchestration(ctx, instance, "Order", "book"); err != nil {
		return nil, errors.Join(err, rt.Shutdown(ctx))
	}
	st, err := client.WaitForOrchestration(ctx, instance, durable.WaitOptions{Timeout: time.Minute})
	// The observable gauges (slots, queue depths) belong to the running
	// runtime; the counters are read after Shutdown, when the last turn's
	// span has ended and been counted.
	var live metricdata.ResourceMetrics
	err = errors.Join(err, tel.reader.Collect(ctx, &live))
	if err := errors.Join(err, rt.Shutdown(ctx)); err != nil {
		return nil, err
	}
	if st.State != durable.StateCompleted {
		return nil, fmt.Errorf("order ended %v: %s", st.State, st.FailureMessage())
	}
	out := &outcome{instance: instance, output: st.Output, spans: tel.spans.Ended(), gauges: gauges(live)}
	if err := tel.reader.Collect(ctx, &out.metrics); err != nil {
		return nil, err
	}
	return out, nil
}

// gauges keeps the gauge data of rm.
func gauges(rm metricdata.ResourceMetrics) []metricdata.Metrics {
	var out []metricdata.Metrics
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if _, ok := m.Data.(metricdata.Gauge[int64]); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

// run is the whole example; main_test.go checks what it records.
func run(ctx context.Context, w io.Writer) error {
	tel := setupTelemetry()
	out, err := workload(ctx, tel)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "orchestration %s completed: %q\n\n", out.instance, out.output)
	printTrees(w, out.spans)
	fmt.Fprintln(w)
	printMetrics(w, out.metrics)
	fmt.Fprintln(w, "gauges while the runtime ran")
	for _, m := range out.gauges {
		for _, line := range points(m) {
			fmt.Fprintf(w, "  %-40s %-12s %s\n", m.Name, m.Unit, line)
		}
	}
	return nil
}

// printTrees prints each trace that holds a client call as an indented
// tree; the spans of background work (idle fetch polls, the maintenance
// loop) are roots of their own traces and only counted.
func printTrees(w io.Writer, spans []sdktrace.ReadOnlySpan) {
	children := map[string][]sdktrace.ReadOnlySpan{}
	byTrace := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		parent := ""
		if s.Parent().IsValid() {
			parent = s.Parent().SpanID().String()
		}
		children[parent] = append(children[parent], s)
		byTrace[s.SpanContext().TraceID().String()] = append(byTrace[s.SpanContext().TraceID().String()], s)
	}
	for _, list := range children {
		sort.Slice(list, func(i, j int) bool { return list[i].StartTime().Before(list[j].StartTime()) })
	}
	background := 0
	for _, root := range children[""] {
		if !strings.HasPrefix(root.Name(), "client ") {
			background += len(byTrace[root.SpanContext().TraceID().String()])
			continue
		}
		fmt.Fprintf(w, "trace %s\n", root.SpanContext().TraceID())
		printSpan(w, root, children, 1)
	}
	fmt.Fprintf(w, "(%d spans of background work — fetch polls, maintenance loop — not shown)\n", background)
}

func printSpan(w io.Writer, s sdktrace.ReadOnlySpan, children map[string][]sdktrace.ReadOnlySpan, depth int) {
	fmt.Fprintf(w, "%s%s  %v%s\n", strings.Repeat("  ", depth), s.Name(), s.EndTime().Sub(s.StartTime()).Round(time.Microsecond), shortAttrs(s.Attributes()))
	kids := children[s.SpanContext().SpanID().String()]
	for i, c := range kids {
		if i == maxChildren {
			fmt.Fprintf(w, "%s… %d more\n", strings.Repeat("  ", depth+1), len(kids)-maxChildren)
			break
		}
		printSpan(w, c, children, depth+1)
	}
}

// maxChildren keeps a polling client call's tree short.
const maxChildren = 6

// shortAttrs renders the duroxide attributes of a span.
func shortAttrs(attrs []attribute.KeyValue) string {
	var parts []string
	for _, a := range attrs {
		if k := string(a.Key); strings.HasPrefix(k, "duroxide.") && k != "duroxide.orchestration.version" {
			parts = append(parts, strings.TrimPrefix(k, "duroxide.")+"="+a.Value.Emit())
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "  [" + strings.Join(parts, " ") + "]"
}

// printMetrics prints every data point, one line each.
func printMetrics(w io.Writer, rm metricdata.ResourceMetrics) {
	for _, sm := range rm.ScopeMetrics {
		fmt.Fprintf(w, "metrics of %s\n", sm.Scope.Name)
		for _, m := range sm.Metrics {
			for _, line := range points(m) {
				fmt.Fprintf(w, "  %-40s %-12s %s\n", m.Name, m.Unit, line)
			}
		}
	}
}

func points(m metricdata.Metrics) []string {
	var out []string
	label := func(s attribute.Set) string {
		var kv []string
		for _, a := range s.ToSlice() {
			kv = append(kv, string(a.Key)+"="+a.Value.Emit())
		}
		return strings.Join(kv, " ")
	}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			out = append(out, fmt.Sprintf("%d  %s", p.Value, label(p.Attributes)))
		}
	case metricdata.Sum[float64]:
		for _, p := range d.DataPoints {
			out = append(out, fmt.Sprintf("%.2f  %s", p.Value, label(p.Attributes)))
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			out = append(out, fmt.Sprintf("%d  %s", p.Value, label(p.Attributes)))
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			out = append(out, fmt.Sprintf("count=%d sum=%.4f  %s", p.Count, p.Sum, label(p.Attributes)))
		}
	}
	sort.Strings(out)
	return out
}
