package durable

import (
	"errors"
	"runtime"
)

// scheduleKind is what a future stands for, which decides how dropping it
// is recorded (Rust: ScheduleKind).
type scheduleKind int

const (
	kindActivity scheduleKind = iota + 1
	kindTimer
	kindExternalWait
	kindQueueDequeue
	kindSubOrchestration
	// kindLocal is a Go block: dropping it stops the coroutine and drops
	// the futures it holds.
	kindLocal
)

// futureState is the untyped core shared by a Future and its mapped views.
type futureState struct {
	ctx   *OrchestrationContext
	token uint64
	kind  scheduleKind
	// owner is the coroutine that created the future or last waited on it.
	owner *coroutine

	completed bool
	cancelled bool
	value     any
	err       error

	// poll returns the future's value once it is ready (for a queue
	// dequeue it consumes the arrival); it is called only while the
	// future is pending (Rust: the poll_fn closures).
	poll func() (value any, err error, ready bool)
	// co is the coroutine of a Go block.
	co *coroutine
}

// tryComplete polls the future once; it reports whether it has completed.
func (st *futureState) tryComplete() bool {
	if st.completed {
		return true
	}
	if st.cancelled {
		return false
	}
	v, err, ok := st.poll()
	if !ok {
		return false
	}
	st.completed, st.value, st.err = true, v, err
	return true
}

// drop cancels a pending future that goes away: activities and children
// are cancelled for real, waits leave a breadcrumb, a Go block is stopped
// and its futures dropped (Rust: Drop for DurableFuture).
func (st *futureState) drop() {
	if st.completed || st.cancelled {
		return
	}
	st.cancelled = true
	if st.kind == kindLocal {
		s := st.ctx.sched
		if co := st.co; co != nil {
			co.future = nil
			if co == s.current {
				// A block dropping its own future ends itself.
				co.dropOwned()
				co.killed = true
				runtime.Goexit()
			}
			s.kill(co)
			co.dropOwned()
		}
		return
	}
	st.ctx.markTokenCancelled(st.token, st.kind)
}

// adopt moves ownership of st to the running coroutine, which drops it if
// it returns with st pending: the code that waits on a future owns it (as
// Rust moves a future into the code that awaits it).
func (st *futureState) adopt() {
	if co := st.ctx.sched.current; co != nil && st.owner != co {
		st.owner = co
		co.owned = append(co.owned, st)
	}
}

// dropOwned drops every pending future the coroutine still owns.
func (co *coroutine) dropOwned() {
	for _, st := range co.owned {
		if st.owner == co {
			st.drop()
		}
	}
	co.owned = nil
}

// Awaitable is anything Select and Join accept: every *Future[T].
type Awaitable interface {
	state() *futureState
}

// Future is the pending result of a durable operation (activity, timer,
// external event, queue message, sub-orchestration, system call) or of a Go
// block. Await blocks the calling orchestration code until it resolves.
//
// A future that is dropped before it resolves is cancelled, as a dropped
// DurableFuture is in Rust: by Cancel, by losing a Select, or by still being
// pending when the code that created (or last awaited) it returns. A
// dropped activity is cancelled on its worker, a dropped sub-orchestration
// is cancelled, and a breadcrumb ("dropped_future") goes into history.
type Future[T any] struct {
	st      *futureState
	convert func(value any, err error) (T, error)
}

func (f *Future[T]) state() *futureState { return f.st }

// Await waits for the future and returns its value, or the error it
// failed with (a *TaskFailedError for activities and sub-orchestrations).
//
// Awaiting a future that was dropped (cancelled, or a Select loser)
// returns ErrFutureDropped at once instead of waiting forever.
func (f *Future[T]) Await() (T, error) {
	st := f.st
	st.adopt()
	st.ctx.sched.block(func() bool { return st.tryComplete() || st.cancelled })
	if !st.completed {
		var zero T
		return zero, ErrFutureDropped
	}
	return f.convert(st.value, st.err)
}

// ErrFutureDropped is returned by Await on a future that was dropped
// before it resolved.
var ErrFutureDropped = errors.New("durable: future was dropped (cancelled or lost a Select) before it resolved")

// Cancel drops the future, cancelling the work behind it (Rust's
// drop(fut)). It has no effect on a future that already resolved.
func (f *Future[T]) Cancel() { f.st.drop() }

// Done reports whether the future has resolved, without waiting. It does
// not poll: a result delivered since the future was last awaited shows only
// after a Select, Join or Await observed it.
func (f *Future[T]) Done() bool { return f.st.completed }

// mapFuture derives a future with the same identity (cancelling one cancels
// both) whose value goes through fn.
func mapFuture[T, U any](f *Future[T], fn func(T, error) (U, error)) *Future[U] {
	conv := f.convert
	return &Future[U]{st: f.st, convert: func(v any, err error) (U, error) {
		return fn(conv(v, err))
	}}
}

// stringFuture builds the future of a durable operation whose value is a
// string.
func stringFuture(st *futureState) *Future[string] {
	return &Future[string]{st: st, convert: func(v any, err error) (string, error) {
		s, _ := v.(string)
		return s, err
	}}
}

// Result is one outcome of Join.
type Result[T any] struct {
	Value T
	Err   error
}
