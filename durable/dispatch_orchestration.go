package durable

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// The orchestration dispatcher: OrchestrationConcurrency slots and
// OrchestrationFetchAhead more loops (dispatch_slots.go), each fetching
// one instance's batch at a time, running one turn in a slot under a
// lock renewer and acking the commit, its slot given back.
//
// The life of a turn, one *turn value (turn.go) from fetch to ack:
//
//  1. Fetch (orchestrationLoop, here): FetchOrchestrationItem locks one
//     instance's messages and history; startLease (locklease.go) keeps the
//     lock renewed until the turn is over; newTurn wraps the item.
//  2. Read (processOrchestrationItem, here; turn.readHistory and
//     turn.readMessages, turn.go): poison and undecodable items end here;
//     a rewind request after other messages waits for the next turn
//     (carryFromRewind, dispatch_rewind.go); the messages name the start
//     item and the completions; a continue-as-new moves the turn to the
//     next execution.
//  3. Replay (runTurn, here): resolve picks the handler (registry.go);
//     turn.replay (turn.go) runs the replay engine (replayEngine,
//     replay.go). Stage 1 (prepCompletions, replay.go) turns completions
//     into events; stage 2 (executeOrchestration, replay_execute.go, with
//     replay_apply.go and replay_cancel.go) runs the code (context*.go,
//     coroutine.go) over the history and records its new events, its
//     actions (action.go) and the turn's result (turnResult, turn.go). A
//     nondeterministic turn may be held instead (nondeterminism.go).
//  4. Commit (commitResult and finishCommit, commit.go; limits.go): the
//     result becomes terminal events, work items and metadata; limits and
//     in-flight activity cancellation are applied.
//  5. Ack (ack, here): AckOrchestrationItem, retried while the lease says
//     the lock is ours; afterCommit wakes the dispatchers for the new work.

// orchestrationLoop is one orchestration loop: it fetches, runs the
// turn in a slot (dispatch_slots.go) and acks it.
//
// A loop fetches by name an instance this runtime was told has work
// (localTurns, duroxide.InstanceFetcher), else runs discovery; at least
// once per MinPollInterval some loop runs discovery, so work from other
// processes is not starved by local work. After a turn the loop fetches
// again at once only if a message came for its instance meanwhile, or
// more was ready than its fetch took (OrchestrationItem.NoMoreReady), or
// a local wake-up may have reached nobody (waiter.quiet), or instances
// wait on the ready list. Otherwise that fetch would come back empty, and
// the loop waits as after an empty one, but at most MinPollInterval:
// work other processes enqueued meanwhile (an activity they ran for this
// very instance) tells it nothing.
func (rt *Runtime) orchestrationLoop(workerID string) {
	defer rt.wg.Done()
	// No wake-up for all when the poller finds work: the loop passes
	// one on itself when there was more, or the poller's role (below).
	idle := rt.newIdle(&rt.orchGate, nil)
	retryable := 0
	var settled *waiter // the fetch before the last turn, if nothing else was ready
	next := ""          // the last turn's instance, when a message came for it meanwhile
	for !rt.stopping() {
		if settled != nil && settled.quiet() && !rt.turns.pending() {
			w := rt.orchWake.join()
			rt.idleWait(w.sleep(), min(rt.opts.MinPollInterval, idle.emptyOr(rt.opts.MinPollInterval)))
			w.leave()
		}
		settled = nil
		w := rt.orchWake.join() // before the fetch, so no wake-up is missed
		since := rt.turns.mark()
		target, deferred := rt.nextTarget(next)
		next = ""
		if deferred {
			// The ready instances wait for acks in flight, whose end
			// wakes a loop: sleep rather than discover them one
			// completion at a time.
			rt.idleWait(w.sleep(), rt.opts.MinPollInterval)
			w.leave()
			continue
		}
		fetched := time.Now()
		item, err := rt.fetchOrchestration(target)
		if err == nil && item == nil && (target == "" || !rt.turns.pending()) {
			rt.idleWait(w.sleep(), idle.empty())
		}
		woken := w.leave()
		if err != nil {
			if target != "" {
				rt.turns.note(target) // back on the ready list
			}
			retryable = rt.fetchErrorPause(err, retryable, "orchestration item")
			continue
		}
		retryable = 0
		if item == nil {
			continue
		}
		steppedDown := idle.found()
		if target == "" && !item.NoMoreReady {
			// Work discovery saw and left is for the next loop to
			// discover: it may be from other processes, which no ready
			// list names.
			rt.discovered.Store(0)
		}
		if woken || (target == "" && !item.NoMoreReady) {
			// A wake-up this loop took during its fetch, or work its
			// discovery saw and left, is for another loop: this one is busy.
			rt.orchWake.fireOne()
		} else if steppedDown {
			// This loop was the poller and is busy now: a sleeping loop
			// takes over, or work other processes enqueue would wait for
			// a local wake-up.
			rt.orchWake.wakeSleeper()
		}
		rt.turns.begin(item.Instance, since)
		if rt.compatible(item) {
			rt.runFetched(item, workerID, fetched)
		}
		switch {
		case rt.turns.end(item.Instance):
			next = item.Instance
		case target != "" || item.NoMoreReady:
			settled = w
		}
	}
}

// nextTarget returns the instance to fetch by name (again, if not "",
// else a ready one), or "" for discovery: when the provider cannot fetch
// by name, nothing is ready, or no loop has run discovery for
// MinPollInterval. deferred (with "") says the only ready instances have
// activity acks of this runtime in flight (localTurns.acking): their
// completions will run in one turn when the last ack ends.
func (rt *Runtime) nextTarget(again string) (target string, deferred bool) {
	if _, ok := rt.p.(duroxide.InstanceFetcher); !ok {
		return "", false
	}
	if again != "" {
		if !rt.turns.acks(again) {
			return again, false
		}
		rt.turns.note(again) // taken when its acks end
	}
	now := time.Now().UnixNano()
	if last := rt.discovered.Load(); now-last >= int64(rt.opts.MinPollInterval) && rt.discovered.CompareAndSwap(last, now) {
		return "", false
	}
	return rt.turns.take()
}

// fetchOrchestration fetches target by name (nextTarget), or runs
// discovery when target is "".
func (rt *Runtime) fetchOrchestration(target string) (*duroxide.OrchestrationItem, error) {
	if target != "" {
		return rt.p.(duroxide.InstanceFetcher).FetchOrchestrationInstance(rt.fetchCtx, target, rt.opts.OrchestratorLockTimeout, rt.filter)
	}
	rt.discovered.Store(time.Now().UnixNano())
	return rt.p.FetchOrchestrationItem(rt.fetchCtx, rt.opts.OrchestratorLockTimeout, rt.opts.LongPollTimeout, rt.filter)
}

// runFetched runs a fetched item's turn in a slot, or gives it back
// unrun when none comes before its lock is lost or the runtime stops.
func (rt *Runtime) runFetched(item *duroxide.OrchestrationItem, workerID string, fetched time.Time) {
	t := newTurn(item, rt.startLease(queueOrchestrator, item.LockToken, time.Now(), nil), workerID, rt.now)
	endSpan := rt.tel.startTurn(rt.ctx, item, fetched)
	if t.slot = rt.orchSlots.acquire(t.lease.lost, rt.fetchCtx.Done()); t.slot != nil {
		rt.processSafely(t)
		t.slot.release()
	} else {
		rt.giveBackUnrun(t)
	}
	endSpan()
	t.lease.stop()
}

// giveBackUnrun gives back an item fetched ahead that never got a slot:
// its lock was lost while it waited (nothing to do), or the runtime is
// stopping (abandoned at once, the attempt not counted: no turn ran).
func (rt *Runtime) giveBackUnrun(t *turn) {
	if t.lease.gone.Load() {
		return
	}
	rt.abandon(duroxide.OrchestratorQueue, t.instance, t.item.LockToken, 0, true)
}

// processSafely runs one item; a panic in the runtime itself (user panics
// are the engine's to report) abandons the item instead of killing the
// process, so the poison count eventually stops it.
func (rt *Runtime) processSafely(t *turn) {
	defer func() {
		if p := recover(); p != nil {
			rt.log.Error("orchestration turn panicked in the runtime; abandoning the item", "instance_id", t.instance, "panic", fmt.Sprint(p))
			rt.abandon(duroxide.OrchestratorQueue, t.instance, t.item.LockToken, time.Second, false)
		}
	}()
	rt.processOrchestrationItem(t)
}

// compatible abandons (for 1 s) an execution pinned to a duroxide version
// this runtime does not replay; providers filter too, this is the
// runtime's own check.
func (rt *Runtime) compatible(item *duroxide.OrchestrationItem) bool {
	for _, e := range item.History {
		if _, ok := e.Kind.(duroxide.OrchestrationStarted); !ok {
			continue
		}
		v, err := duroxide.ParseSemVer(e.DuroxideVersion)
		if err != nil || rt.supported.Contains(v) {
			return true
		}
		rt.log.Warn("Execution pinned at incompatible version, abandoning (runtime-side check)", "instance_id", item.Instance,
			"pinned_version", v.String(), "supported_range", rt.supportedRange(), "attempt_count", item.AttemptCount)
		rt.abandon(duroxide.OrchestratorQueue, item.Instance, item.LockToken, time.Second, false)
		return false
	}
	return true
}

// processOrchestrationItem runs one fetched turn to its commit
// (duroxide's process_orchestration_item).
func (rt *Runtime) processOrchestrationItem(t *turn) {
	item, instance := t.item, t.instance
	if item.AttemptCount > rt.opts.MaxAttempts {
		rt.poisonOrchestration(t)
		return
	}
	if item.HistoryError != nil {
		rt.log.Warn("history deserialization failed, abandoning with 1s backoff", "instance_id", instance,
			"error", *item.HistoryError, "attempt", item.AttemptCount, "max_attempts", rt.opts.MaxAttempts)
		rt.abandon(duroxide.OrchestratorQueue, instance, item.LockToken, time.Second, false)
		return
	}
	t.carryFromRewind()
	suspend, rest := takeSuspension(item.Messages)
	item.Messages = rest
	if req, rest := takeRewind(item.Messages); req != nil {
		item.Messages = rest // a request that does not apply is dropped
		if rt.rewind(t, req, suspend) {
			return
		}
	}
	t.readHistory(item.History)
	item.Messages = rt.dropStaleRestarts(item, item.Messages)
	t.readMessages(item.Messages)
	if !t.continueAsNew && awaitingSuccessor(item.History) {
		rt.holdForSuccessor(item)
		return
	}
	if t.ended && !t.continueAsNew {
		// A terminal instance: ack nothing, which drains the messages.
		rt.logDropped(instance, item.ExecutionID, item.Messages)
		if err := rt.notifyCollisions(t, true); err != nil {
			rt.parentUnreadable(t, err)
			return
		}
		rt.ack(t)
		return
	}
	if t.continueAsNew {
		t.executionID++
		t.readHistory(nil)
	}
	if !rt.judgeTimeouts(t) || !rt.judgeCancels(t) {
		return
	}
	rt.dropCancelsOfEarlierParents(t)
	if t.name != "" && !rt.runTurn(t) {
		return
	}
	t.finishCommit()
	t.withholdReportToRewoundParent()
	t.settleSuspension(suspend)
	if err := rt.notifyCollisions(t, false); err != nil {
		rt.parentUnreadable(t, err)
		return
	}
	rt.ack(t)
}

// runTurn resolves the turn's handler, replays the turn and folds its
// result into the commit. It returns false when the item went back
// instead (orchestration not registered, or a nondeterministic turn held).
func (rt *Runtime) runTurn(t *turn) bool {
	item, instance := t.item, t.instance
	version, fn, ok := rt.resolve(t)
	if !ok {
		delay := rt.opts.UnregisteredBackoff.Delay(item.AttemptCount)
		rt.log.Warn("orchestration not registered, abandoning with backoff", "instance_id", instance,
			"orchestration_name", t.name, "version", valueOf(t.version), "attempt", item.AttemptCount,
			"max_attempts", rt.opts.MaxAttempts, "backoff", delay)
		rt.notePending(instance, t, item.AttemptCount, delay)
		rt.abandon(duroxide.OrchestratorQueue, instance, item.LockToken, delay, false)
		return false
	}
	first := t.empty()
	if first {
		// A new execution: its started event is part of this turn's delta.
		t.delta = append(t.delta, t.startedEvent(version))
	}
	t.replay(fn, version, rt.log, rt.opts.HistoryLimits)
	if t.codeMismatch {
		if reason := rt.nondeterministic(instance, t.executionID, t.name, version, t.result.Details); reason != "" {
			rt.block(item, instance, reason)
			return false
		}
	}
	if err := rt.commitResult(t); err != nil {
		rt.parentUnreadable(t, err)
		return false
	}
	if first && (t.result.Kind == turnContinue || t.result.Kind == turnContinueAsNew) {
		t.armTimeouts(t.clock())
	}
	return true
}

// parentUnreadable gives back a child's ending turn whose parent
// execution could not be read (parentExecution's fallback for histories
// that do not record it): the result is not sent anywhere until it is
// known where it goes. Only a permanent failure counts the attempt.
func (rt *Runtime) parentUnreadable(t *turn, err error) {
	rt.log.Warn("reading the parent's current execution failed; abandoning the item with 1s backoff", "instance_id", t.instance,
		"error", err, "attempt", t.item.AttemptCount, "max_attempts", rt.opts.MaxAttempts)
	rt.abandon(duroxide.OrchestratorQueue, t.instance, t.item.LockToken, time.Second, duroxide.IsRetryable(err))
}

// awaitingSuccessor reports whether history's execution ended by
// continuing as new and nothing ended it otherwise since (a poisoned
// successor appends OrchestrationFailed): its ContinueAsNew item is still
// queued, so messages fetched without it belong to the next execution.
func awaitingSuccessor(history []duroxide.Event) bool {
	for i := len(history) - 1; i >= 0; i-- {
		switch history[i].Kind.(type) {
		case duroxide.OrchestrationContinuedAsNew:
			return true
		case duroxide.OrchestrationCompleted, duroxide.OrchestrationFailed:
			return false
		}
	}
	return false
}

// holdForSuccessor gives back a batch fetched without the ContinueAsNew
// item of an execution that already continued as new: the item was not
// visible yet (backed off, written by a process whose clock runs ahead,
// or enqueued after the fetch discovered the instance). Acking would
// delete messages the next execution must receive, so they are abandoned
// without counting the attempt, visible at once so that their order is
// kept, and this slot pauses before fetching again so that waiting for a
// late item does not spin.
func (rt *Runtime) holdForSuccessor(item *duroxide.OrchestrationItem) {
	rt.log.Debug("messages fetched without the continue-as-new item of a continued execution; keeping them for the next execution",
		"instance_id", item.Instance, "execution_id", item.ExecutionID, "messages", len(item.Messages))
	rt.abandon(duroxide.OrchestratorQueue, item.Instance, item.LockToken, 0, true)
	select {
	case <-rt.ctx.Done():
	case <-time.After(rt.opts.MinPollInterval):
	}
}

// resolve picks the handler: the exact version the start item or history
// names, else the registry's policy.
func (rt *Runtime) resolve(t *turn) (string, OrchestrationFunc, bool) {
	if t.version != nil {
		return rt.reg.resolveOrchestrationExact(t.name, *t.version)
	}
	return rt.reg.resolveOrchestration(t.name)
}

// notePending tells clients (through the provider's PendingNoter) that
// instance waits for an orchestration no runtime has registered.
func (rt *Runtime) notePending(instance string, r *turn, attempt uint32, delay time.Duration) {
	n, ok := rt.p.(duroxide.PendingNoter)
	if !ok {
		return
	}
	version := "any version"
	if r.version != nil {
		version = "version " + *r.version
	}
	note := fmt.Sprintf("waiting for orchestration %q (%s), which is not registered on any runtime that fetched it; attempt %d of %d, retrying in %s",
		r.name, version, attempt, rt.opts.MaxAttempts, delay)
	if err := n.NotePending(rt.ctx, instance, note); err != nil {
		rt.log.Debug("recording the pending note failed", "instance_id", instance, "error", err)
	}
}

// noteActivityPending tells clients (through the provider's
// PendingNoter) that item's instance waits for an activity no runtime has
// registered. The note names the activity's execution and id
// (activityNote), so that Client.Status shows it only while that activity
// is still outstanding.
func (rt *Runtime) noteActivityPending(item duroxide.ActivityExecuteItem, attempt uint32, delay time.Duration) {
	n, ok := rt.p.(duroxide.PendingNoter)
	if !ok {
		return
	}
	text := fmt.Sprintf("waiting for activity %q, which is not registered on any runtime that fetched it; attempt %d of %d, retrying in %s",
		item.Name, attempt, rt.opts.MaxAttempts, delay)
	if err := n.NotePending(rt.ctx, item.Instance, activityNote(item.ExecutionID, item.ID, text)); err != nil {
		rt.log.Debug("recording the pending note failed", "instance_id", item.Instance, "error", err)
	}
}

// ack commits t. Retryable failures (throttling, timeouts, resets) are
// retried while the lock is ours; if they outlast it, the item is
// abandoned without counting the attempt (poison is for messages that
// fail, not for a store that does) and its turn runs again later: a
// transient fault never fails an instance. A lost lock leaves the instance to its new holder. Only a
// permanent failure (the store refused this commit) commits an
// Infrastructure failure of the execution instead, as duroxide does; if
// even that fails the lock is abandoned.
func (rt *Runtime) ack(t *turn) {
	t.slot.release() // the commit is I/O: another turn may run meanwhile
	item := t.item
	oc := duroxide.OrchestrationCommit{ExecutionID: t.executionID, HistoryDelta: t.delta,
		WorkerItems: t.worker, OrchestratorItems: t.orchestratorItems(), Metadata: t.metadata, CancelledActivities: t.cancelled, Suspend: t.suspend, RestoreKV: t.restoreKV}
	handed, err := rt.ackHandingOff(t, oc)
	if err == nil {
		rt.tel.committed(item.LockToken, &oc)
		rt.afterCommit(t, len(handed))
		rt.runHandedOff(handed)
		return
	}
	switch {
	case rt.ctx.Err() != nil:
		return // shutting down: the lock expires and the turn runs again elsewhere
	case errors.Is(err, duroxide.ErrLockLost):
		rt.log.Warn("orchestration ack failed: the lock is gone; the turn will run again", "instance_id", item.Instance, "error", err)
		return
	case duroxide.IsRetryable(err):
		rt.log.Warn("orchestration ack kept failing with retryable errors while the lock held; abandoning the item",
			"instance_id", item.Instance, "error", err)
		rt.abandonRetrying(duroxide.OrchestratorQueue, item.Instance, item.LockToken, 100*time.Millisecond, true, rt.opts.OrchestratorLockTimeout)
		return
	}
	rt.log.Warn("orchestration ack failed, failing the orchestration", "instance_id", item.Instance, "error", err)
	infra := duroxide.InfrastructureError{Operation: "ack_orchestration_item", Message: err.Error()}
	var pe *duroxide.ProviderError
	if errors.As(err, &pe) {
		infra = pe.ToInfrastructure()
	}
	fb := newTurn(item, t.lease, t.workerID, rt.now)
	fb.readHistory(item.History)
	fb.append(nil, duroxide.OrchestrationFailed{Details: infra})
	// The carried messages are for the turn after this one: a rewind
	// request then finds the failure.
	fail := duroxide.OrchestrationCommit{ExecutionID: t.executionID, HistoryDelta: fb.delta, Metadata: executionMetadata(fb.delta),
		OrchestratorItems: t.carried}
	if err := rt.ackWithRetry(t, fail); err != nil {
		rt.log.Warn("committing the failure failed, abandoning the lock", "instance_id", item.Instance, "error", err)
		rt.abandon(duroxide.OrchestratorQueue, item.Instance, item.LockToken, 50*time.Millisecond, false)
	}
}

// ackWithRetry commits oc for t's item, retrying retryable failures while
// the lock is ours (lockLease.ackDeadline).
func (rt *Runtime) ackWithRetry(t *turn, oc duroxide.OrchestrationCommit) error {
	token := t.item.LockToken
	return retryTransient(rt.ctx, t.lease.ackDeadline(), func() error {
		return rt.p.AckOrchestrationItem(rt.tel.context(token, rt.ctx), token, oc)
	})
}

// ackHandingOff is ackWithRetry for a turn's own commit, which may hand
// its activities to this runtime's workers (dispatch_handoff.go).
func (rt *Runtime) ackHandingOff(t *turn, oc duroxide.OrchestrationCommit) ([]*duroxide.LockedWorkItem, error) {
	h, want, ok := rt.workLocal(oc)
	if !ok {
		return nil, rt.ackWithRetry(t, oc)
	}
	token := t.item.LockToken
	var handed []*duroxide.LockedWorkItem
	err := retryTransient(rt.ctx, t.lease.ackDeadline(), func() error {
		var err error
		handed, err = h.AckOrchestrationItemAndLock(rt.tel.context(token, rt.ctx), token, oc, want)
		return err
	})
	return handed, err
}

// afterCommit wakes the local dispatchers for the work the commit
// enqueued but for the handed activities its ack locked for this
// runtime, timers at their fire time, and forgets finished instances.
func (rt *Runtime) afterCommit(t *turn, handed int) {
	instance := t.instance
	rt.observeHistorySize(t)
	if len(t.worker) > handed {
		rt.selfWake(duroxide.WorkerQueue, instance)
	}
	now := rt.now()
	for _, w := range t.orchestratorItems() {
		if t, ok := w.(duroxide.TimerFiredItem); ok {
			if d := time.UnixMilli(int64(t.FireAtMs)).Sub(now); d > 0 {
				if !rt.virtualClock() { // a virtual clock wakes us when it gets there
					rt.wakeAt(d+5*time.Millisecond, t.InstanceID())
				}
				continue
			}
		}
		rt.selfWake(duroxide.OrchestratorQueue, w.InstanceID())
	}
	rt.blockedMu.Lock()
	delete(rt.blockedTurns, instance) // the turn replayed cleanly
	rt.blockedMu.Unlock()
}

// poisonOrchestration fails an instance whose messages exceeded
// MaxAttempts (duroxide's fail_orchestration_as_poison).
func (rt *Runtime) poisonOrchestration(t *turn) {
	item := t.item
	rt.tel.poisoned(item.LockToken, queueOrchestrator)
	rt.log.Warn("orchestration message exceeded max attempts, marking as poison", "instance_id", item.Instance,
		"attempt", item.AttemptCount, "max_attempts", rt.opts.MaxAttempts)
	if item.HistoryError != nil {
		details := duroxide.PoisonError{AttemptCount: item.AttemptCount, MaxAttempts: rt.opts.MaxAttempts, Message: *item.HistoryError,
			MessageType: duroxide.PoisonMessageType{Kind: duroxide.PoisonFailedDeserialization, Instance: item.Instance,
				ExecutionID: item.ExecutionID, Error: *item.HistoryError}}
		ev := newEventAt(rt.now(), 99999, item.Instance, item.ExecutionID, nil, duroxide.OrchestrationFailed{Details: details})
		err := rt.ackWithRetry(t, duroxide.OrchestrationCommit{ExecutionID: item.ExecutionID, HistoryDelta: []duroxide.Event{ev},
			Metadata: duroxide.ExecutionMetadata{Status: ptr(duroxide.StatusFailed), Output: ptr(displayMessage(details)),
				OrchestrationName: ptr(item.OrchestrationName), OrchestrationVersion: ptr(item.Version)}})
		if err != nil {
			rt.log.Warn("committing the poisoned orchestration's failure failed", "instance_id", item.Instance, "error", err)
		}
		return
	}
	details := duroxide.PoisonError{AttemptCount: item.AttemptCount, MaxAttempts: rt.opts.MaxAttempts, Message: marshalItems(item.Messages),
		MessageType: duroxide.PoisonMessageType{Kind: duroxide.PoisonOrchestration, Instance: item.Instance, ExecutionID: item.ExecutionID}}
	t.readHistory(item.History)
	var started *duroxide.OrchestrationStarted
	if t.empty() {
		s := poisonedStart(item)
		t.delta = append(t.delta, newEventAt(rt.now(), 1, item.Instance, item.ExecutionID, nil, s))
		started = &s
	} else {
		started = t.started
	}
	var parent *parentLink
	if started != nil {
		parent = newParentLink(started.ParentInstance, started.ParentID, started.ParentExecutionID)
	}
	t.append(nil, duroxide.OrchestrationFailed{Details: details})
	oc := duroxide.OrchestrationCommit{ExecutionID: item.ExecutionID, HistoryDelta: t.delta,
		Metadata: duroxide.ExecutionMetadata{Status: ptr(duroxide.StatusFailed), Output: ptr(displayMessage(details)),
			OrchestrationName: ptr(item.OrchestrationName), OrchestrationVersion: ptr(item.Version)}}
	if parent != nil {
		reportTo, err := rt.parentExecution(parent)
		if err != nil {
			rt.parentUnreadable(t, err)
			return
		}
		oc.Metadata.ParentInstanceID = &parent.instance
		oc.OrchestratorItems = []duroxide.WorkItem{duroxide.SubOrchFailedItem{ParentInstance: parent.instance,
			ParentExecutionID: reportTo, ParentID: parent.id, Details: details}}
	}
	if err := rt.ackWithRetry(t, oc); err != nil {
		rt.log.Warn("committing the poisoned orchestration's failure failed", "instance_id", item.Instance, "error", err)
	} else if parent != nil {
		rt.selfWake(duroxide.OrchestratorQueue, parent.instance)
	}
}

// poisonedStart is the OrchestrationStarted of an execution poisoned
// before its first turn, from the start or continue-as-new item among its
// messages, with the parent link (and the parent execution) it carries.
func poisonedStart(item *duroxide.OrchestrationItem) duroxide.OrchestrationStarted {
	s := duroxide.OrchestrationStarted{Name: item.OrchestrationName, Version: item.Version}
	for _, m := range item.Messages {
		switch w := m.(type) {
		case duroxide.StartOrchestrationItem:
			s.Name, s.Input, s.ParentInstance, s.ParentID, s.ParentExecutionID = w.Orchestration, w.Input, w.ParentInstance, w.ParentID, w.ParentExecutionID
			return s
		case duroxide.ContinueAsNewItem:
			s.Name, s.Input, s.ParentInstance, s.ParentID, s.ParentExecutionID = w.Orchestration, w.Input, w.ParentInstance, w.ParentID, w.ParentExecutionID
			s.CarryForwardEvents = append([]duroxide.CarryForwardEvent{}, w.CarryForwardEvents...)
			return s
		}
	}
	return s
}

// marshalItems renders messages as a JSON array, as Rust's poison message
// does.
func marshalItems(messages []duroxide.WorkItem) string {
	parts := make([]string, 0, len(messages))
	for _, m := range messages {
		raw, err := duroxide.MarshalWorkItem(m)
		if err != nil {
			return ""
		}
		parts = append(parts, string(raw))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// wakeAt wakes the runtimes on this provider after d (a timer's fire
// time). The timers are stopped by Shutdown, so a day-long timer does not
// keep a stopped runtime's provider alive.
func (rt *Runtime) wakeAt(d time.Duration, instance string) {
	rt.timerMu.Lock()
	defer rt.timerMu.Unlock()
	if rt.stopping() {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		rt.timerMu.Lock()
		delete(rt.timers, t)
		rt.timerMu.Unlock()
		rt.wakeFor(duroxide.OrchestratorQueue, instance)
	})
	rt.timers[t] = struct{}{}
}

// stopTimers cancels the pending wake-ups.
func (rt *Runtime) stopTimers() {
	rt.timerMu.Lock()
	defer rt.timerMu.Unlock()
	for t := range rt.timers {
		t.Stop()
	}
	clear(rt.timers)
}

// variants names each work item's kind, for logs.
// logDropped logs the messages a terminal instance's drained batch
// drops. Completions of work the instance no longer waits for (a timer or
// an activity that lost a Select, a child's result after the parent ended)
// and cancellations of an instance that already ended are expected
// leftovers of an ended instance, logged at Debug; anything else (an
// external event, a queue message, a lifecycle request) was someone's
// intent that will now never be acted on, logged at Warn.
func (rt *Runtime) logDropped(instance string, executionID uint64, msgs []duroxide.WorkItem) {
	var stale, lost []duroxide.WorkItem
	for _, m := range msgs {
		if staleLeftover(m) {
			stale = append(stale, m)
		} else {
			lost = append(lost, m)
		}
	}
	if len(lost) > 0 {
		rt.log.Warn("messages for an instance that has ended; dropping them", "instance_id", instance,
			"execution_id", executionID, "messages", variants(lost))
	}
	if len(stale) > 0 {
		rt.log.Debug("completions for an instance that has ended; dropping them", "instance_id", instance,
			"execution_id", executionID, "messages", variants(stale))
	}
}

// staleLeftover reports whether m, delivered to an ended instance, is an
// expected leftover rather than lost intent (see logDropped).
func staleLeftover(m duroxide.WorkItem) bool {
	switch m.(type) {
	case duroxide.TimerFiredItem, duroxide.ActivityCompletedItem, duroxide.ActivityFailedItem,
		duroxide.SubOrchCompletedItem, duroxide.SubOrchFailedItem, duroxide.CancelInstanceItem:
		return true
	}
	return false
}

func variants(items []duroxide.WorkItem) []string {
	out := make([]string, len(items))
	for i, w := range items {
		out[i] = w.Variant()
	}
	return out
}
