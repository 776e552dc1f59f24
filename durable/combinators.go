package durable

// Select waits until the first of futs resolves and returns its index; the
// others are dropped (cancelled), as Rust's select2/select3 drop their
// losers. Futures are checked in argument order, and completions are
// applied one history event at a time, so the winner is the future whose
// completion comes first in history, and among futures already resolved,
// the earliest argument. Read the winner's value with its Await, which
// returns at once.
func (c *OrchestrationContext) Select(futs ...Awaitable) int {
	if len(futs) == 0 {
		panic("durable: Select needs at least one future")
	}
	for _, f := range futs {
		f.state().adopt()
	}
	winner := -1
	c.sched.block(func() bool {
		for i, f := range futs {
			if f.state().tryComplete() {
				winner = i
				return true
			}
		}
		return false
	})
	for i, f := range futs {
		if i != winner && f.state() != futs[winner].state() {
			f.state().drop()
		}
	}
	return winner
}

// WaitAll waits until every future has resolved (Rust's join on
// heterogeneous futures); read each value with its Await. Every pending
// future is polled on every turn step, in argument order.
func (c *OrchestrationContext) WaitAll(futs ...Awaitable) {
	for _, f := range futs {
		f.state().adopt()
	}
	c.sched.block(func() bool {
		all := true
		for _, f := range futs {
			if !f.state().tryComplete() {
				all = false
			}
		}
		return all
	})
}

// Join waits for all futs and returns their outcomes in argument order
// (Rust's ctx.join).
func Join[T any](ctx *OrchestrationContext, futs ...*Future[T]) []Result[T] {
	as := make([]Awaitable, len(futs))
	for i, f := range futs {
		as[i] = f
	}
	ctx.WaitAll(as...)
	out := make([]Result[T], len(futs))
	for i, f := range futs {
		out[i].Value, out[i].Err = f.convert(f.st.value, f.st.err)
	}
	return out
}

// Go runs fn as a deterministic block of orchestration code (Rust's async
// block) and returns its future. The block starts when the code that
// created it next waits; blocks run one at a time, in creation order, never
// in parallel. Dropping the future (Cancel, losing a Select, or its creator
// returning while it is pending) stops the block and drops the futures it
// holds. Use Go instead of the go statement in orchestration code.
func Go[T any](ctx *OrchestrationContext, fn func(ctx *OrchestrationContext) (T, error)) *Future[T] {
	return goBlock(ctx, fn, false)
}

// goBlock builds the future of a block. A lazy block starts only when its
// future is first polled (by Await, Select or Join), and runs then, inside
// that poll, until it first waits (as Rust polls an async fn's future).
// The runtime's own futures that are async fns in Rust (the retry loop) are
// lazy, so they schedule their work at the same point in history as Rust.
func goBlock[T any](ctx *OrchestrationContext, fn func(ctx *OrchestrationContext) (T, error), lazy bool) *Future[T] {
	st := &futureState{ctx: ctx, kind: kindLocal}
	var out T
	var outErr error
	returned := false
	s := ctx.sched
	co := s.spawn(func() {
		out, outErr = fn(ctx)
		returned = true
		// A finished block's pending futures are dropped (cancelled) with it:
		// nothing can await them any more (Rust drops an async block's
		// locals when it completes).
		s.current.dropOwned()
	})
	co.lazy = lazy
	co.future = st
	st.co = co
	st.poll = func() (any, error, bool) {
		if !co.started && !co.done {
			s.run(co)
		}
		// A block that panicked never resolves: the turn fails with the
		// panic before anyone could use a zero result.
		if co.done && !co.killed && returned {
			return out, outErr, true
		}
		return nil, nil, false
	}
	st.adopt()
	ctx.futures = append(ctx.futures, st)
	return &Future[T]{st: st, convert: func(v any, err error) (T, error) {
		t, _ := v.(T)
		return t, err
	}}
}
