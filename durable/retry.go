package durable

import (
	"fmt"
	"math"
	"time"
)

// BackoffKind selects a BackoffStrategy's formula.
type BackoffKind int

// The backoff formulas. The zero value is the default: exponential from
// 100 ms, doubling, capped at 30 s (Rust's default).
const (
	BackoffDefault BackoffKind = iota
	BackoffNone
	BackoffFixed
	BackoffLinear
	BackoffExponential
)

// BackoffStrategy is the delay between retry attempts (Rust's
// BackoffStrategy). Build one with NoBackoff, FixedBackoff, LinearBackoff
// or ExponentialBackoff; the zero value is the default exponential backoff.
type BackoffStrategy struct {
	Kind       BackoffKind
	Delay      time.Duration // BackoffFixed
	Base       time.Duration // BackoffLinear, BackoffExponential
	Multiplier float64       // BackoffExponential
	Max        time.Duration // BackoffLinear, BackoffExponential
}

// NoBackoff retries at once.
func NoBackoff() BackoffStrategy { return BackoffStrategy{Kind: BackoffNone} }

// FixedBackoff waits d before each retry.
func FixedBackoff(d time.Duration) BackoffStrategy {
	return BackoffStrategy{Kind: BackoffFixed, Delay: d}
}

// LinearBackoff waits base·attempt, at most max.
func LinearBackoff(base, max time.Duration) BackoffStrategy {
	return BackoffStrategy{Kind: BackoffLinear, Base: base, Max: max}
}

// ExponentialBackoff waits base·multiplier^(attempt−1), at most max.
func ExponentialBackoff(base time.Duration, multiplier float64, max time.Duration) BackoffStrategy {
	return BackoffStrategy{Kind: BackoffExponential, Base: base, Multiplier: multiplier, Max: max}
}

// DelayForAttempt is the wait after failed attempt number attempt (1-based).
func (b BackoffStrategy) DelayForAttempt(attempt uint32) time.Duration {
	switch b.Kind {
	case BackoffNone:
		return 0
	case BackoffFixed:
		return b.Delay
	case BackoffLinear:
		d := satMul(b.Base, uint64(attempt))
		return min(d, b.Max)
	case BackoffExponential:
		return expDelay(b.Base, b.Multiplier, b.Max, attempt)
	}
	return expDelay(100*time.Millisecond, 2, 30*time.Second, attempt)
}

func expDelay(base time.Duration, mult float64, max time.Duration, attempt uint32) time.Duration {
	exp := 0
	if attempt > 0 {
		exp = int(attempt - 1)
	}
	f := float64(base.Nanoseconds()) * math.Pow(mult, float64(exp))
	if f >= float64(math.MaxInt64) || math.IsInf(f, 0) {
		return max
	}
	if f < 0 || math.IsNaN(f) {
		f = 0
	}
	return min(time.Duration(f), max)
}

func satMul(d time.Duration, n uint64) time.Duration {
	if d <= 0 || n == 0 {
		return 0
	}
	if uint64(d) > uint64(math.MaxInt64)/n {
		return time.Duration(math.MaxInt64)
	}
	return d * time.Duration(n)
}

// RetryPolicy retries a failed activity (Rust's RetryPolicy). The zero value
// is the default: 3 attempts, default backoff, no per-attempt timeout
// (Rust's default).
type RetryPolicy struct {
	// MaxAttempts counts the first attempt; 0 means 3.
	MaxAttempts uint32
	// Backoff is the delay between attempts, as a durable timer.
	Backoff BackoffStrategy
	// Timeout, when positive, races each attempt against a durable timer;
	// a timed-out attempt fails the call at once and is not retried.
	Timeout time.Duration
	// ScheduleToClose, when positive, bounds the whole call: every
	// attempt and the backoffs between them race one durable timer,
	// started with the first attempt. When it fires first, the attempt in
	// flight is cancelled, no further attempt is scheduled, and the call
	// fails with "timeout: activity schedule-to-close of <d> exceeded"
	// (matching ErrTimedOut). Go-only; negative panics as bad input.
	ScheduleToClose time.Duration
}

// DefaultRetryPolicy is the default policy spelled out: 3 attempts,
// exponential backoff from 100 ms doubling up to 30 s, no per-attempt
// timeout (Rust's RetryPolicy::default()). It behaves as the zero
// RetryPolicy.
func DefaultRetryPolicy() *RetryPolicy {
	return &RetryPolicy{MaxAttempts: 3, Backoff: ExponentialBackoff(100*time.Millisecond, 2, 30*time.Second)}
}

// NewRetryPolicy returns the default policy with maxAttempts attempts. As
// Rust's RetryPolicy::new, it panics when maxAttempts is 0: a policy that
// never runs the activity is a programming error, and silently reading 0
// as the default 3 would hide it.
func NewRetryPolicy(maxAttempts uint32) *RetryPolicy {
	if maxAttempts == 0 {
		panic("durable: max_attempts must be at least 1")
	}
	p := DefaultRetryPolicy()
	p.MaxAttempts = maxAttempts
	return p
}

// WithTimeout returns a copy of p with the per-attempt timeout d; p itself
// is unchanged, so one base policy can be shared.
func (p *RetryPolicy) WithTimeout(d time.Duration) *RetryPolicy {
	q := *p
	q.Timeout = d
	return &q
}

// WithBackoff returns a copy of p with the backoff strategy b; p itself is
// unchanged.
func (p *RetryPolicy) WithBackoff(b BackoffStrategy) *RetryPolicy {
	q := *p
	q.Backoff = b
	return &q
}

// DelayForAttempt is the backoff after failed attempt number attempt.
func (p RetryPolicy) DelayForAttempt(attempt uint32) time.Duration {
	return p.Backoff.DelayForAttempt(attempt)
}

func (p RetryPolicy) attempts() uint32 {
	if p.MaxAttempts == 0 {
		return 3
	}
	return p.MaxAttempts
}

// timeoutMessage is the error a timed-out attempt fails with (Rust's
// text).
const timeoutMessage = "timeout: activity timed out"

// retryActivity returns the future of the retry loop, a lazy block: it
// schedules nothing until its future is first polled (awaited, raced or
// joined), so its attempts land where Rust's async fn would put them in
// history, and it can be raced and joined like any future (Rust:
// schedule_activity_with_retry).
func (c *OrchestrationContext) retryActivity(name, input string, policy RetryPolicy, session, tag string) *Future[string] {
	if policy.ScheduleToClose < 0 {
		panic("durable: RetryPolicy.ScheduleToClose must not be negative")
	}
	return goBlock(c, func(ctx *OrchestrationContext) (string, error) {
		if policy.ScheduleToClose > 0 {
			return ctx.retryWithin(name, input, policy, session, tag)
		}
		return ctx.retryLoop(name, input, policy, session, tag)
	}, true)
}

// retryWithin races the retry loop against the schedule-to-close timer.
// The loop is polled first, so its first attempt is scheduled before the
// timer is created; the loser is dropped, which cancels an attempt in
// flight and stops the loop.
func (c *OrchestrationContext) retryWithin(name, input string, policy RetryPolicy, session, tag string) (string, error) {
	loop := Go(c, func(ctx *OrchestrationContext) (string, error) {
		return ctx.retryLoop(name, input, policy, session, tag)
	})
	deadline := Go(c, func(ctx *OrchestrationContext) (struct{}, error) {
		ctx.scheduleTimer(policy.ScheduleToClose).Await()
		return struct{}{}, nil
	})
	if c.Select(loop, deadline) == 1 {
		return "", &TaskFailedError{Message: fmt.Sprintf("%sactivity schedule-to-close of %s exceeded", timeoutPrefix, policy.ScheduleToClose)}
	}
	return loop.Await()
}

func (c *OrchestrationContext) retryLoop(name, input string, policy RetryPolicy, session, tag string) (string, error) {
	max := policy.attempts()
	var lastErr error = &TaskFailedError{}
	for attempt := uint32(1); attempt <= max; attempt++ {
		res, err, timedOut := c.retryAttempt(name, input, policy.Timeout, session, tag)
		if timedOut {
			return "", err
		}
		if err == nil {
			return res, nil
		}
		lastErr = err
		if attempt < max {
			if session != "" {
				c.TraceWarn(fmt.Sprintf("Activity '%s' (session=%s) attempt %d/%d failed: %s. Retrying...", name, session, attempt, max, err))
			} else {
				c.TraceWarn(fmt.Sprintf("Activity '%s' attempt %d/%d failed: %s. Retrying...", name, attempt, max, err))
			}
			if d := policy.DelayForAttempt(attempt); d > 0 {
				c.scheduleTimer(d).Await()
			}
		}
	}
	return "", lastErr
}

// retryAttempt runs one attempt, raced against the timeout when set. The
// timer is created inside a block that the race polls after the activity,
// so the activity is scheduled first, as in Rust's history.
func (c *OrchestrationContext) retryAttempt(name, input string, timeout time.Duration, session, tag string) (string, error, bool) {
	if timeout <= 0 {
		res, err := c.scheduleActivity(name, input, session, tag).Await()
		return res, err, false
	}
	deadline := Go(c, func(ctx *OrchestrationContext) (struct{}, error) {
		ctx.scheduleTimer(timeout).Await()
		return struct{}{}, nil
	})
	act := c.scheduleActivity(name, input, session, tag)
	if c.Select(act, deadline) == 1 {
		return "", &TaskFailedError{Message: timeoutMessage}, true
	}
	res, err := act.Await()
	return res, err, false
}
