package durable

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// Lock leases. A renewal that fails with a retryable error (a 503, 408,
// reset or throttle) says nothing about the lock: the store may still hold
// it for us, may even have applied the renewal. Only a permanent error
// (the contract's answer for a lock that is gone: ErrLockLost) means the
// lock is lost. So transient failures are retried with backoff for as
// long as the lock is known to be ours — until the expiry the last
// successful renewal (or the fetch) set — and only then is the lock given
// up, as expired rather than lost.

// lockLease keeps one lock renewed while its work runs and tracks the
// lock's expiry as the runtime knows it.
type lockLease struct {
	// until is the lock's expiry in Unix nanoseconds: when the fetch
	// returned, or the last successful renewal was sent, plus the lock
	// timeout. A fetch's lock was set a round trip earlier, so its expiry
	// may be a little later than the store's: the store, which refuses an
	// expired lock (ErrLockLost), stays the judge.
	until atomic.Int64
	// lost is closed when the lock is gone or expired; gone tells which.
	lost chan struct{}
	gone atomic.Bool

	// timeout is the lock timeout of the lease's queue.
	timeout time.Duration

	// The renewals run on a timer, not a goroutine of their own: most
	// work ends long before its first renewal, and a timer that never
	// fires costs no goroutine and less garbage. mu is held by a renewal
	// and by stop, so that no renewal starts or is rescheduled once stop
	// returned.
	ctx      context.Context
	cancel   context.CancelFunc
	renew    func(ctx context.Context) error
	rt       *Runtime
	queue    string
	interval time.Duration
	mu       sync.Mutex
	stopped  bool
	timer    *time.Timer
}

// startLease starts renewing the lock token of queue (queueOrchestrator
// or queueWorker), fetched at fetched: every renewal interval of that
// queue's lock timeout, until stop. Both dispatchers keep their locks
// through this one loop. A work item's renewals carry hb's heartbeats
// (nil: none).
func (rt *Runtime) startLease(queue, token string, fetched time.Time, hb *heartbeatState) *lockLease {
	timeout, buffer := rt.opts.OrchestratorLockTimeout, rt.opts.OrchestratorLockRenewalBuffer
	renewLock := rt.p.RenewOrchestrationItemLock
	if queue == queueWorker {
		timeout, buffer = rt.opts.WorkerLockTimeout, rt.opts.WorkerLockRenewalBuffer
		renewLock = func(ctx context.Context, token string, extend time.Duration) error {
			return rt.renewWithHeartbeat(ctx, hb, token, extend)
		}
	}
	renew := func(ctx context.Context) error { return renewLock(rt.tel.context(token, ctx), token, timeout) }
	l := &lockLease{lost: make(chan struct{}), timeout: timeout, renew: renew, rt: rt, queue: queue,
		interval: renewalInterval(timeout, buffer)}
	l.until.Store(fetched.Add(timeout).UnixNano())
	l.ctx, l.cancel = context.WithCancel(rt.ctx)
	l.mu.Lock()
	l.timer = time.AfterFunc(l.interval, l.tick)
	l.mu.Unlock()
	return l
}

// tick renews the lock and schedules the next renewal one interval
// after this one began (at once if the renewal took longer), as a
// ticker would, so a slow renewal does not push the next one past the
// lock's expiry.
func (l *lockLease) tick() {
	began := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped || l.ctx.Err() != nil {
		return
	}
	if l.rt.renewOnce(l.ctx, l, l.queue, l.renew) {
		l.timer.Reset(l.interval - time.Since(began))
	}
}

// renewOnce renews the lock, retrying transient failures until the lock's
// expiry; it reports whether the lease should go on.
func (rt *Runtime) renewOnce(ctx context.Context, l *lockLease, queue string, renew func(ctx context.Context) error) bool {
	err := retryTransient(ctx, l.expiry, func() error {
		sent := time.Now()
		err := renew(ctx)
		rt.tel.renewal(queue, err)
		if err == nil {
			l.until.Store(sent.Add(l.timeout).UnixNano())
		}
		return err
	})
	switch {
	case err == nil:
		return true
	case ctx.Err() != nil:
		return false // stopped, or the runtime is shutting down
	case duroxide.IsRetryable(err):
		rt.log.Warn("lock renewal kept failing with retryable errors until the lock expired", "queue", queue, "error", err)
	default:
		l.gone.Store(true)
	}
	close(l.lost)
	return false
}

// expiry is the lock's expiry as last confirmed.
func (l *lockLease) expiry() time.Time { return time.Unix(0, l.until.Load()) }

// ackDeadline bounds an ack's retries: while the lock is known to be
// ours, and no longer than one lock timeout from now, so an ack that keeps
// failing while renewals succeed does not hold the lock for ever.
func (l *lockLease) ackDeadline() func() time.Time {
	limit := time.Now().Add(l.timeout)
	return func() time.Time {
		if e := l.expiry(); e.Before(limit) {
			return e
		}
		return limit
	}
}

// stop ends the renewals and waits for a renewal in flight to return.
func (l *lockLease) stop() {
	l.cancel() // ends a renewal in flight
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	l.timer.Stop()
}

// retryTransient calls f until it succeeds, fails permanently, ctx ends or
// the next attempt would start after deadline(); it returns f's last
// error. The backoff doubles from 10 ms up to 1 s.
func retryTransient(ctx context.Context, deadline func() time.Time, f func() error) error {
	for attempt := 0; ; attempt++ {
		err := f()
		if err == nil || !duroxide.IsRetryable(err) {
			return err
		}
		d := min(10*time.Millisecond<<min(attempt, 7), time.Second)
		if !time.Now().Add(d).Before(deadline()) {
			return err
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}
