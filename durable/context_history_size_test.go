package durable

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
)

// recordingMeter keeps what the runtime records on its Int64 histograms
// and counters (every other instrument is a no-op), by name, with the
// attributes of each measurement.
type recordingMeter struct {
	metricnoop.Meter
	mu   sync.Mutex
	seen map[string][]measurement
}

type measurement struct {
	value int64
	attrs attribute.Set
}

type recordingMeterProvider struct {
	embedded.MeterProvider
	m *recordingMeter
}

func (p recordingMeterProvider) Meter(string, ...metric.MeterOption) metric.Meter { return p.m }

func (m *recordingMeter) add(name string, v int64, attrs attribute.Set) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seen[name] = append(m.seen[name], measurement{v, attrs})
}

func (m *recordingMeter) measurements(name string) []measurement {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]measurement(nil), m.seen[name]...)
}

func (m *recordingMeter) Int64Histogram(name string, _ ...metric.Int64HistogramOption) (metric.Int64Histogram, error) {
	return recordingHistogram{name: name, m: m}, nil
}

func (m *recordingMeter) Int64Counter(name string, _ ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return recordingCounter{name: name, m: m}, nil
}

type recordingHistogram struct {
	metricnoop.Int64Histogram
	name string
	m    *recordingMeter
}

func (h recordingHistogram) Record(_ context.Context, v int64, opts ...metric.RecordOption) {
	h.m.add(h.name, v, metric.NewRecordConfig(opts).Attributes())
}

type recordingCounter struct {
	metricnoop.Int64Counter
	name string
	m    *recordingMeter
}

func (c recordingCounter) Add(_ context.Context, v int64, opts ...metric.AddOption) {
	c.m.add(c.name, v, metric.NewAddConfig(opts).Attributes())
}

// After every committed turn the runtime records the execution's history
// size, and it counts the executions passing 75 % and 90 % of the limit
// once each; the last recorded size is the stored history's.
func TestHistorySizeMetrics(t *testing.T) {
	meter := &recordingMeter{seen: map[string][]measurement{}}
	reg := NewRegistry()
	require.NoError(t, reg.AddActivity("Step", func(_ ActivityContext, in string) (string, error) { return in, nil }))
	require.NoError(t, reg.AddOrchestration("Steps", func(ctx *OrchestrationContext, in string) (string, error) {
		for range 9 {
			if _, err := CallActivity[string](ctx, "Step", in).Await(); err != nil {
				return "", err
			}
		}
		return "done", nil
	}))
	p := newMemProvider()
	rt := startRuntime(t, p, reg, Options{MeterProvider: recordingMeterProvider{m: meter}, HistoryLimits: HistoryLimits{Events: 20}})
	require.NoError(t, rt.Client().StartOrchestration(t.Context(), "steps", "Steps", "x"))
	require.Equal(t, StateCompleted, waitDone(t, rt.Client(), "steps").State)
	h, err := p.Read(t.Context(), "steps")
	require.NoError(t, err)
	require.Len(t, h, 20, "9 activities, the start and the end")
	var bytes int64
	for _, ev := range h {
		bytes += int64(eventBytes(ev))
	}

	// Each turn's goroutine records after its commit, so the last may come
	// after the client saw the instance complete, and turns of one
	// instance on two slots may record out of order.
	require.Eventually(t, func() bool { return len(meter.measurements("duroxide.history.bytes")) == 10 }, 10*time.Second, time.Millisecond)
	events := values(meter.measurements("duroxide.history.events"))
	sizes := values(meter.measurements("duroxide.history.bytes"))
	require.Equal(t, []int64{2, 4, 6, 8, 10, 12, 14, 16, 18, 20}, events, "one per committed turn")
	require.Len(t, slices.Compact(slices.Clone(sizes)), 10, "every turn grew the history")
	require.Equal(t, bytes, sizes[len(sizes)-1], "the largest size is the stored history's")
	sizesOnly := meter.measurements("duroxide.history.bytes")
	name, ok := sizesOnly[0].attrs.Value(attrOrchestation)
	require.True(t, ok)
	require.Equal(t, "Steps", name.AsString())

	require.Eventually(t, func() bool { return len(meter.measurements("duroxide.history.limit_warnings")) >= 2 }, 10*time.Second, time.Millisecond)
	warnings := meter.measurements("duroxide.history.limit_warnings")
	var thresholds []string
	for _, w := range warnings {
		v, _ := w.attrs.Value(attrThreshold)
		thresholds = append(thresholds, v.AsString()+"="+strconv.FormatInt(w.value, 10))
	}
	slices.Sort(thresholds)
	require.Equal(t, []string{"75=1", "90=1"}, thresholds, "each threshold once: at 15 and 18 of 20 events")
}

// values are ms' values, ascending.
func values(ms []measurement) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.value
	}
	slices.Sort(out)
	return out
}

func TestHistoryLimitsRefuseNegative(t *testing.T) {
	for _, l := range []HistoryLimits{{Bytes: -1}, {Events: -1}} {
		_, err := Start(t.Context(), newMemProvider(), NewRegistry(), &Options{HistoryLimits: l})
		var oe *OptionsError
		require.ErrorAs(t, err, &oe)
		require.Equal(t, "HistoryLimits", oe.Field)
	}
}

func TestHistoryLimitsDefaultsAreCosmos(t *testing.T) {
	o := (&Options{}).WithDefaults()
	require.Equal(t, HistoryLimits{Bytes: 20_000_000_000}, o.HistoryLimits)
	l := HistoryLimits{}
	require.InDelta(t, 0.75, l.pressure(HistorySize{Bytes: 15_000_000_000}), 1e-9)
	require.InDelta(t, 0.5, HistoryLimits{Events: 10}.pressure(HistorySize{Events: 5, Bytes: 1}), 1e-9, "the larger fraction")
}

// The replay check suggests continue-as-new against the limits it is
// given: code that acts on the suggestion replays its history only with
// the runtime's limits.
func TestCheckHistoryUsesTheRuntimesHistoryLimits(t *testing.T) {
	reg := NewRegistry()
	require.NoError(t, reg.AddActivity("Step", func(_ ActivityContext, in string) (string, error) { return in, nil }))
	require.NoError(t, reg.AddOrchestration("Roll", func(ctx *OrchestrationContext, in string) (string, error) {
		for {
			if ctx.ContinueAsNewSuggested() {
				ctx.SetCustomStatus("rolling over")
				if ctx.ExecutionID() == 1 {
					return "", ContinueAsNew(ctx, in)
				}
				return "done", nil
			}
			if _, err := CallActivity[string](ctx, "Step", in).Await(); err != nil {
				return "", err
			}
		}
	}))
	limits := HistoryLimits{Events: 10}
	rt := startRuntime(t, newMemProvider(), reg, Options{HistoryLimits: limits})
	require.NoError(t, rt.Client().StartOrchestration(t.Context(), "roll", "Roll", "x"))
	require.Equal(t, StateCompleted, waitDone(t, rt.Client(), "roll").State)
	h, err := rt.Client().ExecutionHistory(t.Context(), "roll", 1)
	require.NoError(t, err)

	rec := RecordedExecution{Instance: "roll", ExecutionID: 1, History: h, HistoryLimits: limits}
	require.NoError(t, CheckHistory(reg, rec))
	rec.HistoryLimits = HistoryLimits{}
	require.ErrorIs(t, CheckHistory(reg, rec), ErrNondeterministic, "the default limits suggest nothing at 9 events")
}
