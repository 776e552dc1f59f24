package durable

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
)

// Orchestration code runs as coroutines: the orchestration function and each
// Go block is a goroutine, but only one of them runs at a time, and only when
// the engine hands it control. A coroutine runs until it waits on something
// that is not ready (Await, Select, Join) or returns; then control comes back
// to the engine. One scheduler.poll runs the first runnable coroutine in
// creation order, and repeats until none is runnable (one Rust poll of the
// orchestration future). Because the engine decides who runs and the
// order is fixed, the same history always produces the same actions.

// coroutine is one orchestration function or Go block.
type coroutine struct {
	sched *scheduler
	fn    func()

	resume chan struct{}
	yield  chan struct{}

	// cond reports whether the coroutine may continue; the engine calls it
	// while the coroutine is parked (it is the Go form of polling the
	// future the coroutine awaits).
	cond func() bool
	// lazy coroutines are not started by the scheduler: the first poll of
	// their future starts them (see goBlock).
	lazy    bool
	started bool
	done    bool
	killed  bool

	// owned are futures this coroutine created or waited on; when it
	// returns, the ones still pending are dropped (Rust drops the locals of
	// a finished async block).
	owned []*futureState
	// future is the Go-block future this coroutine resolves (nil for the
	// orchestration function itself).
	future *futureState
}

// scheduler runs the coroutines of one turn.
type scheduler struct {
	cos     []*coroutine
	current *coroutine
	main    *coroutine

	// panicMsg is set when a coroutine panicked; the turn fails with it.
	panicMsg *string
	// logger receives misuse reports; nil means slog.Default().
	logger *slog.Logger
}

func (s *scheduler) log() *slog.Logger {
	if s.logger != nil {
		return s.logger
	}
	return slog.Default()
}

// errGoexit is the panic message used when orchestration code calls
// runtime.Goexit itself: the coroutine vanished without a result.
var errGoexit = errors.New("orchestration coroutine exited without returning (runtime.Goexit)")

// spawn registers a coroutine; it first runs during the next poll, after
// the coroutine that created it has blocked, so creating a block never
// interrupts its creator (Rust futures are lazy too).
func (s *scheduler) spawn(fn func()) *coroutine {
	co := &coroutine{sched: s, fn: fn, resume: make(chan struct{}), yield: make(chan struct{})}
	s.cos = append(s.cos, co)
	return co
}

// poll runs coroutines until all are blocked, the orchestration function
// returned, or one panicked.
func (s *scheduler) poll() {
	for s.panicMsg == nil && !s.main.done {
		co := s.nextRunnable()
		if co == nil {
			return
		}
		s.run(co)
	}
}

func (s *scheduler) nextRunnable() *coroutine {
	for _, co := range s.cos {
		if co.done || co.killed {
			continue
		}
		if !co.started {
			if co.lazy {
				continue
			}
			return co
		}
		if co.cond() {
			return co
		}
	}
	return nil
}

// run hands control to co until it blocks or finishes.
func (s *scheduler) run(co *coroutine) {
	prev := s.current
	s.current = co
	if !co.started {
		co.started = true
		go co.body()
	} else {
		co.resume <- struct{}{}
	}
	<-co.yield
	s.current = prev
}

// body is the goroutine of a coroutine. Its deferred function reports the
// end (return, panic, or Goexit after a kill) to whoever resumed it.
func (co *coroutine) body() {
	returned := false
	defer func() {
		r := recover()
		co.done = true
		switch {
		case co.killed:
			// Stopped by the engine: nothing to report.
		case r != nil:
			co.sched.recordPanic(r)
		case !returned:
			co.sched.recordPanic(errGoexit)
		}
		co.yield <- struct{}{}
	}()
	co.fn()
	returned = true
}

func (s *scheduler) recordPanic(r any) {
	if s.panicMsg != nil {
		return
	}
	msg := panicMessage(r)
	s.panicMsg = &msg
}

// panicMessage is the text a panic value fails the orchestration with: a
// string as is, an error's or Stringer's text, else fmt's rendering (Rust:
// extract_panic_message).
func panicMessage(r any) string {
	switch v := r.(type) {
	case string:
		return v
	case error:
		return v.Error()
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprint(r)
}

// block parks the current coroutine until cond holds. If cond already
// holds it returns at once, without giving up control (as polling a ready
// future does in Rust).
func (s *scheduler) block(cond func() bool) {
	co := s.current
	if co == nil {
		// Waiting from outside orchestration code (a plain goroutine, or
		// after the turn ended) can never be resumed. A panic there would
		// crash the process, so log it and end that goroutine instead.
		s.log().Error("durable: orchestration context used outside orchestration code (a go statement, or after the orchestration returned); use durable.Go")
		runtime.Goexit()
	}
	if co.killed {
		runtime.Goexit()
	}
	if cond() {
		return
	}
	co.cond = cond
	co.yield <- struct{}{}
	<-co.resume
	co.cond = nil
	if co.killed {
		runtime.Goexit()
	}
}

// kill stops co: it unwinds with runtime.Goexit (running its defers) and its
// goroutine ends. A coroutine that never ran is just marked done.
func (s *scheduler) kill(co *coroutine) {
	if co.done || co.killed {
		return
	}
	co.killed = true
	if !co.started {
		co.done = true
		return
	}
	prev := s.current
	s.current = co
	co.resume <- struct{}{}
	<-co.yield
	s.current = prev
}

// stopAll ends every coroutine still alive, so a finished turn leaves no
// goroutine behind. Kills do not count as dropped futures: they happen
// after the turn's decisions were collected (as Rust's dehydration does).
func (s *scheduler) stopAll() {
	for _, co := range s.cos {
		s.kill(co)
	}
}
