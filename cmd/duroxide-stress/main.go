// Command duroxide-stress runs duroxide's stress workloads against this
// library's runtime and prints throughput and latency.
//
// Start with `go run ./cmd/duroxide-stress -h`; the workloads and their
// measurement are package internal/stress, and the repository's
// docs/performance.md has results.
//
// The default run is duroxide's parallel-orchestrations test: 20 instances
// in flight, each fanning out 5 activities of 10 ms and joining them, for
// 10 s, with 2 orchestration and 2 worker slots, on the memory provider:
//
//	go run ./cmd/duroxide-stress
//	go run ./cmd/duroxide-stress -backend cosmostest -latency 5ms -json
//	go run ./cmd/duroxide-stress -workload large -inflight 5
//	COSMOS_ENDPOINT=... COSMOS_KEY=... go run ./cmd/duroxide-stress -backend cosmos
//
// Several comma-separated values of -latency, -concurrency or -fanout run
// one measurement each. Progress goes to stderr; the table (or, with
// -json, one JSON object per run) to stdout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/internal/stress"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "duroxide-stress:", err)
		os.Exit(1)
	}
}

// flags are the command line.
type flags struct {
	backend, workload          string
	duration, delay, poll      time.Duration
	inflight, payload, steps   int
	latencies, concs, fanouts  string
	fetchAhead                 int
	handOff                    int
	jsonOut, nativeWait, quiet bool
	gzip, hexPayload           bool
	cpuProfile, blockProfile   string
}

func parse(args []string, stderr io.Writer) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("duroxide-stress", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.backend, "backend", stress.BackendMemory, "memory, cosmostest, embedded (localcosmos with a data directory, as embedded.Open), or cosmos (an account from COSMOS_* variables)")
	fs.StringVar(&f.workload, "workload", stress.WorkloadFanout, "fanout, large, long-history or continue-as-new")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "how long new instances are started")
	fs.IntVar(&f.inflight, "inflight", 20, "instances kept in flight")
	fs.StringVar(&f.concs, "concurrency", "2/2", "orchestration/worker slots (N or O/W); comma-separated for several runs")
	fs.StringVar(&f.fanouts, "fanout", "5", "activities per instance (fanout workload); comma-separated for several runs")
	fs.DurationVar(&f.delay, "activity-delay", 10*time.Millisecond, "how long each activity sleeps")
	fs.IntVar(&f.payload, "payload", 0, "payload bytes per activity (fanout), or the small payload (large; default 10240)")
	fs.IntVar(&f.steps, "steps", 50, "activities per instance for long-history and continue-as-new")
	fs.StringVar(&f.latencies, "latency", "0", "injected per-request latency for cosmostest (e.g. 5ms); comma-separated for several runs")
	fs.DurationVar(&f.poll, "poll", 10*time.Millisecond, "client status poll interval per instance")
	fs.BoolVar(&f.gzip, "gzip", false, "store every payload gzipped (payload.Wrap with payload.Gzip)")
	fs.BoolVar(&f.hexPayload, "hex-payload", false, "fanout payload of pseudo-random hex digits (compresses as text does) instead of one repeated byte")
	fs.BoolVar(&f.nativeWait, "native-wait", false, "wait with Client.WaitForOrchestration instead of polling every -poll")
	fs.BoolVar(&f.jsonOut, "json", false, "print one JSON object per run instead of the table")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress on stderr")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the runs to this file")
	fs.IntVar(&f.fetchAhead, "fetch-ahead", 0, "loops fetching ahead per queue (0: the runtime's default, -1: none)")
	fs.IntVar(&f.handOff, "hand-off", 0, "activities a turn's ack may lock for the runtime's own workers (0: the runtime's default, -1: none)")
	fs.StringVar(&f.blockProfile, "blockprofile", "", "write a blocking profile (and a mutex profile to the same name + .mutex) of the runs to this file")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if f.workload == stress.WorkloadLarge && f.payload == 0 {
		f.payload = 10 << 10
	}
	return f, nil
}

// point is one measurement of a sweep.
type point struct {
	latency      time.Duration
	orch, worker int
	fanout       int
}

func (f flags) points() ([]point, error) {
	lats, err := splitList(f.latencies, parseLatency)
	if err != nil {
		return nil, fmt.Errorf("-latency: %w", err)
	}
	concs, err := splitList(f.concs, parseSlots)
	if err != nil {
		return nil, fmt.Errorf("-concurrency: %w", err)
	}
	fans, err := splitList(f.fanouts, strconv.Atoi)
	if err != nil {
		return nil, fmt.Errorf("-fanout: %w", err)
	}
	var ps []point
	for _, l := range lats {
		for _, c := range concs {
			for _, n := range fans {
				if n < 1 {
					return nil, errors.New("-fanout must be at least 1")
				}
				ps = append(ps, point{latency: l, orch: c[0], worker: c[1], fanout: n})
			}
		}
	}
	return ps, nil
}

func parseLatency(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	return time.ParseDuration(s)
}

func parseSlots(s string) ([2]int, error) {
	o, w, found := strings.Cut(s, "/")
	if !found {
		w = o
	}
	a, err1 := strconv.Atoi(o)
	b, err2 := strconv.Atoi(w)
	if err := errors.Join(err1, err2); err != nil || a < 1 || b < 1 {
		return [2]int{}, fmt.Errorf("bad slots %q (want N or O/W, each at least 1)", s)
	}
	return [2]int{a, b}, nil
}

func splitList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, part := range strings.Split(s, ",") {
		v, err := parse(strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parse(args, stderr)
	if err != nil {
		return err
	}
	ps, err := f.points()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if f.blockProfile != "" {
		stopBlock, err := startBlockProfile(f.blockProfile)
		if err != nil {
			return err
		}
		defer stopBlock()
	}
	var results []stress.Result
	for i, p := range ps {
		opts := stress.DuroxideOptions{Backend: f.backend, Workload: f.workload, FanOut: p.fanout,
			ActivityDelay: f.delay, PayloadBytes: f.payload, Steps: f.steps,
			OrchConcurrency: p.orch, WorkerConcurrency: p.worker, InjectedLatency: p.latency, FetchAhead: f.fetchAhead, HandOff: f.handOff,
			Gzip: f.gzip, HexPayload: f.hexPayload}
		cfg := stress.Config{Duration: f.duration, InFlight: f.inflight, PollInterval: f.poll,
			Label: fmt.Sprintf("run%d-%s-%d", i+1, f.backend, time.Now().UnixNano())}
		if f.nativeWait {
			cfg.PollInterval = 0
		}
		if !f.quiet {
			cfg.Progress = stderr
			fmt.Fprintf(stderr, "run %d/%d: %s %s slots %d/%d fan-out %d latency %v\n", i+1, len(ps), f.backend, f.workload, p.orch, p.worker, p.fanout, p.latency)
		}
		r, err := stress.RunDuroxide(ctx, opts, cfg)
		if err != nil {
			return err
		}
		if f.jsonOut {
			if err := stress.WriteJSON(stdout, r); err != nil {
				return err
			}
		}
		results = append(results, r)
	}
	if !f.jsonOut {
		stress.WriteTable(stdout, results)
	}
	return nil
}

// startBlockProfile records where goroutines wait (channel operations,
// selects, sleeps on sync primitives) and which mutexes are contended;
// stop writes both profiles. An engine-bound run that spends its time
// waiting rather than working shows here, not in the CPU profile.
func startBlockProfile(path string) (stop func(), err error) {
	runtime.SetBlockProfileRate(int(100 * time.Microsecond))
	runtime.SetMutexProfileFraction(10)
	return func() {
		for name, file := range map[string]string{"block": path, "mutex": path + ".mutex"} {
			pf, err := os.Create(file)
			if err != nil {
				continue
			}
			_ = pprof.Lookup(name).WriteTo(pf, 0)
			pf.Close()
		}
		runtime.SetBlockProfileRate(0)
		runtime.SetMutexProfileFraction(0)
	}, nil
}
