// Command peers runs duroxide's parallel-orchestrations workload on this
// library (memory provider, cosmostest) and on the two Go libraries a user
// would pick instead — microsoft/durabletask-go v0.6.0 and
// cschleiden/go-workflows v1.4.2, each on its sqlite backend in memory and
// in a file — one after another in one process, and prints one result per
// system (see README.md).
//
//	go run . -duration 10s -json
//	go run . -variant all -wait both
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/internal/stress"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

// setup is one variant of the workload.
type setup struct {
	name         string
	fanOut       int
	delay        time.Duration
	orch, worker int
	payload      int
}

func (s setup) input() fanInput {
	return fanInput{Tasks: s.fanOut, DelayMS: int(s.delay / time.Millisecond), Payload: stress.Payload(s.payload)}
}

// The variants: duroxide's defaults, and an engine-bound one where the
// 2 activity slots × 10 ms (a 40 orch/s ceiling) no longer bound the run.
var variants = map[string]setup{
	"default": {name: "default", fanOut: 5, delay: 10 * time.Millisecond, orch: 2, worker: 2},
	"engine":  {name: "engine", fanOut: 5, delay: 0, orch: 8, worker: 8},
}

// system is one library on one backend.
type system struct {
	name, backend string
	open          func(ctx context.Context, s setup, dir string) (stress.Target, func(), error)
}

func systems() []system {
	dt := func(file bool) func(ctx context.Context, s setup, dir string) (stress.Target, func(), error) {
		return func(ctx context.Context, s setup, dir string) (stress.Target, func(), error) {
			if !file {
				dir = ""
			}
			d, err := newDurableTask(ctx, dir, s)
			if err != nil {
				return nil, nil, err
			}
			return d, d.Close, nil
		}
	}
	gw := func(file bool) func(ctx context.Context, s setup, dir string) (stress.Target, func(), error) {
		return func(ctx context.Context, s setup, dir string) (stress.Target, func(), error) {
			if !file {
				dir = ""
			}
			g, err := newGoWorkflows(ctx, dir, s)
			if err != nil {
				return nil, nil, err
			}
			return g, g.Close, nil
		}
	}
	return []system{
		{"duroxide-go", "memory", nil},
		{"duroxide-go", "cosmostest", nil},
		{"duroxide-go", "embedded", nil},
		{"durabletask-go", "sqlite-memory", dt(false)},
		{"durabletask-go", "sqlite-file", dt(true)},
		{"go-workflows", "sqlite-memory", gw(false)},
		{"go-workflows", "sqlite-file", gw(true)},
	}
}

// options are the command line.
type options struct {
	duration, poll      time.Duration
	inflight            int
	variant, wait, only string
	jsonOut, quiet      bool
	profDir, memProfDir string
	progress            io.Writer
	selected            []system
	selectedVariants    []setup
	waits               []time.Duration // 0 = the system's own wait call
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long each run starts new instances")
	fs.IntVar(&o.inflight, "inflight", 20, "instances kept in flight")
	fs.DurationVar(&o.poll, "poll", 10*time.Millisecond, "the harness's status poll interval, the same for every system")
	fs.StringVar(&o.variant, "variant", "default", "default (5 × 10 ms activities, 2/2 slots), engine (0 ms, 8/8) or all")
	fs.StringVar(&o.wait, "wait", "poll", "poll (the harness polls every -poll), native (each system's own wait call) or both")
	fs.StringVar(&o.only, "systems", "", "comma-separated system or system/backend names to run (default all)")
	fs.BoolVar(&o.jsonOut, "json", false, "one JSON object per run instead of the table")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress on stderr")
	fs.StringVar(&o.profDir, "cpuprofile-dir", "", "write a CPU profile per run into this directory")
	fs.StringVar(&o.memProfDir, "memprofile-dir", "", "write the allocations profile (cumulative since the process started) after each run into this directory")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.progress = stderr
	switch o.variant {
	case "all":
		o.selectedVariants = []setup{variants["default"], variants["engine"]}
	case "default", "engine":
		o.selectedVariants = []setup{variants[o.variant]}
	default:
		return o, fmt.Errorf("-variant %q: want default, engine or all", o.variant)
	}
	switch o.wait {
	case "poll":
		o.waits = []time.Duration{o.poll}
	case "native":
		o.waits = []time.Duration{0}
	case "both":
		o.waits = []time.Duration{o.poll, 0}
	default:
		return o, fmt.Errorf("-wait %q: want poll, native or both", o.wait)
	}
	if o.poll <= 0 {
		return o, fmt.Errorf("-poll must be positive")
	}
	for _, s := range systems() {
		if o.only == "" || wanted(o.only, s) {
			o.selected = append(o.selected, s)
		}
	}
	if len(o.selected) == 0 {
		return o, fmt.Errorf("-systems %q matches no system", o.only)
	}
	return o, nil
}

func wanted(list string, s system) bool {
	for _, w := range strings.Split(list, ",") {
		w = strings.TrimSpace(w)
		if w == s.name || w == s.name+"/"+s.backend {
			return true
		}
	}
	return false
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	var results []stress.Result
	n := 0
	for _, v := range o.selectedVariants {
		for _, wait := range o.waits {
			for _, s := range o.selected {
				n++
				r, err := runOne(ctx, o, s, v, wait, n)
				if err != nil {
					return fmt.Errorf("%s/%s: %w", s.name, s.backend, err)
				}
				if o.jsonOut {
					if err := stress.WriteJSON(stdout, r); err != nil {
						return err
					}
				}
				results = append(results, r)
			}
		}
	}
	if !o.jsonOut {
		stress.WriteTable(stdout, results)
	}
	return nil
}

func runOne(ctx context.Context, o options, s system, v setup, wait time.Duration, n int) (stress.Result, error) {
	cfg := stress.Config{Duration: o.duration, InFlight: o.inflight, PollInterval: wait,
		ActivitiesPerOrch: v.fanOut, Label: fmt.Sprintf("%s-%s-%s-%d", s.name, s.backend, v.name, n)}
	if !o.quiet {
		cfg.Progress = o.progress
		w := "native wait"
		if wait > 0 {
			w = "poll " + wait.String()
		}
		fmt.Fprintf(o.progress, "== %s on %s, %s variant (%d × %v, slots %d/%d), %s\n", s.name, s.backend, v.name, v.fanOut, v.delay, v.orch, v.worker, w)
	}
	if o.profDir != "" {
		f, err := os.Create(fmt.Sprintf("%s/%s.pprof", o.profDir, cfg.Label))
		if err != nil {
			return stress.Result{}, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return stress.Result{}, err
		}
		defer pprof.StopCPUProfile()
	}
	if o.memProfDir != "" {
		defer writeAllocs(fmt.Sprintf("%s/%s.allocs.pprof", o.memProfDir, cfg.Label))
	}
	if s.open == nil {
		return stress.RunDuroxide(ctx, stress.DuroxideOptions{Backend: s.backend, FanOut: v.fanOut, ActivityDelay: v.delay,
			PayloadBytes: v.payload, OrchConcurrency: v.orch, WorkerConcurrency: v.worker}, cfg)
	}
	dir, err := os.MkdirTemp("", "peers-")
	if err != nil {
		return stress.Result{}, err
	}
	defer os.RemoveAll(dir)
	t, closeFn, err := s.open(ctx, v, dir)
	if err != nil {
		return stress.Result{}, err
	}
	m := stress.Run(ctx, cfg, t)
	closeFn()
	r := stress.Result{System: s.name, Backend: s.backend, Workload: "fanout", OrchConcurrency: v.orch,
		WorkerConcurrency: v.worker, FanOut: v.fanOut, ActivityDelayMS: float64(v.delay.Microseconds()) / 1000, PayloadBytes: v.payload}
	r.Fill(m, cfg)
	return r, nil
}

// writeAllocs writes the allocations profile to path (errors go to stderr:
// a missing profile does not spoil the run's result).
func writeAllocs(path string) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peers: allocations profile:", err)
	}
}
