package durable

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// The worker dispatcher: WorkerConcurrency slots and WorkerFetchAhead
// more loops (dispatch_slots.go), each fetching one activity at a time,
// running it in a slot next to a lock renewer, and acking its result
// (which enqueues the completion for the orchestration).

// workerLoop is one worker loop.
func (rt *Runtime) workerLoop(workerID, sessionOwner string) {
	defer rt.wg.Done()
	idle := rt.newIdle(&rt.workGate, rt.workWake)
	retryable := 0
	var carried *duroxide.LockedWorkItem // locked by the last ack (WorkAckFetcher)
	defer func() {
		if carried != nil { // stopping: given back at once, its attempt not counted
			rt.abandon(duroxide.WorkerQueue, carried.Item.InstanceID(), carried.LockToken, 0, true)
		}
	}()
	for !rt.stopping() {
		w := rt.workWake.join() // before the fetch, so no wake-up is missed
		found, crowded, next, err := rt.processNextWorkItem(workerID, sessionOwner, carried)
		carried = next
		if err != nil || found {
			w.leave()
		}
		if err != nil {
			retryable = rt.fetchErrorPause(err, retryable, "work item")
			continue
		}
		retryable = 0
		if found {
			idle.found()
			continue
		}
		d := idle.empty()
		if crowded && (d == 0 || d > rt.opts.MinPollInterval) {
			// This loop's own sessions were out of its reach this time:
			// look again soon rather than sleep until woken.
			d = rt.opts.MinPollInterval
		}
		rt.idleWait(w.sleep(), d)
		w.leave()
	}
}

// processNextWorkItem fetches and runs one activity; found reports whether
// there was one, crowded that the fetch could take no session item only
// because other loops' fetches held the room for new sessions.
func (rt *Runtime) processNextWorkItem(workerID, sessionOwner string, carried *duroxide.LockedWorkItem) (found, crowded bool, next *duroxide.LockedWorkItem, err error) {
	locked, reserved := carried, false
	if locked == nil {
		var sess *duroxide.SessionFetchConfig
		// A fetch that may take a session item reserves room for its
		// session first, so loops fetching at once never claim more
		// sessions than MaxSessionsPerRuntime between them (a claimed
		// session stays pinned to its owner even if the item is given
		// back). Without room it fetches items of no session. (An item
		// carried from the last ack has no session.)
		reserved, crowded = rt.sessions.reserve(rt.opts.MaxSessionsPerRuntime)
		if reserved {
			sess = &duroxide.SessionFetchConfig{OwnerID: sessionOwner, LockTimeout: rt.opts.SessionLockTimeout}
		}
		locked, err = rt.p.FetchWorkItem(rt.fetchCtx, rt.opts.WorkerLockTimeout, rt.opts.LongPollTimeout, sess, rt.opts.WorkerTagFilter)
		if err != nil || locked == nil {
			rt.settleSession(reserved, nil)
			return false, crowded, nil, err
		}
	}
	fetched := time.Now()
	item, ok := locked.Item.(duroxide.ActivityExecuteItem)
	if !ok {
		rt.settleSession(reserved, nil)
		rt.log.Error("unexpected work item on the worker queue; abandoning it", "variant", locked.Item.Variant())
		rt.abandon(duroxide.WorkerQueue, locked.Item.InstanceID(), locked.LockToken, time.Second, false)
		return true, false, nil, nil
	}
	if item.SessionID != nil && !reserved {
		// A provider that hands out a session item to a fetch without a
		// session configuration: give it back without counting it.
		rt.abandon(duroxide.WorkerQueue, item.Instance, locked.LockToken, 100*time.Millisecond, true)
		return true, false, nil, nil
	}
	defer rt.settleSession(reserved, item.SessionID)()
	defer rt.tel.startActivity(rt.ctx, locked, item)()
	w := &activityWork{item: item, token: locked.LockToken, attempt: locked.AttemptCount, workerID: workerID, fetched: fetched, carry: true,
		previous: locked.Heartbeat, enqueued: locked.EnqueuedAt}
	if w.attempt > rt.opts.MaxAttempts {
		rt.poisonActivity(w)
		return true, false, w.next, nil
	}
	fn, ok := rt.resolveActivity(item.Name)
	if !ok {
		delay := rt.opts.UnregisteredBackoff.Delay(w.attempt)
		rt.log.Warn("activity not registered, abandoning with backoff", "instance_id", item.Instance,
			"activity_name", item.Name, "attempt", w.attempt, "max_attempts", rt.opts.MaxAttempts, "backoff", delay)
		rt.noteActivityPending(item, w.attempt, delay)
		rt.abandon(duroxide.WorkerQueue, item.Instance, w.token, delay, false)
		return true, false, nil, nil
	}
	rt.runActivity(w, fn)
	return true, false, w.next, nil
}

// activityWork is one fetched activity.
type activityWork struct {
	item     duroxide.ActivityExecuteItem
	token    string
	attempt  uint32
	workerID string
	fetched  time.Time // when the fetch returned: the lock's timeout runs from about then
	// carry: the ack may lock the loop's next item (WorkAckFetcher),
	// which it leaves in next.
	carry bool
	next  *duroxide.LockedWorkItem
	// previous is the heartbeat an earlier attempt left on the item.
	previous *duroxide.Heartbeat
	// heartbeat is this attempt's (nil until it runs).
	heartbeat *heartbeatState
	// enqueued orders its wait for a slot (runSlots).
	enqueued time.Time
}

// poisonActivity fails an activity that exceeded MaxAttempts.
func (rt *Runtime) poisonActivity(w *activityWork) {
	rt.tel.poisoned(w.token, queueWorker)
	raw, _ := duroxide.MarshalWorkItem(w.item)
	rt.log.Warn("activity exceeded max attempts, marking as poison", "instance_id", w.item.Instance,
		"activity_name", w.item.Name, "attempt", w.attempt)
	lease := rt.startLease(queueWorker, w.token, w.fetched, nil)
	defer lease.stop()
	rt.ackActivity(w, lease, duroxide.ActivityFailedItem{
		Instance: w.item.Instance, ExecutionID: w.item.ExecutionID, ID: w.item.ID,
		Details: duroxide.PoisonError{
			AttemptCount: w.attempt, MaxAttempts: rt.opts.MaxAttempts, Message: string(raw),
			MessageType: duroxide.PoisonMessageType{Kind: duroxide.PoisonActivity, Instance: w.item.Instance,
				ExecutionID: w.item.ExecutionID, ActivityName: w.item.Name, ActivityID: w.item.ID},
		},
	})
}

// activityResult is what an activity function returned.
type activityResult struct {
	out string
	err error
}

// runActivity runs fn while renewing the item's lock. Transient renewal
// failures are retried until the lock's expiry (locklease.go). When the
// lock is lost — the item was deleted (its orchestration no longer wants
// it) or taken over — or expired while renewals kept failing, the
// activity's context is cancelled, it gets the grace period to return, and
// its result is dropped: the item is never acked empty, since a lock that
// only looked lost may still be ours, and an empty ack would then delete
// the work and strand its orchestration.
func (rt *Runtime) runActivity(w *activityWork, fn ActivityFunc) {
	actx, cancel := context.WithCancelCause(rt.tel.context(w.token, rt.ctx))
	defer cancel(nil)
	timeout := rt.reg.activityPolicy(w.item.Name).HeartbeatTimeout
	w.heartbeat = newHeartbeatState(w.previous)
	lease := rt.startLease(queueWorker, w.token, w.fetched, w.heartbeat)
	defer lease.stop()
	slot := rt.workSlots.acquireFor(w.enqueued, lease.lost, rt.fetchCtx.Done())
	if slot == nil {
		// Fetched ahead, it never ran: its lock was lost while it waited,
		// or the runtime is stopping (given back, the attempt not counted).
		rt.dropActivity(w, lease)
		return
	}
	defer slot.release()
	// The watchdog starts with the attempt, not the fetch: a fetched-ahead
	// item waits for a slot without heartbeating.
	w.heartbeat.start(timeout)
	defer w.heartbeat.stop()
	done := make(chan activityResult, 1)
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		done <- callActivity(fn, rt.activityContext(actx, w), w.item.Input)
	}()
	select {
	case r := <-done:
		slot.release() // the ack is I/O: another activity may run meanwhile
		rt.ackActivity(w, lease, rt.completion(w, r))
	case <-w.heartbeat.heartbeatExpired():
		rt.log.Warn("activity did not heartbeat within its heartbeat timeout; failing the attempt",
			"instance_id", w.item.Instance, "activity_name", w.item.Name, "activity_id", w.item.ID, "heartbeat_timeout", timeout)
		cancel(ErrHeartbeatTimeout)
		if !rt.awaitGrace(w, done, lease.lost) {
			rt.dropActivity(w, lease)
			return
		}
		slot.release()
		rt.ackActivity(w, lease, heartbeatTimeoutFailure(w, timeout))
	case <-lease.lost:
		cause := lease.lostCause()
		w.heartbeat.lose(cause)
		cancel(cause)
		rt.awaitGrace(w, done, nil)
		rt.dropActivity(w, lease)
	}
}

// awaitGrace gives a cancelled activity its grace period to return; it
// reports false when lost closed first (the lock is gone: nothing may be
// acked).
func (rt *Runtime) awaitGrace(w *activityWork, done <-chan activityResult, lost <-chan struct{}) bool {
	grace := time.NewTimer(rt.opts.ActivityCancellationGracePeriod)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		rt.log.Warn("activity did not finish within the grace period; discarding its result",
			"instance_id", w.item.Instance, "activity_name", w.item.Name, "activity_id", w.item.ID)
	case <-lost:
		return false
	}
	return true
}

// dropActivity discards the result of an activity whose lock is gone or
// expired. A lock the store reported gone is someone else's (or its item
// was deleted): nothing to do. A lock that expired while renewals failed
// transiently may still be ours, so it is abandoned, making the item
// visible again at once; if it was not ours, the abandon fails harmlessly.
// The abandon does not count the attempt: the infrastructure spoiled it,
// not the activity, and a transient fault must never poison an activity.
func (rt *Runtime) dropActivity(w *activityWork, lease *lockLease) {
	rt.tel.acked(w.token, nil)
	if lease.gone.Load() {
		rt.log.Debug("activity lock lost; result dropped", "instance_id", w.item.Instance, "activity_id", w.item.ID)
		return
	}
	rt.abandonRetrying(duroxide.WorkerQueue, w.item.Instance, w.token, 0, true, rt.opts.WorkerLockTimeout)
}

// callActivity runs fn, turning a panic into an error.
func callActivity(fn ActivityFunc, ctx ActivityContext, input string) (r activityResult) {
	defer func() {
		if p := recover(); p != nil {
			r = activityResult{err: fmt.Errorf("activity panicked: %v", p)}
		}
	}()
	out, err := fn(ctx, input)
	return activityResult{out: out, err: err}
}

// completion is the work item that reports r to the orchestration.
func (rt *Runtime) completion(w *activityWork, r activityResult) duroxide.WorkItem {
	if r.err == nil {
		return duroxide.ActivityCompletedItem{Instance: w.item.Instance, ExecutionID: w.item.ExecutionID, ID: w.item.ID, Result: r.out}
	}
	return duroxide.ActivityFailedItem{Instance: w.item.Instance, ExecutionID: w.item.ExecutionID, ID: w.item.ID,
		Details: duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppActivityFailed}, Message: r.err.Error()}}
}

// ackActivity acks w with completion, retrying retryable failures while
// the lock is known to be ours. A result the store cannot hold (too large)
// becomes an activity failure naming the size and the limit, acked at
// once: re-running the activity would produce it again. A lock reported
// lost leaves the item to its new holder; any other failure abandons the
// item so it is retried — without counting the attempt when the failure
// was transient (it outlasted the lock), so that transient faults never
// poison an activity.
func (rt *Runtime) ackActivity(w *activityWork, lease *lockLease, completion duroxide.WorkItem) {
	rt.turns.ackBegin(w.item.Instance)
	defer func() {
		if rt.turns.ackEnd(w.item.Instance) {
			rt.orchWake.fireOne()
		}
	}()
	deadline := lease.ackDeadline()
	sizeRefused := false // the failure replacing a refused completion is small: one replacement
	for {
		rt.tel.acked(w.token, completion)
		err := retryTransient(rt.ctx, deadline, func() error {
			actx := rt.tel.context(w.token, rt.ctx)
			if f, ok := rt.p.(duroxide.WorkAckFetcher); ok && w.carry && !rt.stopping() {
				next, err := f.AckWorkItemAndFetch(actx, w.token, completion, rt.opts.WorkerLockTimeout, rt.opts.WorkerTagFilter)
				w.next = next
				return err
			}
			return rt.p.AckWorkItem(actx, w.token, completion)
		})
		if err == nil {
			if completion != nil {
				rt.selfWake(duroxide.OrchestratorQueue, completion.InstanceID())
			}
			return
		}
		if failure, ok := tooLargeFailure(w, completion, err); ok && !sizeRefused {
			sizeRefused = true
			rt.log.Warn("activity result too large for the store; failing the activity", "instance_id", w.item.Instance,
				"activity_name", w.item.Name, "activity_id", w.item.ID, "error", err)
			completion = failure
			continue
		}
		if rt.ctx.Err() != nil {
			return // shutting down: the lock expires and the activity runs again
		}
		if errors.Is(err, duroxide.ErrLockLost) {
			rt.log.Warn("activity ack failed: the lock is gone; the result is dropped", "instance_id", w.item.Instance,
				"activity_id", w.item.ID, "error", err)
			return
		}
		rt.log.Warn("activity ack failed, abandoning the work item", "instance_id", w.item.Instance,
			"activity_id", w.item.ID, "error", err)
		rt.abandonRetrying(duroxide.WorkerQueue, w.item.Instance, w.token, 100*time.Millisecond, duroxide.IsRetryable(err), rt.opts.WorkerLockTimeout)
		return
	}
}

// tooLargeFailure returns the activity failure that replaces a completion
// (a result, or an error message) the store refused as too large.
func tooLargeFailure(w *activityWork, completion duroxide.WorkItem, err error) (duroxide.WorkItem, bool) {
	if completion == nil || !errors.Is(err, duroxide.ErrTooLarge) {
		return nil, false
	}
	msg := err.Error()
	var tl *duroxide.TooLargeError
	if errors.As(err, &tl) {
		msg = tl.Error()
	}
	return duroxide.ActivityFailedItem{Instance: w.item.Instance, ExecutionID: w.item.ExecutionID, ID: w.item.ID,
		Details: duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppActivityFailed}, Message: msg}}, true
}

// activityContext builds the context an activity sees. The orchestration's
// name and version are read lazily: reading them costs a history read that
// most activities never need.
func (rt *Runtime) activityContext(ctx context.Context, w *activityWork) ActivityContext {
	info := &activityInfo{
		instance: w.item.Instance, executionID: w.item.ExecutionID, activityName: w.item.Name,
		activityID: w.item.ID, workerID: w.workerID, sessionID: w.item.SessionID, tag: w.item.Tag,
		client: rt.client, logger: rt.log, heartbeat: w.heartbeat,
	}
	info.describe = sync.OnceValues(func() (string, string) { return rt.describe(ctx, w.item.Instance) })
	return ActivityContext{Context: ctx, info: info}
}

// describe returns the name and version of instance's latest
// OrchestrationStarted ("unknown" when it cannot be read).
func (rt *Runtime) describe(ctx context.Context, instance string) (string, string) {
	hist, err := rt.p.Read(ctx, instance)
	if err == nil {
		for i := len(hist) - 1; i >= 0; i-- {
			if s, ok := hist[i].Kind.(duroxide.OrchestrationStarted); ok {
				return s.Name, s.Version
			}
		}
	}
	return "unknown", "unknown"
}

// settleSession turns a fetch's session reservation into a count of its
// item's session (nil: none), and returns the func that ends the count
// when the activity is done. When a session ends at the cap every loop
// is woken: only the loop owning a waiting session's items (one given
// back for the cap) can take them, and it may be asleep while another
// loop polls (the idle gate).
func (rt *Runtime) settleSession(reserved bool, session *string) (release func()) {
	if !reserved {
		return func() {}
	}
	if session == nil {
		rt.sessions.unreserve()
		return func() {}
	}
	done := rt.sessions.take(*session)
	return func() {
		if done(rt.opts.MaxSessionsPerRuntime) {
			rt.workWake.fire()
		}
	}
}

// sessionTracker counts the activities in flight per session, and the
// fetches under way that may take a new one, so a runtime holds at most
// MaxSessionsPerRuntime sessions.
type sessionTracker struct {
	mu       sync.Mutex
	m        map[string]int
	reserved int // fetches under way that may take a new session
}

// reserve makes room for one more session if there is room under max;
// crowded reports a refusal only because other fetches under way hold
// the room (most of them will take no session).
func (s *sessionTracker) reserve(max int) (ok, crowded bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m)+s.reserved >= max {
		return false, len(s.m) < max
	}
	s.reserved++
	return true, false
}

// unreserve gives back a reservation whose fetch took no session item.
func (s *sessionTracker) unreserve() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserved--
}

// take turns a reservation into one activity of session; the returned
// func undoes it and reports whether that freed room at the cap (wake
// the loops).
func (s *sessionTracker) take(session string) (done func(max int) bool) {
	s.mu.Lock()
	if s.m == nil {
		s.m = map[string]int{}
	}
	s.reserved--
	s.m[session]++
	s.mu.Unlock()
	return func(max int) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		full := len(s.m)+s.reserved >= max
		if s.m[session]--; s.m[session] <= 0 {
			delete(s.m, session)
		}
		return full && len(s.m)+s.reserved < max
	}
}

// sessionManager renews this runtime's sessions and deletes orphaned ones
// until the runtime stops. A renewal that fails transiently is retried
// until the sessions' locks, as last renewed, expire: waiting for the
// next tick would let them lapse.
func (rt *Runtime) sessionManager(owners []string) {
	defer rt.wg.Done()
	renew := time.NewTicker(renewalInterval(rt.opts.SessionLockTimeout, rt.opts.SessionLockRenewalBuffer))
	defer renew.Stop()
	cleanup := time.NewTicker(rt.opts.SessionCleanupInterval)
	defer cleanup.Stop()
	renewed := time.Now()
	deadline := func() time.Time { return renewed.Add(rt.opts.SessionLockTimeout) }
	for {
		select {
		case <-rt.stop:
			return
		case <-renew.C:
			err := retryTransient(rt.ctx, deadline, func() error {
				sent := time.Now()
				_, err := rt.p.RenewSessionLock(rt.ctx, owners, rt.opts.SessionLockTimeout, rt.opts.SessionIdleTimeout)
				if err == nil {
					renewed = sent
				}
				return err
			})
			if err != nil && !errors.Is(err, context.Canceled) {
				rt.log.Warn("session lock renewal failed", "error", err)
			}
		case <-cleanup.C:
			if _, err := rt.p.CleanupOrphanedSessions(rt.ctx, rt.opts.SessionIdleTimeout); err != nil && !errors.Is(err, context.Canceled) {
				rt.log.Warn("session cleanup failed", "error", err)
			}
		}
	}
}
