// Command duroxide-chaos is a chaos soak for the Cosmos DB provider and the
// durable runtime: it runs several worker processes against one emulator,
// kills them and injects Cosmos faults while a mix of orchestrations runs,
// then checks that nothing was lost, duplicated or corrupted.
//
//	go run ./cmd/duroxide-chaos -processes 3 -orchestrations 100 -json
//
// One binary, two roles. The driver (the default role) serves cosmostest
// in-process on a free loopback port, bootstraps the container, and
// re-executes itself -processes times as workers (-worker -id wN; the
// endpoint and key travel in the environment). Each worker runs a cdb
// provider with Cosmos-backed dispatch-slot leases (cdb.CosmosLeases, a
// 3 s lease) and a durable runtime with the workload registered; every
// activity execution appends a line to the worker's log, so re-executions
// are counted.
//
// The workload is -orchestrations instances chaos-<kind>-<i>, round-robin
// over kinds whose output is a pure function of i: a fan-out of activities
// summed; a timer then an activity; a sub-orchestration; an external event
// the driver raises once the instance waits for it; continue-as-new three
// times; a KV value set and read back; two activities on a session.
//
// While they run (at most -duration), the driver SIGKILLs a random worker
// every -kill-interval and restarts it with the same id, and every
// -fault-interval injects one fault kind for a while at the emulator: a 429
// storm, 503 or 408 on writes, writes applied then answered 503 or 408
// (ambiguous outcomes), connections dropped before or after the write
// applied, added latency. Faults target the workers only (the driver's own
// requests, which start instances and raise events, are exempt).
//
// Then it clears the faults, waits for the rest to complete (the whole run
// is bounded by -timeout), stops the workers and checks: every instance
// completed with its expected output (completed, wrong_output, lost); every
// execution's history has contiguous event ids (history_gaps) and no
// completion recorded twice (duplicated_completions); no outbox intent or
// live lock is left (outbox_left, locks_left, after the lock timeouts
// passed). activity_executions and activity_reexecutions report
// at-least-once delivery. It prints a table, or one JSON object with
// -json, progress on stderr, and exits 1 on any violation.
//
// Flags:
//
//	-processes       worker processes (default 3)
//	-orchestrations  instances to run (default 100)
//	-json            print the report as one JSON object
//	-duration        longest chaos phase (default 60s); it ends earlier when all complete
//	-ramp            time over which the instances are started (default: half of -duration)
//	-timeout         bound on the whole run before the checks (default 5m)
//	-kill-interval   time between worker kills (default 5s; 0 disables kills)
//	-fault-interval  time between faults (default 2s; 0 disables faults)
//	-seed            random seed (default: time-based)
//	-keep            keep the working directory (worker logs)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Environment variable that makes the process a worker, set by the driver
// with the -worker flag (tests re-execute the test binary, which cannot
// take the flag).
const envWorkerID = "DUROXIDE_CHAOS_WORKER_ID"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if id := os.Getenv(envWorkerID); id != "" {
		os.Exit(workerMain(ctx, id))
	}
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "duroxide-chaos:", err)
		os.Exit(2)
	}
	if cfg.WorkerID != "" {
		os.Exit(workerMain(ctx, cfg.WorkerID))
	}
	ok, err := run(ctx, cfg, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "duroxide-chaos:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// workerMain runs the worker role and returns the exit code.
func workerMain(ctx context.Context, id string) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go watchParent(ctx, cancel)
	if err := runWorker(ctx, id, os.Stderr); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "duroxide-chaos worker %s: %v\n", id, err)
		return 2
	}
	return 0
}

// config is the driver's flags.
type config struct {
	Processes      int
	Orchestrations int
	JSON           bool
	Duration       time.Duration
	Timeout        time.Duration
	Ramp           time.Duration
	KillInterval   time.Duration
	FaultInterval  time.Duration
	// MaxClockSkew spreads the workers' clocks over [-it, +it].
	MaxClockSkew time.Duration
	Seed         int64
	Keep         bool
	// WorkerID is set with -worker: run as that worker.
	WorkerID string
	// workerCommand, when set, replaces the re-execution of this binary
	// (tests); nil uses os.Executable.
	workerCommand []string
}

// parseFlags parses the driver's command line.
func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("duroxide-chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &config{}
	fs.IntVar(&c.Processes, "processes", 3, "worker processes")
	fs.IntVar(&c.Orchestrations, "orchestrations", 100, "orchestration instances to run")
	fs.BoolVar(&c.JSON, "json", false, "print the report as one JSON object")
	fs.DurationVar(&c.Duration, "duration", 60*time.Second, "longest chaos phase (ends earlier when all complete)")
	fs.DurationVar(&c.Ramp, "ramp", -1, "time over which the instances are started (default: half of -duration)")
	fs.DurationVar(&c.Timeout, "timeout", 5*time.Minute, "bound on the whole run before the checks")
	fs.DurationVar(&c.KillInterval, "kill-interval", 5*time.Second, "time between worker kills (0: none)")
	fs.DurationVar(&c.FaultInterval, "fault-interval", 2*time.Second, "time between injected faults (0: none)")
	fs.DurationVar(&c.MaxClockSkew, "clock-skew", 0, "workers' clocks are skewed evenly over [-this, +this] (0: none)")
	fs.Int64Var(&c.Seed, "seed", 0, "random seed (0: time-based)")
	fs.BoolVar(&c.Keep, "keep", false, "keep the working directory (worker logs)")
	worker := fs.Bool("worker", false, "run as a worker (started by the driver)")
	id := fs.String("id", "", "worker id (with -worker)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	case *worker != (*id != ""):
		return nil, errors.New("-worker and -id go together (the driver starts workers with both)")
	case c.Processes < 1 || c.Processes > 16:
		return nil, fmt.Errorf("-processes must be 1..16, not %d", c.Processes)
	case c.Orchestrations < 1 || c.Orchestrations > 100000:
		return nil, fmt.Errorf("-orchestrations must be 1..100000, not %d", c.Orchestrations)
	case c.Duration < 0 || c.Timeout <= 0 || c.KillInterval < 0 || c.FaultInterval < 0 || c.MaxClockSkew < 0:
		return nil, errors.New("durations must not be negative (and -timeout positive)")
	}
	if c.Ramp < 0 {
		c.Ramp = c.Duration / 2
	}
	c.WorkerID = *id
	if c.Seed == 0 {
		c.Seed = time.Now().UnixNano()
	}
	return c, nil
}

// watchParent cancels the worker when its driver is gone (the driver was
// killed and could not stop it): a worker must not outlive its run.
func watchParent(ctx context.Context, cancel func()) {
	parent := os.Getppid()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if os.Getppid() != parent {
				cancel()
				return
			}
		}
	}
}
