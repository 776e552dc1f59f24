package stress

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Target is one system under test, already running its workers.
type Target interface {
	// Start schedules a new instance of the workload with instance id.
	Start(ctx context.Context, id string) error
	// Status reports whether instance id has finished and whether it failed.
	// Run calls it every Config.PollInterval when that is positive.
	Status(ctx context.Context, id string) (done, failed bool, err error)
	// Wait blocks in the system's own wait-for-completion call. Run uses it
	// when Config.PollInterval is zero.
	Wait(ctx context.Context, id string) (failed bool, err error)
}

// ResultChecker is implemented by targets whose status call cannot tell
// failure from success; Run calls Failed after the instance's latency was
// taken, so the extra read does not count in it.
type ResultChecker interface {
	Failed(ctx context.Context, id string) bool
}

// Config is one run's load.
type Config struct {
	// Duration is how long new instances are started.
	Duration time.Duration
	// InFlight is how many instances are kept running at once (Rust's
	// max_concurrent, default 20).
	InFlight int
	// PollInterval is the harness's status poll per instance; zero uses the
	// system's own wait call.
	PollInterval time.Duration
	// DrainTimeout bounds the wait for the instances still running when
	// Duration ends (default 2 min, as duroxide's runner).
	DrainTimeout time.Duration
	// ActivitiesPerOrch is how many activities one instance runs, for
	// activities/s.
	ActivitiesPerOrch int
	// Progress, if set, receives a line per second.
	Progress io.Writer
	// Label prefixes progress lines and instance ids.
	Label string
}

// Measured is what Run measured; the caller fills the descriptive fields of
// Result around it.
type Measured struct {
	Launched, Completed, Failed, Errors int
	Elapsed                             time.Duration
	Latencies                           []time.Duration
	CPU                                 time.Duration
	PeakMemBytes                        uint64
	FirstError                          error
}

// Run drives t with cfg's load and returns what it measured.
func Run(ctx context.Context, cfg Config, t Target) Measured {
	if cfg.InFlight <= 0 {
		cfg.InFlight = 20
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 2 * time.Minute
	}
	var (
		mu        sync.Mutex
		m         Measured
		seq       atomic.Int64
		completed atomic.Int64
	)
	sampler := startSampler()
	start := time.Now()
	stopLaunch := start.Add(cfg.Duration)
	drainCtx, cancel := context.WithDeadline(ctx, stopLaunch.Add(cfg.DrainTimeout))
	defer cancel()
	stopProgress := progress(cfg, start, &completed)

	var wg sync.WaitGroup
	for w := 0; w < cfg.InFlight; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stopLaunch) && drainCtx.Err() == nil {
				id := fmt.Sprintf("%s-%d", cfg.Label, seq.Add(1))
				t0 := time.Now()
				failed, err := runOne(drainCtx, cfg, t, id)
				d := time.Since(t0)
				if rc, ok := t.(ResultChecker); ok && err == nil && !failed {
					failed = rc.Failed(drainCtx, id)
				}
				mu.Lock()
				m.Launched++
				switch {
				case err != nil:
					m.Errors++
					if m.FirstError == nil {
						m.FirstError = fmt.Errorf("%s: %w", id, err)
					}
				case failed:
					m.Failed++
				default:
					m.Completed++
					m.Latencies = append(m.Latencies, d)
					completed.Add(1)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	m.Elapsed = time.Since(start)
	stopProgress()
	m.CPU, m.PeakMemBytes = sampler.stop()
	sort.Slice(m.Latencies, func(i, j int) bool { return m.Latencies[i] < m.Latencies[j] })
	return m
}

// runOne starts id and waits for it to finish.
func runOne(ctx context.Context, cfg Config, t Target, id string) (failed bool, err error) {
	if err := t.Start(ctx, id); err != nil {
		return false, fmt.Errorf("start: %w", err)
	}
	if cfg.PollInterval <= 0 {
		return t.Wait(ctx, id)
	}
	tick := time.NewTicker(cfg.PollInterval)
	defer tick.Stop()
	for {
		done, failed, err := t.Status(ctx, id)
		if err != nil {
			return false, fmt.Errorf("status: %w", err)
		}
		if done {
			return failed, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-tick.C:
		}
	}
}

// progress prints completed instances and the rate once a second until
// the returned function is called.
func progress(cfg Config, start time.Time, completed *atomic.Int64) func() {
	if cfg.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				n := completed.Load()
				el := time.Since(start)
				fmt.Fprintf(cfg.Progress, "%s: %5.1fs  completed %6d  %7.2f orch/s\n", cfg.Label, el.Seconds(), n, float64(n)/el.Seconds())
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// Percentile returns the p-th percentile (0..100) of sorted, nearest rank.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}
