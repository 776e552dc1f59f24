package main

import (
	"context"
	"encoding/json"

	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/durable"
)

// driver is the state of one run.
type driver struct {
	cfg     *config
	stderr  io.Writer
	srv     *cosmostest.Server
	p       *cdb.Provider
	client  *durable.Client
	workers *workerSet
	dir     string
	rng     *rand.Rand
	start   time.Time

	mu       sync.Mutex
	done     map[int]bool // top-level instances seen terminal
	raised   map[int]bool // event instances whose event was raised
	kills    int
	faults   map[string]int
	faulted  map[string]int // requests each fault kind applied to
	active   string
	chaosEnd atomic.Bool
}

// run is the driver role: set up, run the chaos phase, drain, check.
func run(ctx context.Context, cfg *config, stdout, stderr io.Writer) (ok bool, err error) {
	d := &driver{cfg: cfg, stderr: stderr, rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5eed)),
		done: map[int]bool{}, raised: map[int]bool{}, faults: map[string]int{}, faulted: map[string]int{}, start: time.Now()}
	if err := d.setUp(ctx); err != nil {
		return false, err
	}
	defer d.tearDown()
	d.logf("seed %d; %d workers, %d orchestrations, emulator %s, logs in %s", cfg.Seed, cfg.Processes, cfg.Orchestrations, d.srv.Endpoint(), d.dir)

	runCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- d.startInstances(runCtx) }()
	d.chaosPhase(runCtx)
	if err := <-started; err != nil {
		return false, err
	}
	d.srv.ClearFaults()
	d.srv.SetLatency(0, 0)
	d.logf("chaos over (%d kills, %d faults); faults cleared, waiting for the rest", d.kills, sum(d.faults))
	d.ensureWorkers()
	d.waitAll(runCtx, nil)
	d.workers.stopAll(15 * time.Second)
	if ctx.Err() != nil {
		d.logf("interrupted; workers stopped")
		return false, ctx.Err()
	}
	d.logf("workers stopped; checking")

	checkCtx, cancelCheck := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancelCheck()
	rep, err := d.check(checkCtx)
	if err != nil {
		return false, err
	}
	rep.finish(time.Since(d.start))
	if err := rep.print(stdout, cfg.JSON); err != nil {
		return false, err
	}
	if !rep.OK {
		d.logf("violations: %s (logs kept in %s)", strings.Join(rep.Violations, ", "), d.dir)
		d.cfg.Keep = true
	}
	return rep.OK, nil
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func (d *driver) logf(format string, args ...any) {
	fmt.Fprintf(d.stderr, "[%6.1fs] %s\n", time.Since(d.start).Seconds(), fmt.Sprintf(format, args...))
}

// setUp starts the emulator, bootstraps the container and starts the
// workers.
func (d *driver) setUp(ctx context.Context) (err error) {
	d.srv, err = cosmostest.NewServer(&cosmostest.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		return err
	}
	if d.dir, err = os.MkdirTemp("", "duroxide-chaos-"); err != nil {
		d.srv.Close()
		return err
	}
	// The driver's provider only starts instances, raises events and reads
	// results; its maintenance loop stays off (the workers run theirs).
	d.p, err = cdb.New(ctx, cdb.Config{Endpoint: d.srv.Endpoint(), Key: d.srv.Key(),
		ClientOptions: &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Telemetry: policy.TelemetryOptions{ApplicationID: driverAppID}}}},
		&cdb.Options{MaintenanceInterval: -1})
	if err != nil {
		d.tearDown()
		return fmt.Errorf("bootstrapping the container: %w", err)
	}
	d.client = durable.NewClient(d.p)
	command := d.cfg.workerCommand
	if command == nil {
		exe, err := os.Executable()
		if err != nil {
			d.tearDown()
			return err
		}
		command = []string{exe}
	}
	d.workers = &workerSet{command: command, dir: d.dir, procs: map[string]*exec.Cmd{}, exited: map[*exec.Cmd]chan struct{}{},
		env: []string{cdb.EnvEndpoint + "=" + d.srv.Endpoint(), cdb.EnvKey + "=" + d.srv.Key(), envLogDir + "=" + d.dir}}
	for i := range d.cfg.Processes {
		if err := d.workers.start(workerID(i)); err != nil {
			d.tearDown()
			return err
		}
	}
	return nil
}

func workerID(i int) string { return fmt.Sprintf("w%d", i+1) }

// tearDown stops whatever setUp started. Safe to call more than once.
func (d *driver) tearDown() {
	if d.workers != nil {
		d.workers.stopAll(5 * time.Second)
	}
	if d.p != nil {
		_ = d.p.Close()
		d.p = nil
	}
	if d.srv != nil {
		d.srv.Close()
	}
	if d.dir != "" && !d.cfg.Keep {
		_ = os.RemoveAll(d.dir)
	}
}

// startInstances starts every top-level instance, spread evenly over
// -ramp so that the chaos meets instances at every stage.
func (d *driver) startInstances(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make(chan error, d.cfg.Orchestrations)
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				in := orchInput{Kind: kinds[i%len(kinds)], Index: i}
				if err := retry(ctx, func() error { return d.client.StartOrchestration(ctx, instanceName(i), orchName, in) }); err != nil {
					errs <- fmt.Errorf("starting %s: %w", instanceName(i), err)
				}
			}
		}()
	}
	begin := time.Now()
	for i := range d.cfg.Orchestrations {
		due := begin.Add(d.cfg.Ramp * time.Duration(i) / time.Duration(d.cfg.Orchestrations))
		if sleepCtx(ctx, time.Until(due)) {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	d.logf("started %d instances", d.cfg.Orchestrations)
	return nil
}

// retry calls fn until it succeeds, a few times, for the driver's own
// requests (which faults spare, but added latency and a loaded machine may
// still time out).
func retry(ctx context.Context, fn func() error) error {
	var err error
	for attempt := range 5 {
		if err = fn(); err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	return err
}

// chaosPhase kills workers and injects faults until every instance is done
// or -duration passes, raising events and reporting progress meanwhile.
func (d *driver) chaosPhase(ctx context.Context) {
	phase, cancel := context.WithTimeout(ctx, d.cfg.Duration)
	defer cancel()
	var wg sync.WaitGroup
	if d.cfg.KillInterval > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); d.killLoop(phase) }()
	}
	if d.cfg.FaultInterval > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); d.faultLoop(phase) }()
	}
	d.waitAll(phase, cancel)
	cancel()
	wg.Wait()
}

// killLoop SIGKILLs a random worker every KillInterval and restarts it
// with the same id (its slot leases are still its own).
func (d *driver) killLoop(ctx context.Context) {
	t := time.NewTicker(d.cfg.KillInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.mu.Lock()
		id := workerID(d.rng.IntN(d.cfg.Processes))
		d.mu.Unlock()
		d.workers.kill(id)
		d.mu.Lock()
		d.kills++
		d.mu.Unlock()
		if err := d.workers.start(id); err != nil {
			d.logf("restarting %s: %v", id, err)
		}
	}
}

// faultLoop injects one fault kind every FaultInterval, for 3/4 of it.
func (d *driver) faultLoop(ctx context.Context) {
	d.mu.Lock()
	picker := &faultPicker{rng: rand.New(rand.NewPCG(d.rng.Uint64(), 1))}
	d.mu.Unlock()
	for {
		kind := picker.next()
		name := kind.Name
		remove, err := inject(d.srv, kind, func() {
			d.mu.Lock()
			d.faulted[name]++
			d.mu.Unlock()
		})
		if err != nil {
			d.logf("fault %s: %v", kind.Name, err)
			return
		}
		d.mu.Lock()
		d.faults[kind.Name]++
		d.active = kind.Name
		d.mu.Unlock()
		stopped := sleepCtx(ctx, d.cfg.FaultInterval*3/4)
		remove()
		d.mu.Lock()
		d.active = ""
		d.mu.Unlock()
		if stopped || sleepCtx(ctx, d.cfg.FaultInterval/4) {
			return
		}
	}
}

// sleepCtx sleeps for dur; it reports true if ctx ended first.
func sleepCtx(ctx context.Context, dur time.Duration) bool {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return true
	case <-t.C:
		return false
	}
}

// ensureWorkers restarts any worker that is not running (killed at the
// end of the chaos phase, or crashed).
func (d *driver) ensureWorkers() {
	for i := range d.cfg.Processes {
		if id := workerID(i); !d.workers.running(id) {
			d.logf("worker %s not running; restarting it", id)
			if err := d.workers.start(id); err != nil {
				d.logf("restarting %s: %v", id, err)
			}
		}
	}
}

// waitAll polls until every top-level instance is terminal or ctx ends,
// raising the external events instances wait for and printing progress.
// It calls allDone (if set) once every instance is terminal.
func (d *driver) waitAll(ctx context.Context, allDone func()) {
	lastLog := time.Time{}
	for {
		n := d.poll(ctx)
		if time.Since(lastLog) >= 2*time.Second || n == d.cfg.Orchestrations {
			lastLog = time.Now()
			d.mu.Lock()
			active := d.active
			if active == "" {
				active = "none"
			}
			reqs := 0
			for _, c := range d.srv.Counts() {
				reqs += c
			}
			d.logf("%d/%d done, %d kills, %d faults (now: %s), %d requests", n, d.cfg.Orchestrations, d.kills, sum(d.faults), active, reqs)
			d.mu.Unlock()
		}
		if n == d.cfg.Orchestrations {
			if allDone != nil {
				allDone()
			}
			return
		}
		if sleepCtx(ctx, 500*time.Millisecond) {
			return
		}
	}
}

// poll reads which instances are terminal and raises due events; it
// returns how many top-level instances are terminal.
func (d *driver) poll(ctx context.Context) int {
	for _, status := range []string{"Completed", "Failed"} {
		ids, err := d.p.ListInstancesByStatus(ctx, status)
		if err != nil {
			continue
		}
		d.mu.Lock()
		for _, id := range ids {
			if _, i, ok := parseInstance(id); ok && i < d.cfg.Orchestrations {
				d.done[i] = true
			}
		}
		d.mu.Unlock()
	}
	d.raiseDue(ctx)
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.done)
}

// raiseDue raises the event of every "event" instance that waits for it
// (custom status "waiting", set in the turn that subscribed).
func (d *driver) raiseDue(ctx context.Context) {
	var due []int
	d.mu.Lock()
	for i := 0; i < d.cfg.Orchestrations; i++ {
		if kinds[i%len(kinds)] == "event" && !d.raised[i] && !d.done[i] {
			due = append(due, i)
		}
	}
	d.mu.Unlock()
	for _, i := range due {
		cs, err := d.p.GetCustomStatus(ctx, instanceName(i), 0)
		if err != nil || cs == nil || cs.Status == nil || *cs.Status != statusWaiting {
			continue
		}
		// One key per instance: a raise retried after an unseen outcome
		// (the next round) is delivered once.
		key := durable.EventOptions{IdempotencyKey: "chaos-raise"}
		if err := d.client.RaiseEvent(ctx, instanceName(i), eventName, eventPayload(i), key); err != nil {
			continue
		}
		d.mu.Lock()
		d.raised[i] = true
		d.mu.Unlock()
	}
}

// check reads every instance back and fills the report.
func (d *driver) check(ctx context.Context) (*Report, error) {
	r := &Report{Processes: d.cfg.Processes, Expected: d.cfg.Orchestrations, Kills: d.kills, Faults: d.faults, FaultedRequests: d.faulted}
	var problems []string
	for i := range d.cfg.Orchestrations {
		o := outcome{Instance: instanceName(i), Index: i, State: "NotFound"}
		st, err := d.client.GetOrchestrationStatus(ctx, o.Instance)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", o.Instance, err)
		}
		if st != nil {
			o.State = st.State.String()
			switch st.State {
			case durable.StateCompleted:
				if o.Output, err = durable.DecodeOutput[string](st); err != nil {
					o.Output = st.Output
				}
			case durable.StateFailed:
				o.Output = st.FailureMessage()
			}
		}
		if p := checkOutcome(o, r); p != "" {
			problems = append(problems, p)
		} else if kinds[i%len(kinds)] == "kv" {
			// The store itself, not only the orchestration's view of it.
			v, found, err := d.client.GetKVValue(ctx, o.Instance, "k")
			if err != nil {
				return nil, fmt.Errorf("reading the KV store of %s: %w", o.Instance, err)
			}
			if want := fmt.Sprintf("v%d", i); !found || v != want { // typed strings are stored as raw text
				r.WrongOutput++
				problems = append(problems, fmt.Sprintf("%s: KV k = %q (found %v), want %q", o.Instance, v, found, want))
			}
		}
	}
	ids, err := d.p.ListInstances(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		execs, err := d.p.ListExecutions(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("executions of %s: %w", id, err)
		}
		r.InstancesChecked++
		for _, e := range execs {
			events, err := d.p.ReadHistoryWithExecutionID(ctx, id, e)
			if err != nil {
				return nil, fmt.Errorf("history of %s#%d: %w", id, e, err)
			}
			c := checkExecution(id, e, events)
			r.ExecutionsChecked++
			r.EventsChecked += len(events)
			r.HistoryGaps += c.Gaps
			r.DuplicatedCompletions += c.DuplicatedCompletions
			problems = append(problems, c.Problems...)
		}
	}
	if r.ActivityExecutions, r.ActivityReexecutions, err = countActivityLogs(d.dir); err != nil {
		return nil, err
	}
	if err := d.countLeftovers(ctx, r); err != nil {
		return nil, err
	}
	for i, p := range problems {
		if i == 50 {
			d.logf("... and %d more problems", len(problems)-50)
			break
		}
		d.logf("problem: %s", p)
	}
	return r, nil
}

// leftover is the part of a document countLeftovers looks at.
type leftover struct {
	Type        string  `json:"type"`
	LockToken   *string `json:"lockToken"`
	LockedUntil *int64  `json:"lockedUntil"`
	OwnerID     *string `json:"ownerId"`
}

// countLeftovers counts outbox intents, queue messages and live locks. A
// lock of a killed worker lasts until it expires, so locks are counted
// once the longest lock timeout has passed since the workers stopped (an
// expired lock is free); what remains was never going to be released.
func (d *driver) countLeftovers(ctx context.Context, r *Report) error {
	ct, err := d.srv.Client().NewContainer(cdb.DefaultDatabase, cdb.DefaultContainer)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(max(workerLockTimeout, sessionLockTimeout, orchLockTimeout) + 2*time.Second)
	for {
		r.OutboxLeft, r.QueueLeft, r.LocksLeft = 0, 0, 0
		now := time.Now().UnixMilli()
		q := "SELECT c.type, c.lockToken, c.lockedUntil, c.ownerId FROM c WHERE c.type IN (@outbox, @orch, @worker, @instance, @session)"
		params := []azcosmos.QueryParameter{{Name: "@outbox", Value: "outbox_intent"}, {Name: "@orch", Value: "orch_queue"},
			{Name: "@worker", Value: "worker_queue"}, {Name: "@instance", Value: "instance"}, {Name: "@session", Value: "session"}}
		pager := ct.NewQueryItemsPager(q, azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{QueryParameters: params})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				return fmt.Errorf("scanning for leftovers: %w", err)
			}
			for _, item := range page.Items {
				var doc leftover
				if err := json.Unmarshal(item, &doc); err != nil {
					return err
				}
				switch doc.Type {
				case "outbox_intent":
					r.OutboxLeft++
				case "orch_queue", "worker_queue":
					r.QueueLeft++
				}
				locked := doc.LockedUntil != nil && *doc.LockedUntil > now && (doc.LockToken != nil || (doc.OwnerID != nil && *doc.OwnerID != ""))
				if locked {
					r.LocksLeft++
				}
			}
		}
		if r.LocksLeft == 0 || time.Now().After(deadline) {
			return nil
		}
		if sleepCtx(ctx, time.Second) {
			return ctx.Err()
		}
	}
}
