// Command duroxide-chaos is a chaos soak for the Cosmos DB provider and the
// durable runtime: it runs several worker processes against one emulator,
// kills them and injects Cosmos faults while a mix of orchestrations runs,
// then checks that nothing was lost, duplicated or corrupted.
//
// Start with main.go (the flags and one run); driver.go starts and feeds
// the instances, check.go judges them, and kitchensink.go with model.go
// holds the composed programs and their reference model. The repository's
// docs/reliability.md has the runs and what they found.
//
//	go run ./cmd/duroxide-chaos -processes 3 -orchestrations 100 -json
//
// One binary, two roles. The driver (the default role) serves cosmostest
// in-process on a free loopback port, bootstraps the container, and
// re-executes itself -processes times as workers (-worker -id wN; the
// endpoint, key and clock skew travel in the environment). Each worker
// runs a cdb provider with Cosmos-backed dispatch-slot leases
// (cdb.Leases, a 3 s lease) and a durable runtime with the workload
// registered and short locks (worker lock 2 s, so renewed every second;
// session lock 4 s); every activity execution appends a line to the
// worker's log, so re-executions are counted. With -clock-skew S the
// workers' provider clocks are spread evenly over [-S, +S].
//
// The workload is -orchestrations instances chaos-<kind>-<i>, round-robin
// over kinds whose output is a pure function of i (workload.go): a fan-out
// of activities summed; a timer of 0.5-2 s then an activity; a
// sub-orchestration; an event the driver raises; continue-as-new three
// times; a KV value set and read back; two activities on a session;
// activities longer than two lock renewals; messages the driver enqueues;
// a continue-as-new loop of 40 executions receiving messages meanwhile; a
// fan-out wider than one transactional batch (a large turn).
//
// The schedule kind (-kinds schedule, not in the default mix) gives each
// instance a schedule of five one-second fires; the checker counts one
// run per due time, none other, none started twice (schedules.go).
//
// The bigpayload kind (-kinds bigpayload, not in the default mix; it
// needs -large-payloads) passes payloads of 8 KiB to 3 MB, some over a
// Cosmos DB document's 2 MB, through activity results and inputs, a
// child's input, KV, a raised event, a continue-as-new input and the
// output (bigpayload.go). -large-payloads file|blob puts a claim-check
// last in the driver's and the workers' codec chain (payload/filestore in
// the run's directory, or payload/blobstore from DUROXIDE_BLOB_*) with a
// 4 KiB threshold; the checker counts the references the raw store holds
// (offloaded_payloads), reports every payload over the threshold stored
// inline (inline_large_payloads), deletes every other bigpayload
// instance and reports any of its payloads still there
// (leftover_payloads) and any other instance's reference that no longer
// reads back (missing_payloads) (largepayloads.go).
//
// The kitchen sink (-kinds kitchensink, not in the default mix) composes
// all of it: each instance runs a random program drawn from the seed and
// its index (activities, timers, events, queue messages, KV, sessions,
// children, nested and forked children, continue-as-new, children after
// it, a planted fault, an activity that heartbeats and resumes from its
// details after a kill) carried in its input, while an operator goroutine
// per instance carries out a plan drawn likewise: suspend then resume
// (also while a burst of more than a page of messages arrives), cancel,
// clear the planted fault and rewind (and restart at once), restart once
// terminal (after a late cancel), delete and re-create (forced while it
// runs), or two concurrent IDReuseAllowTerminal starts. Every action is
// recorded as intended with its answer; a reference model computes what
// each instance must end as (which run, completed with the program's
// output or cancelled, or gone), and the checker compares every instance
// with it, reporting violations by category under "kitchensink"
// (kitchensink.go, operator.go, model.go).
//
// While they run (at most -duration), the driver SIGKILLs a random worker
// every -kill-interval and restarts it with the same id, and every
// -fault-interval injects one fault kind for a while at the emulator, on
// every operation or (half of the time) one: 429s scattered or in a burst,
// 503 or 408 before or after the write applied (ambiguous outcomes),
// connections reset before or after the write applied, scattered or in a
// burst, added latency. Faults hit every call kind: lock renewals (patches),
// acks (batches), the workers' queries and reads, and the driver's own
// calls. The driver is a client as a real one is: it starts instances,
// raises events and enqueues messages (each with a payload unique in the
// run, recorded as intended before the call), and calls again after any
// error until the call succeeds.
//
// Then it clears the faults, waits for the rest to complete (the whole run
// is bounded by -timeout), stops the workers and checks: every instance
// completed with its expected output (completed, wrong_output; lost: never
// started; stuck: started, not finished); every execution's history has
// contiguous event ids (history_gaps), no completion recorded twice
// (duplicated_completions) and, once it ended, a completion for everything
// it scheduled (missing_completions); every message the driver meant to
// deliver is in the history exactly once (duplicated_deliveries,
// lost_deliveries, unintended_deliveries); no outbox intent or live lock
// is left (outbox_left, locks_left, after the lock timeouts passed).
// activity_executions and activity_reexecutions report at-least-once
// delivery; unanswered_activities the activities stuck instances wait
// for. It prints a table, or one JSON object with -json, progress and each
// problem found on stderr, and exits 1 on any violation.
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
//	-clock-skew      spread of the workers' clocks, [-this, +this] (default 0)
//	-max-attempts    the workers' durable.Options.MaxAttempts (default: 10 plus one per kill the run can make)
//	-seed            random seed (default: time-based)
//	-codec           store every payload gzipped and AES-GCM encrypted (a key made for the run)
//	-large-payloads  file or blob: payloads over 4 KiB out of the store (after -codec's codecs)
//	-keep            keep the working directory (worker logs)
//	-log-level       the workers' log level (default error; debug writes the provider's message trail)
//	-kinds           run only these kinds, comma-separated (default: all but kitchensink, schedule and bigpayload), to aim a run at one path
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
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
	// MaxAttempts is the workers' durable.Options.MaxAttempts (0:
	// killTolerantAttempts).
	MaxAttempts uint
	Seed        int64
	Keep        bool
	// Codec runs driver and workers through payload.Wrap (gzip, AES-GCM).
	Codec bool
	// LargePayloads puts a claim-check last in that chain: "file"
	// (payload/filestore in the run's directory), "blob"
	// (payload/blobstore from DUROXIDE_BLOB_*), or "" (none).
	LargePayloads string
	// LogLevel is the workers' slog level: error by default, debug for
	// the provider's message trail (trail.go) and the runtime's turns.
	LogLevel slog.Level
	// Kinds restricts the workload to these kinds (nil: all of them but
	// the kitchen sink).
	Kinds []string
	// Plans restricts the kitchen-sink operator to these plans (nil: all
	// of them), to aim a run at one composition.
	Plans []string
	// WorkerID is set with -worker: run as that worker.
	WorkerID string
	// workerCommand, when set, replaces the re-execution of this binary
	// (tests); nil uses os.Executable.
	workerCommand []string
}

// plans is the kitchen-sink operator's plans to draw from.
func (c *config) plans() []string {
	if len(c.Plans) > 0 {
		return c.Plans
	}
	return ksPlans
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
	fs.UintVar(&c.MaxAttempts, "max-attempts", 0, "the workers' MaxAttempts (0: 10 plus one per kill the run can make)")
	fs.Int64Var(&c.Seed, "seed", 0, "random seed (0: time-based)")
	fs.BoolVar(&c.Codec, "codec", false, "store every payload gzipped and AES-GCM encrypted (payload.Wrap, a key made for the run)")
	fs.StringVar(&c.LargePayloads, "large-payloads", "", "keep payloads over 4 KiB out of the store: file (in the run's directory) or blob (DUROXIDE_BLOB_*; e.g. Azurite)")
	fs.BoolVar(&c.Keep, "keep", false, "keep the working directory (worker logs)")
	fs.TextVar(&c.LogLevel, "log-level", slog.LevelError, "the workers' log level (debug writes the provider's message trail)")
	mix := fs.String("kinds", "", "comma-separated kinds to run (default: all but kitchensink, schedule and bigpayload; see the workload)")
	plans := fs.String("plans", "", "comma-separated kitchen-sink operator plans to draw from (default: all)")
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
	if *mix != "" {
		for _, k := range strings.Split(*mix, ",") {
			if !slices.Contains(allKinds, k) {
				return nil, fmt.Errorf("-kinds: unknown kind %q (the kinds are %s)", k, strings.Join(allKinds, ","))
			}
			c.Kinds = append(c.Kinds, k)
		}
	}
	switch {
	case c.LargePayloads != "" && c.LargePayloads != largeFile && c.LargePayloads != largeBlob:
		return nil, fmt.Errorf("-large-payloads: %q is neither file nor blob", c.LargePayloads)
	case c.LargePayloads == "" && slices.Contains(c.Kinds, bigPayloadKind):
		return nil, errors.New("-kinds bigpayload needs -large-payloads file or blob: its payloads reach 3 MB, more than a Cosmos DB document holds")
	}
	if *plans != "" {
		for _, p := range strings.Split(*plans, ",") {
			if !slices.Contains(ksPlans, p) {
				return nil, fmt.Errorf("-plans: unknown plan %q (the plans are %s)", p, strings.Join(ksPlans, ","))
			}
			c.Plans = append(c.Plans, p)
		}
	}
	if c.Ramp < 0 {
		c.Ramp = c.Duration / 2
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = killTolerantAttempts(c.Duration, c.KillInterval)
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

// killTolerantAttempts is the workers' MaxAttempts by default: duroxide's
// 10 plus every kill the chaos phase can make. Poison counts each fetch
// of a message, so that a message that keeps crashing its worker stops;
// the driver kills workers at random, and a message whose worker is killed
// while it runs (a slow activity outlives a short kill interval often) is
// fetched again, counted, through no fault of its own. A message poisoned
// beyond this bound met attempts that no kill explains: a defect.
func killTolerantAttempts(duration, killInterval time.Duration) uint {
	if killInterval <= 0 {
		return 10
	}
	return 10 + uint(duration/killInterval)
}
