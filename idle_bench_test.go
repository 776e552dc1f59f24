package cdb_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/durable"
)

// BenchmarkIdleRuntime measures what an idle Go runtime costs the store: a
// durable.Runtime at default settings (2 orchestration + 2 worker slots,
// session manager) with nothing to do, on the Cosmos provider over
// cosmostest. Empty fetches back the slots off to Options.MaxIdlePollInterval,
// so after a ramp-up the cost is flat; it is reported as req/min of the
// steady state. "runtime" disables the provider's outbox reconciler (the
// provider's cost, not the runtime's); "runtime+outbox" runs it at its
// default 5 s interval, the total an idle process pays.
//
//	go test -run '^$' -bench IdleRuntime -benchtime=1x .
//
// CDB_IDLE_WINDOW (a Go duration, default 2m) sets the measured window.
func BenchmarkIdleRuntime(b *testing.B) {
	window := 2 * time.Minute
	if s := os.Getenv("CDB_IDLE_WINDOW"); s != "" {
		d, err := time.ParseDuration(s)
		must(b, err)
		window = d
	}
	const rampUp = 20 * time.Second // the backoff reaches its cap after ~13 s
	for _, c := range []struct {
		name   string
		outbox time.Duration // -1: the reconciler is off
	}{{"runtime", -1}, {"runtime+outbox", 5 * time.Second}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				e := newHarness(b, cdb.Options{MaintenanceInterval: c.outbox}, withoutLag())
				rt, err := durable.Start(b.Context(), e.p, durable.NewRegistry(), nil)
				must(b, err)
				time.Sleep(rampUp)
				spent := e.measure(func() { time.Sleep(window) })
				ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
				must(b, rt.Shutdown(ctx))
				cancel()
				b.ReportMetric(float64(spent.Requests)/window.Minutes(), "req/min")
				b.ReportMetric(spent.RU/window.Minutes(), "RU/min")
				b.Logf("idle over %s: %d requests (%s)", window, spent.Requests, spent.ops())
			}
		})
	}
}
