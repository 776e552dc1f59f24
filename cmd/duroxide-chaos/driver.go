package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	"github.com/duroxide-go/cdb/duroxide"
)

// driver is the state of one run.
type driver struct {
	cfg    *config
	stderr io.Writer
	srv    *cosmostest.Server
	p      *cdb.Provider
	// store and admin are p, or p through payload.Wrap with -codec: what
	// the driver reads and writes payloads through.
	store   duroxide.Provider
	admin   duroxide.ProviderAdmin
	client  *durable.Client
	workers *workerSet
	dir     string
	logFile *os.File // the driver's provider log (driver.log in dir)
	rng     *rand.Rand
	start   time.Time

	mu      sync.Mutex
	done    map[int]bool // top-level instances seen terminal
	kills   int
	faults  map[string]int
	faulted map[string]int // requests each fault kind applied to
	calls   map[string]int // faulted requests by call kind
	// ambiguous counts the driver's writes answered with an error after
	// the server applied them.
	ambiguous int
	active    string
	chaosEnd  atomic.Bool
	// intents is every message the driver meant to deliver, by instance.
	intents map[string][]intent
	// clientCalls and clientRetries count the driver's client calls and
	// how many of them it had to repeat after an error.
	clientCalls, clientRetries int
	// senders are the per-instance goroutines that raise events and
	// enqueue messages, and the kitchen sink's lives.
	senders sync.WaitGroup
	// ks is the kitchen sink's instances, by index (operator.go).
	ks map[int]*ksLife
	// schedules is each schedule kind's start, by index (schedules.go).
	schedules map[int]time.Time
	// large is -large-payloads' claim-check, largeCheck the same without
	// a cache, payloadDir the file store's directory ("" with blobs), and
	// refs the references the raw store holds, by instance
	// (largepayloads.go).
	large, largeCheck largeCodec
	payloadDir        string
	refs              map[string]map[string]bool
}

// run is the driver role: set up, run the chaos phase, drain, check.
func run(ctx context.Context, cfg *config, stdout, stderr io.Writer) (ok bool, err error) {
	// The mix is this run's, and only for the run: a run in a test must
	// not leave its -kinds to the next (whose re-executed workers have
	// the default mix).
	defer func(before []string) { mix = before }(mix)
	mix = kinds
	if cfg.Kinds != nil {
		mix = cfg.Kinds
	}
	d := &driver{cfg: cfg, stderr: stderr, rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5eed)),
		done: map[int]bool{}, faults: map[string]int{}, faulted: map[string]int{}, calls: map[string]int{},
		intents: map[string][]intent{}, start: time.Now(), ks: newKSLives(cfg.Seed, cfg.Orchestrations, cfg.plans())}
	if err := d.setUp(ctx); err != nil {
		return false, err
	}
	defer d.tearDown()
	d.logf("seed %d; %d workers (clock skews %v), %d orchestrations, emulator %s, logs in %s", cfg.Seed, cfg.Processes, d.workers.skews, cfg.Orchestrations, d.srv.Endpoint(), d.dir)

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
	d.senders.Wait() // done once all completed; at worst runCtx ended
	d.waitOutboxDrained(runCtx)
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
	logFile, err := os.OpenFile(filepath.Join(d.dir, "driver.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		d.srv.Close()
		_ = os.RemoveAll(d.dir)
		return err
	}
	d.logFile = logFile
	logger := slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: d.cfg.LogLevel}))
	// The driver's provider only starts instances, raises events and reads
	// results; its maintenance loop stays off (the workers run theirs).
	d.p, err = cdb.New(ctx, cdb.Config{Endpoint: d.srv.Endpoint(), Key: d.srv.Key(),
		ClientOptions: &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Telemetry: policy.TelemetryOptions{ApplicationID: driverAppID}}}},
		&cdb.Options{MaintenanceInterval: -1, Logger: logger})
	if err != nil {
		d.tearDown()
		return fmt.Errorf("bootstrapping the container: %w", err)
	}
	d.store, d.admin = d.p, d.p
	codecEnv, err := d.wrapWithCodecs(ctx)
	if err != nil {
		d.tearDown()
		return err
	}
	d.client = durable.NewClient(d.store)
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
		skews: workerSkews(d.cfg.Processes, d.cfg.MaxClockSkew),
		env: []string{cdb.EnvEndpoint + "=" + d.srv.Endpoint(), cdb.EnvKey + "=" + d.srv.Key(), envLogDir + "=" + d.dir,
			envSkewMargin + "=" + skewMargin(d.cfg.MaxClockSkew).String(), envMaxAttempts + "=" + strconv.FormatUint(uint64(d.cfg.MaxAttempts), 10),
			envLogLevel + "=" + d.cfg.LogLevel.String()}}
	d.workers.env = append(d.workers.env, codecEnv...)
	for i := range d.cfg.Processes {
		if err := d.workers.start(workerID(i)); err != nil {
			d.tearDown()
			return err
		}
	}
	return nil
}

func workerID(i int) string { return fmt.Sprintf("w%d", i+1) }

// workerSkews spreads the workers' clock skews evenly over
// [-maxSkew, +maxSkew]: with three workers, one behind, one on time, one
// ahead. A single worker gets +maxSkew.
func workerSkews(n int, maxSkew time.Duration) map[string]time.Duration {
	out := make(map[string]time.Duration, n)
	for i := range n {
		if n == 1 {
			out[workerID(i)] = maxSkew
			continue
		}
		out[workerID(i)] = -maxSkew + 2*maxSkew*time.Duration(i)/time.Duration(n-1)
	}
	return out
}

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
	if d.logFile != nil {
		_ = d.logFile.Close()
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
				if kindOf(i) == kitchenSink {
					d.startKitchenSink(ctx, i)
					continue
				}
				in := orchInput{Kind: kindOf(i), Index: i}
				if err := d.call(ctx, func() error { return d.client.StartOrchestration(ctx, instanceName(i), orchName, in) }); err != nil {
					if ctx.Err() == nil {
						errs <- fmt.Errorf("starting %s: %w", instanceName(i), err)
					}
					continue
				}
				if kindOf(i) == scheduleKind {
					if err := d.startSchedule(ctx, i); err != nil && ctx.Err() == nil {
						errs <- fmt.Errorf("creating %s: %w", scheduleID(i), err)
					}
					continue
				}
				d.startSender(ctx, i)
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

// call makes one client call the way a real caller would: on any error
// (a 503, a timeout, a dropped connection, whether or not the server
// applied the request) it calls again, until the call succeeds or ctx
// ends. Only bad input is not repeated.
func (d *driver) call(ctx context.Context, fn func() error) error {
	d.mu.Lock()
	d.clientCalls++
	d.mu.Unlock()
	for attempt := 0; ; attempt++ {
		err := fn()
		var bad *durable.InputError
		if err == nil || ctx.Err() != nil || errors.As(err, &bad) {
			return err
		}
		d.mu.Lock()
		d.clientRetries++
		d.mu.Unlock()
		if sleepCtx(ctx, min(time.Duration(attempt+1)*100*time.Millisecond, time.Second)) {
			return ctx.Err()
		}
	}
}

// send delivers one intended message to instance i, recording it first:
// the checker verifies each was received exactly once. Like a careful
// caller, it gives every intent its own idempotency key (the payload is
// unique), so a call repeated after an ambiguous failure is recognised as
// the same message.
func (d *driver) send(ctx context.Context, i int, in intent) error {
	inst := instanceName(i)
	d.mu.Lock()
	d.intents[inst] = append(d.intents[inst], in)
	d.mu.Unlock()
	key := durable.EventOptions{IdempotencyKey: idempotencyKey(in)}
	return d.call(ctx, func() error {
		if in.Queue {
			return d.client.EnqueueEvent(ctx, inst, in.Name, in.Data, key)
		}
		return d.client.RaiseEvent(ctx, inst, in.Name, in.Data, key)
	})
}

// idempotencyKey is in's key: its name and payload, or for a payload
// longer than a key may be (the bigpayload kind's) the payload's SHA-256.
func idempotencyKey(in intent) string {
	if len(in.Data) > 64 {
		return in.Name + "/sha256:" + shaHex(in.Data)
	}
	return in.Name + "/" + in.Data
}

// startSender starts the goroutine that sends instance i what its kind
// waits for: the event and then the end marker (event), the messages and
// then the end marker (inbox, canloop: spread over a few seconds, so that
// they arrive while the loop continues as new). The end marker is sent
// only once every other send succeeded, so the instance cannot complete
// before all of them arrived.
func (d *driver) startSender(ctx context.Context, i int) {
	kind := kindOf(i)
	if kind != "event" && kind != bigPayloadKind && messageCount(i) == 0 {
		return
	}
	d.mu.Lock()
	rng := rand.New(rand.NewPCG(d.rng.Uint64(), uint64(i)))
	d.mu.Unlock()
	d.senders.Add(1)
	go func() {
		defer d.senders.Done()
		if kind == bigPayloadKind {
			// Its end is continue-as-new, not a queue's end marker.
			if d.awaitWaiting(ctx, i) {
				_ = d.send(ctx, i, intent{Name: eventName, Data: bigEventPayload(i)})
			}
			return
		}
		if kind == "event" {
			if !d.awaitWaiting(ctx, i) || d.send(ctx, i, intent{Name: eventName, Data: eventPayload(i)}) != nil {
				return
			}
		}
		for _, m := range messagesOf(i) {
			if kind == "canloop" && sleepCtx(ctx, time.Duration(200+rng.IntN(800))*time.Millisecond) {
				return
			}
			if d.send(ctx, i, intent{Queue: true, Name: queueName, Data: m}) != nil {
				return
			}
		}
		_ = d.send(ctx, i, intent{Queue: true, Name: queueName, Data: endMarker})
	}()
}

// awaitWaiting polls until event instance i waits for its event (custom
// status "waiting", set in the turn that subscribed): an event raised
// before the subscription would not be matched. It gives up if the
// instance ended meanwhile (failed: the checker reports it).
func (d *driver) awaitWaiting(ctx context.Context, i int) bool {
	for {
		d.mu.Lock()
		ended := d.done[i]
		d.mu.Unlock()
		if ended {
			return false
		}
		cs, err := d.store.CustomStatus(ctx, instanceName(i), 0)
		if err == nil && cs != nil && cs.Status != nil && *cs.Status == statusWaiting {
			return true
		}
		if sleepCtx(ctx, 300*time.Millisecond) {
			return false
		}
	}
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
		d.mu.Lock()
		narrow := d.rng.IntN(2) == 0
		d.mu.Unlock()
		target, remove, err := inject(d.srv, kind, narrow, picker.rng, func(op cosmostest.Op, client bool) {
			call := "worker:" + string(op)
			if client {
				call = "client:" + string(op)
			}
			d.mu.Lock()
			d.faulted[name]++
			d.calls[call]++
			if client && kind.appliesFirst() {
				d.ambiguous++
			}
			d.mu.Unlock()
		})
		if err != nil {
			d.logf("fault %s: %v", kind.Name, err)
			return
		}
		d.mu.Lock()
		d.faults[kind.Name]++
		d.active = kind.Name + "@" + target
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
// printing progress.
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

// poll reads which instances are terminal; it returns how many top-level
// instances are terminal.
func (d *driver) poll(ctx context.Context) int {
	for _, status := range []string{"Completed", "Failed"} {
		ids, err := d.admin.ListInstancesByStatus(ctx, status)
		if err != nil {
			continue
		}
		d.mu.Lock()
		for _, id := range ids {
			// A kitchen-sink instance is done when its life is (its
			// operator may restart it once terminal).
			if kind, i, ok := parseInstance(id); ok && i < d.cfg.Orchestrations && kind != kitchenSink {
				d.done[i] = true
			}
		}
		d.mu.Unlock()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.done)
}

// skewMargin is the workers' cdb.Options.MaxClockSkew for clocks spread
// over [-spread, +spread]: the largest difference between two of them
// (twice the spread), plus a second, so no worker takes another's live
// lock or lease, as docs/reliability.md tells users to configure it. Without a
// spread it is a second: the margin's code path stays in the soak without
// adding the default 30 s to every recovery after a kill.
func skewMargin(spread time.Duration) time.Duration { return 2*spread + time.Second }
