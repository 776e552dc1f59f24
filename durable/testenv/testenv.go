// Package testenv runs orchestrations in a test on a virtual clock: a
// durable.Runtime over a memprovider.Provider whose time moves only when
// the environment moves it. Whenever the runtime is idle — no message it
// could fetch, no turn or activity in flight — the environment jumps the
// clock to the next thing due: a durable timer's fire time, the end of a
// backoff, or an event the test scheduled with RaiseEventAt. A 30-day
// approval timeout therefore completes in milliseconds of wall time, with
// the history the runtime would have written over those 30 days.
//
// Start with [New] and [Env.WaitForOrchestration]; the package Example
// decides a 14-day trial in virtual time.
//
// Activities can be replaced per name by test doubles (ReplaceActivity);
// the orchestration code is the registry's own. Idleness is read from the
// provider's queues (memprovider.WorkState), which only this process's
// runtime changes, so it is exact and the environment does not guess by
// waiting: once idle, nothing happens until the clock or a client moves.
//
// The environment is the Go counterpart of Temporal's
// testsuite.TestWorkflowEnvironment. It runs the real runtime, replay
// engine and provider contract; only time is virtual.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
	"github.com/duroxide-go/cdb/memprovider"
)

// ErrStalled reports that an orchestration waited on by
// WaitForOrchestration is not finished, and nothing will ever move it:
// the runtime is idle, no timer or backoff is pending and no scheduled
// event remains. Typically it waits for an event the test never raises.
var ErrStalled = errors.New("testenv: orchestration stalled")

// ErrTooManySteps reports that WaitForOrchestration moved the clock
// Options.MaxSteps times without the orchestration finishing: a loop of
// timers that never ends.
var ErrTooManySteps = errors.New("testenv: too many clock steps")

// ErrBlocked reports that the instance waited on by WaitForOrchestration
// is held because its code does not replay its own history
// (durable.StateBlocked, under the default NondeterminismBlock); the
// status's BlockedReason names the mismatching call and event. Time does
// not cure that, so the clock is not moved on.
var ErrBlocked = errors.New("testenv: orchestration blocked by nondeterminism")

// DefaultStart is the virtual clock's default start, fixed so that
// histories are the same on every run.
var DefaultStart = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

// Options configures an Env; the zero value (or nil) gives the defaults.
type Options struct {
	// Start is the virtual clock's start (default DefaultStart).
	Start time.Time
	// Runtime configures the runtime (nil: durable's defaults). Its
	// WorkerTagFilter is replaced by duroxide.AnyTag(), so tagged
	// activities run too. A nil Logger logs warnings to the test's log
	// under New and nothing under Start.
	Runtime *durable.Options
	// MaxSteps bounds the clock moves of one WaitForOrchestration
	// (default 100000).
	MaxSteps int
	// BusyPoll is the longest real pause between two looks at the
	// provider while a turn or activity runs (default 2 ms).
	BusyPoll time.Duration
}

// Env is a test environment: one runtime on one memory provider, driven
// by a virtual clock. Build it with New (it shuts down at the test's end)
// or Start and Close. Its methods may be called from several goroutines.
type Env struct {
	ctx    context.Context
	opts   Options
	clock  *virtualClock
	p      *memprovider.Provider
	rt     *durable.Runtime
	client *durable.Client

	mu      sync.Mutex
	doubles map[string]durable.ActivityFunc
	// scheduled holds the events to raise or enqueue, by due time.
	scheduled []scheduledEvent
}

// scheduledEvent is one event the test asked for at a virtual time.
type scheduledEvent struct {
	at      time.Time
	deliver func(ctx context.Context) error
}

// New starts an environment running reg's orchestrations and activities
// for the test t: its context bounds the environment's calls, the
// runtime's warnings go to its log, and its cleanup shuts the
// environment down. It fails t if the runtime cannot start.
func New(t testing.TB, reg *durable.Registry, opts *Options) *Env {
	t.Helper()
	o := Options{}
	if opts != nil {
		o = *opts
	}
	open := &atomic.Bool{}
	if o.Runtime == nil || o.Runtime.Logger == nil {
		ro := durable.Options{}
		if o.Runtime != nil {
			ro = *o.Runtime
		}
		open.Store(true)
		ro.Logger = slog.New(slog.NewTextHandler(&testLogWriter{t: t, open: open}, &slog.HandlerOptions{Level: slog.LevelWarn, ReplaceAttr: dropTime}))
		o.Runtime = &ro
	}
	e, err := Start(t.Context(), reg, &o)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() {
		// The test's context is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Errorf("testenv: %v", err)
		}
		open.Store(false)
	})
	return e
}

// Start starts an environment running reg's orchestrations and
// activities outside a test (New is the usual way in). ctx bounds the
// environment's provider and client calls; Close stops it. The runtime
// logs nothing unless Options.Runtime.Logger is set.
func Start(ctx context.Context, reg *durable.Registry, opts *Options) (*Env, error) {
	e := &Env{ctx: ctx, doubles: map[string]durable.ActivityFunc{}}
	if opts != nil {
		e.opts = *opts
	}
	if e.opts.Start.IsZero() {
		e.opts.Start = DefaultStart
	}
	if e.opts.MaxSteps <= 0 {
		e.opts.MaxSteps = 100000
	}
	if e.opts.BusyPoll <= 0 {
		e.opts.BusyPoll = 2 * time.Millisecond
	}
	e.clock = newVirtualClock(e.opts.Start)
	e.p = memprovider.New(memprovider.WithClock(e.clock.now))
	rtOpts := e.runtimeOptions()
	seam := &testhooks.Seam{Now: e.clock.now, Subscribe: e.clock.subscribe, Activity: e.double}
	rt, err := durable.Start(testhooks.With(ctx, seam), e.p, reg, &rtOpts)
	if err != nil {
		return nil, fmt.Errorf("starting the runtime: %w", err)
	}
	e.rt, e.client = rt, rt.Client()
	return e, nil
}

// runtimeOptions are the caller's runtime options with the environment's
// tag filter and logger.
func (e *Env) runtimeOptions() durable.Options {
	var o durable.Options
	if e.opts.Runtime != nil {
		o = *e.opts.Runtime
	}
	o.WorkerTagFilter = duroxide.AnyTag()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Close stops the runtime: it waits, up to ctx, for the turns and
// activities in flight.
func (e *Env) Close(ctx context.Context) error {
	if err := e.rt.Shutdown(ctx); err != nil {
		return fmt.Errorf("runtime shutdown: %w", err)
	}
	return nil
}

// Now returns the virtual time.
func (e *Env) Now() time.Time { return e.clock.now() }

// Client returns a client of the environment's provider.
func (e *Env) Client() *durable.Client { return e.client }

// Provider returns the environment's memory provider.
func (e *Env) Provider() *memprovider.Provider { return e.p }

// ReplaceActivity makes fn run instead of the activity name (registered
// or not) from now on, for every instance.
func (e *Env) ReplaceActivity(name string, fn durable.ActivityFunc) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.doubles[name] = fn
}

// ReplaceActivity is Env.ReplaceActivity for a typed double, with the
// codec of durable.RegisterActivity (as durable.RegisterActivity is the
// typed Registry.AddActivity).
func ReplaceActivity[In, Out any](e *Env, name string, fn func(durable.ActivityContext, In) (Out, error)) {
	e.ReplaceActivity(name, func(ctx durable.ActivityContext, raw string) (string, error) {
		in, err := durable.Decode[In](raw)
		if err != nil {
			return "", err
		}
		out, err := fn(ctx, in)
		if err != nil {
			return "", err
		}
		return durable.Encode(out)
	})
}

// double is the runtime's hook: the double replacing name, if any.
func (e *Env) double(name string) (any, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fn, ok := e.doubles[name]
	return fn, ok
}

// StartOrchestration starts instance of the latest registered version of
// orchestration with input.
func (e *Env) StartOrchestration(instance, orchestration string, input any) error {
	return e.client.StartOrchestration(e.ctx, instance, orchestration, input)
}

// RaiseEventAt raises the external event name with data on instance once
// the virtual clock has moved on by after (0: at the next step).
func (e *Env) RaiseEventAt(after time.Duration, instance, name string, data any) {
	e.schedule(after, func(ctx context.Context) error { return e.client.RaiseEvent(ctx, instance, name, data) })
}

// EnqueueEventAt enqueues data on instance's queue once the virtual clock
// has moved on by after.
func (e *Env) EnqueueEventAt(after time.Duration, instance, queue string, data any) {
	e.schedule(after, func(ctx context.Context) error { return e.client.EnqueueEvent(ctx, instance, queue, data) })
}

func (e *Env) schedule(after time.Duration, deliver func(context.Context) error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ev := scheduledEvent{at: e.clock.now().Add(max(after, 0)), deliver: deliver}
	e.scheduled = append(e.scheduled, ev)
	slices.SortStableFunc(e.scheduled, func(a, b scheduledEvent) int { return a.at.Compare(b.at) })
}

// History returns the events of instance's current execution.
func (e *Env) History(instance string) ([]duroxide.Event, error) {
	return e.p.Admin().ReadHistory(e.ctx, instance)
}

// WaitForOrchestration runs the virtual clock until instance finishes
// (completed, failed or continued-as-new into a finished execution) and
// returns its status. While the runtime works, it waits for it; whenever
// the runtime is idle, it moves the clock to the next timer, backoff or
// scheduled event. It returns ErrStalled (with the status) when the
// instance can never finish, ErrBlocked when its code does not replay its
// history, ErrTooManySteps after Options.MaxSteps clock moves, and the
// test context's error if the test ends first.
func (e *Env) WaitForOrchestration(instance string) (*durable.OrchestrationStatus, error) {
	steps := 0
	pause := 50 * time.Microsecond
	for {
		// The queues are read before the status: idleness lasts until the
		// clock or a client moves, so an instance not finished after an
		// idle reading will not finish without a step.
		ws := e.p.WorkState()
		st, err := e.client.Status(e.ctx, instance)
		if err != nil {
			return nil, err
		}
		if st.IsTerminal() {
			return st, nil
		}
		if st.State == durable.StateBlocked {
			return st, fmt.Errorf("%w: %s: %s", ErrBlocked, instance, st.BlockedReason)
		}
		if !ws.Idle() {
			if err := sleep(e.ctx, pause); err != nil {
				return st, err
			}
			pause = min(pause*2, e.opts.BusyPoll)
			continue
		}
		pause = 50 * time.Microsecond
		if steps >= e.opts.MaxSteps {
			return st, fmt.Errorf("%w: %d clock moves without %s finishing", ErrTooManySteps, steps, instance)
		}
		moved, err := e.step(ws.Next)
		if err != nil {
			return st, err
		}
		if !moved {
			return st, fmt.Errorf("%w: %s is %s at %s and nothing is due", ErrStalled, instance, st.State, e.Now().Format(time.RFC3339))
		}
		steps++
	}
}

// step delivers the scheduled events due at the earliest of next (the
// provider's next due message) and the first scheduled event, moving the
// clock there. It reports false when nothing is due at all.
func (e *Env) step(next time.Time) (bool, error) {
	e.mu.Lock()
	if len(e.scheduled) > 0 && (next.IsZero() || !e.scheduled[0].at.After(next)) {
		next = e.scheduled[0].at
	}
	if next.IsZero() {
		e.mu.Unlock()
		return false, nil
	}
	var due []scheduledEvent
	for len(e.scheduled) > 0 && !e.scheduled[0].at.After(next) {
		due = append(due, e.scheduled[0])
		e.scheduled = e.scheduled[1:]
	}
	e.mu.Unlock()
	e.clock.advance(next)
	for _, ev := range due {
		if err := ev.deliver(e.ctx); err != nil {
			return false, fmt.Errorf("testenv: delivering a scheduled event: %w", err)
		}
	}
	return true, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// testLogWriter sends the runtime's log lines to the test log while the
// test runs (logging after a test ends panics).
type testLogWriter struct {
	t    testing.TB
	open *atomic.Bool
}

func (w *testLogWriter) Write(b []byte) (int, error) {
	if w.open.Load() {
		w.t.Log(strings.TrimSuffix(string(b), "\n"))
	}
	return len(b), nil
}

var _ io.Writer = (*testLogWriter)(nil)

// dropTime leaves the wall-clock time out of log lines: next to virtual
// time it only misleads.
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
