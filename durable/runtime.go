package durable

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// Runtime runs the orchestrations and activities of a Registry against a
// Provider: OrchestrationConcurrency orchestration slots, WorkerConcurrency
// activity slots and a session manager, until Shutdown.
type Runtime struct {
	p    duroxide.Provider
	reg  *Registry
	opts Options
	// sizes remembers history sizes between turns (observeHistorySize).
	sizes sizeMarks
	log   *slog.Logger
	tel   *telemetry
	// unobserve unregisters the observable gauges.
	unobserve func()
	id        string
	client    *Client
	filter    *duroxide.DispatcherCapabilityFilter
	// supported is the range of pinned duroxide versions this runtime
	// replays (the filter's first range).
	supported duroxide.SemVerRange

	// ctx is passed to every provider call; it is cancelled only when a
	// graceful shutdown runs out of time.
	ctx    context.Context
	cancel context.CancelFunc
	// fetchCtx bounds fetches only: Shutdown cancels it at once, so a
	// long-polling provider does not hold Shutdown for its poll timeout.
	fetchCtx    context.Context
	fetchCancel context.CancelFunc
	// stop is closed by Shutdown: slots finish what they hold and exit.
	stop    chan struct{}
	stopped atomic.Bool
	wg      sync.WaitGroup

	orchWake, workWake *signal
	turns              localTurns   // wake.go
	discovered         atomic.Int64 // when a loop last ran discovery (UnixNano)
	notified           bool         // the provider notifies enqueues (wake.go)
	orchGate, workGate idleGate
	// orchSlots and workSlots bound the turns and activities running
	// code; the loops beyond them fetch ahead (dispatch_slots.go).
	orchSlots, workSlots *runSlots
	// handedOff counts the activities turns' acks locked for this
	// runtime that have not finished (dispatch_handoff.go).
	handedOff  atomic.Int64
	unregister func() // cancels the enqueue subscription (wake.go)
	// timers are the pending wake-ups at timers' fire times.
	timerMu  sync.Mutex
	timers   map[*time.Timer]struct{}
	sessions sessionTracker

	// now is the clock of timer fire times and event timestamps: time.Now,
	// or a test environment's virtual clock (useSeam).
	now func() time.Time
	// seam is what a test environment overrides (nil in production).
	seam *testhooks.Seam
	// unsubscribe stops the virtual clock's wake-ups.
	unsubscribe func()

	// blockedTurns counts each held instance's consecutive blocked turns
	// (nondeterminism.go), for its backoff.
	blockedMu    sync.Mutex
	blockedTurns map[string]uint32

	shutdownOnce sync.Once
	shutdownErr  error
}

// Start validates opts (nil = defaults) and starts the dispatchers. ctx
// only bounds start-up; the runtime runs until Shutdown.
func Start(ctx context.Context, p duroxide.Provider, reg *Registry, opts *Options) (*Runtime, error) {
	if p == nil {
		return nil, &InputError{Op: "start runtime", Reason: "nil provider"}
	}
	if reg == nil {
		return nil, &InputError{Op: "start runtime", Reason: "nil registry"}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r, ok := p.(duroxide.DispatchRefuser); ok {
		if err := r.RefuseDispatch(); err != nil {
			return nil, fmt.Errorf("start runtime: %w", err)
		}
	}
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	rt := &Runtime{
		p: p, reg: reg, opts: o, tel: newTelemetry(o.TracerProvider, o.MeterProvider),
		id:       fmt.Sprintf("%04x", rand.N(uint32(1<<16))),
		stop:     make(chan struct{}),
		orchWake: newSignal(), workWake: newSignal(),
		blockedTurns: map[string]uint32{}, timers: map[*time.Timer]struct{}{},
		now: time.Now, unsubscribe: func() {},
	}
	rt.useSeam(testhooks.From(ctx))
	rt.supported = duroxide.SemVerRange{Min: duroxide.SemVer{}, Max: duroxide.MustParseSemVer(DuroxideVersion)}
	if o.SupportedReplayVersions != nil {
		rt.supported = *o.SupportedReplayVersions
	}
	rt.filter = &duroxide.DispatcherCapabilityFilter{SupportedDuroxideVersions: []duroxide.SemVerRange{rt.supported}}
	rt.client = &Client{p: p, tel: rt.tel, runtimeWake: rt.selfWake}
	rt.unobserve = rt.tel.observeRuntime(o.MeterProvider, rt)
	rt.log = o.Logger.With("runtime_id", rt.id)
	rt.ctx, rt.cancel = context.WithCancel(context.WithoutCancel(ctx))
	rt.fetchCtx, rt.fetchCancel = context.WithCancel(rt.ctx)
	rt.unregister = rt.subscribeEnqueues()
	rt.log.Debug("duroxide runtime starting", "duroxide_version", DuroxideVersion, "provider", p.Name(), "provider_version", p.Version())
	rt.startSlots()
	return rt, nil
}

// supportedRange renders the replayable duroxide versions for the start-up
// log, as ">=min, <=max" (Rust's wording).
func (rt *Runtime) supportedRange() string {
	return ">=" + rt.supported.Min.String() + ", <=" + rt.supported.Max.String()
}

func (rt *Runtime) startSlots() {
	if rt.opts.OrchestrationConcurrency > 0 {
		rt.log.Info("Orchestration dispatcher capability filter configured", "supported_range", rt.supportedRange())
	}
	rt.orchSlots = newRunSlots(rt.opts.OrchestrationConcurrency, rt.tel.busySlots(queueOrchestrator))
	rt.workSlots = newRunSlots(rt.opts.WorkerConcurrency, rt.tel.busySlots(queueWorker))
	for i := range rt.opts.OrchestrationConcurrency + rt.opts.OrchestrationFetchAhead {
		rt.wg.Add(1)
		go rt.orchestrationLoop(fmt.Sprintf("orch-%d-%s", i, rt.id))
	}
	suffix := rt.id
	if rt.opts.WorkerNodeID != "" {
		suffix = rt.opts.WorkerNodeID
	}
	var owners []string
	for i := range rt.opts.WorkerConcurrency + rt.opts.WorkerFetchAhead {
		workerID := fmt.Sprintf("work-%d-%s", i, suffix)
		// Each loop owns its sessions, as each slot does in duroxide: a
		// session's activities run one at a time on its owner's loop.
		owner := workerID
		if rt.opts.WorkerNodeID != "" {
			owner = rt.opts.WorkerNodeID
		}
		if !slices.Contains(owners, owner) {
			owners = append(owners, owner)
		}
		rt.wg.Add(1)
		go rt.workerLoop(workerID, owner)
	}
	rt.wg.Add(1)
	go rt.sessionManager(owners)
}

// Client returns a Client over the runtime's provider.
func (rt *Runtime) Client() *Client { return rt.client }

// Shutdown stops fetching, waits for the turns and activities in flight to
// finish and be committed, and returns. If ctx ends first, in-flight
// provider calls and activity contexts are cancelled and ctx's error is
// returned; activity code that ignores its context may then still be
// running. Calling Shutdown again returns the first call's result.
func (rt *Runtime) Shutdown(ctx context.Context) error {
	rt.shutdownOnce.Do(func() {
		rt.stopped.Store(true)
		close(rt.stop)
		rt.fetchCancel()
		rt.unregister()
		rt.unsubscribe()
		rt.unobserve()
		rt.stopTimers()
		done := make(chan struct{})
		go func() { rt.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			rt.cancel()
			// Provider calls return promptly once cancelled; give the
			// slots a moment to observe it so nothing outlives Shutdown
			// except activity code that ignores its context.
			select {
			case <-done:
			case <-time.After(time.Second):
			}
			rt.shutdownErr = ctx.Err()
		}
		rt.cancel()
	})
	return rt.shutdownErr
}

func (rt *Runtime) stopping() bool { return rt.stopped.Load() }

// Idle polling. While a queue has no work, one slot per queue (the
// poller) keeps fetching, waiting MinPollInterval after an empty fetch and
// doubling up to MaxIdlePollInterval; the queue's other slots sleep until
// woken. The poller wakes them when it finds work (there may be more),
// and local enqueues and timers wake everyone. So an idle runtime costs a
// short-polling store two fetches per MaxIdlePollInterval, however many
// slots it has.

// idleGate elects a queue's poller.
type idleGate struct {
	mu     sync.Mutex
	poller bool
}

// idleState is one slot's view: whether it is the poller and its backoff.
type idleState struct {
	gate     *idleGate
	wake     *signal
	poller   bool
	min, max time.Duration
	cur      time.Duration
}

func (rt *Runtime) newIdle(gate *idleGate, wake *signal) *idleState {
	return &idleState{gate: gate, wake: wake, min: rt.opts.MinPollInterval, max: rt.opts.MaxIdlePollInterval}
}

// found records a fetch that returned work and reports whether this
// slot was the poller. A poller steps down and wakes the sleeping slots,
// since a burst of work may have begun; without a wake signal the caller
// must pass the role on itself, or the slots asleep until woken would
// leave nobody polling while it is busy.
func (s *idleState) found() (steppedDown bool) {
	s.cur = 0
	if !s.poller {
		return false
	}
	s.poller = false
	s.gate.mu.Lock()
	s.gate.poller = false
	s.gate.mu.Unlock()
	if s.wake != nil {
		s.wake.fire()
	}
	return true
}

// empty records an empty fetch and returns how long to wait for a wake-up
// (0: until woken, for slots that are not the poller).
func (s *idleState) empty() time.Duration {
	if !s.poller {
		s.gate.mu.Lock()
		if !s.gate.poller {
			s.gate.poller, s.poller = true, true
		}
		s.gate.mu.Unlock()
	}
	if !s.poller {
		return 0
	}
	if s.cur == 0 {
		s.cur = s.min
	} else {
		s.cur = min(s.cur*2, s.max)
	}
	return s.cur
}

// emptyOr is empty for a wait the caller caps: a slot that is not the
// poller gets d instead of "until woken".
func (s *idleState) emptyOr(d time.Duration) time.Duration {
	if w := s.empty(); w > 0 {
		return w
	}
	return d
}

// idleWait sleeps for d (0: indefinitely), or until woken (local work) or
// stopped.
func (rt *Runtime) idleWait(woken <-chan struct{}, d time.Duration) {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-woken:
	case <-timeout:
	case <-rt.stop:
	}
}

// fetchErrorPause sleeps after a failed fetch as duroxide does: retryable
// errors back off 100 ms·2^n up to 3 s, others wait 100 ms. It returns the
// new count of consecutive retryable errors.
func (rt *Runtime) fetchErrorPause(err error, retryable int, what string) int {
	if errors.Is(err, context.Canceled) && rt.stopping() {
		return retryable
	}
	d := 100 * time.Millisecond
	if duroxide.IsRetryable(err) {
		retryable++
		d = min(100*time.Millisecond<<min(retryable, 6), 3*time.Second)
		rt.log.Warn("error fetching "+what+" (retryable)", "attempt", retryable, "backoff", d, "error", err)
	} else {
		retryable = 0
		rt.log.Warn("error fetching "+what+" (permanent)", "error", err)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-rt.stop:
	}
	return retryable
}

// useSeam applies what a test environment (durable/testenv) overrides,
// read once from the context given to Start: its virtual clock, whose
// moves wake the dispatchers, and its activity doubles.
func (rt *Runtime) useSeam(s *testhooks.Seam) {
	if s == nil {
		return
	}
	rt.seam = s
	if s.Now != nil {
		rt.now = s.Now
	}
	if s.Subscribe != nil {
		rt.unsubscribe = s.Subscribe(func() {
			rt.orchWake.fire()
			rt.workWake.fire()
		})
	}
}

// virtualClock reports whether a test environment drives the clock; it
// wakes the dispatchers itself when timers come due. A seam's clock
// without Subscribe tells nobody when it moves, so the runtime keeps its
// own timers under it.
func (rt *Runtime) virtualClock() bool {
	return rt.seam != nil && rt.seam.Now != nil && rt.seam.Subscribe != nil
}

// resolveActivity returns the activity to run for name: a test double if
// one replaces it, else the registry's. UTCNow reads the runtime's clock.
func (rt *Runtime) resolveActivity(name string) (ActivityFunc, bool) {
	if rt.seam != nil && rt.seam.Activity != nil {
		if fn, ok := rt.seam.Activity(name); ok {
			if af, ok := fn.(ActivityFunc); ok {
				return af, true
			}
		}
	}
	if name == SyscallUTCNowMs && rt.virtualClock() {
		return func(ActivityContext, string) (string, error) {
			return strconv.FormatInt(rt.now().UnixMilli(), 10), nil
		}, true
	}
	return rt.reg.resolveActivity(name)
}
