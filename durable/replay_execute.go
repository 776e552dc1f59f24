package durable

import (
	"sort"
	"strconv"
	"strings"

	"github.com/duroxide-go/cdb/duroxide"
)

// maxQuiescenceIterations bounds the re-polls after the history walk.
const maxQuiescenceIterations = 100

// quiescenceMessage fails a turn whose code keeps subscribing past
// maxQuiescenceIterations re-polls. It is Rust's text, including the run
// of spaces its source line continuation left in the literal.
var quiescenceMessage = "quiescence loop exceeded 100 iterations —" + strings.Repeat(" ", 22) +
	"orchestration is emitting unbounded persistent event subscriptions"

// failed is the result of a turn that fails with d. The steps of stage 2
// return it (a non-nil *turnResult) to end the turn early.
func failed(d duroxide.ErrorDetails) *turnResult {
	return &turnResult{Kind: turnFailed, Details: d}
}

func nondeterminism(msg string) *turnResult { return failed(nondeterminismError(msg)) }

// executeOrchestration is stage 2: replay baseline+delta through the
// orchestration, then record what the code did beyond history.
func (e *replayEngine) executeOrchestration(handler OrchestrationFunc, input, name, version, workerID string) turnResult {
	if e.abortError != nil {
		return turnResult{Kind: turnFailed, Details: e.abortError}
	}
	working := e.finalHistory()
	for _, ev := range working {
		switch ev.Kind.(type) {
		case duroxide.OrchestrationCompleted, duroxide.OrchestrationFailed, duroxide.OrchestrationContinuedAsNew:
			return turnResult{Kind: turnContinue}
		}
	}
	if len(working) == 0 {
		return *failed(nondeterminismError("corrupted history: empty"))
	}
	started, ok := working[0].Kind.(duroxide.OrchestrationStarted)
	if !ok {
		return *failed(nondeterminismError("corrupted history: first event must be OrchestrationStarted"))
	}
	// Replay does not depend on the worker: the parameter is unused (Rust
	// keeps it for API compatibility only).
	_ = workerID
	if c, ok := cancelledBeforeItRan(working, e.persistedHistoryLen); ok {
		return turnResult{Kind: turnCancelled, Reason: c.Reason}
	}

	e.ctx = newOrchestrationContext(e.instance, e.executionID, name, version, e.now, e.logger)
	e.ctx.engine, e.ctx.limits, e.working = e, e.limits, working
	e.open, e.kinds, e.mustPoll = map[uint64]bool{}, map[uint64]scheduleKind{}, true
	defer e.ctx.sched.stopAll()
	for k, v := range e.kvSnapshot {
		put(&e.ctx.kv, k, v.Value)
		put(&e.ctx.kvUpdatedAt, k, v.LastUpdatedAtMs)
	}
	e.ctx.sched.main = e.ctx.sched.spawn(func() {
		out, err := handler(e.ctx, input)
		e.output, e.outErr, e.done = out, err, true
		// Everything the function still held is dropped with it.
		e.ctx.dropAllPending()
	})
	if e.persistedHistoryLen == 0 {
		e.ctx.isReplaying = false
	}
	if started.InitialCustomStatus != nil {
		s := *started.InitialCustomStatus
		e.ctx.customStatus = &s
	}
	e.replayedCode = true
	if abort := e.execute(working); abort != nil {
		return *abort
	}
	return e.finalize()
}

// cancelledBeforeItRan returns the cancellation that reached an
// execution in its very first turn (nothing persisted yet): the
// execution ends cancelled without its code being called, so a
// cancellation sent before a delayed start (StartOptions.StartAt) runs
// none of it. A later replay meets the execution's failure first, and
// the history (started, cancel requested, failed) is one duroxide writes
// for a cancelled execution.
func cancelledBeforeItRan(working []duroxide.Event, persisted int) (duroxide.OrchestrationCancelRequested, bool) {
	if persisted > 0 {
		return duroxide.OrchestrationCancelRequested{}, false
	}
	for _, ev := range working {
		if c, ok := ev.Kind.(duroxide.OrchestrationCancelRequested); ok {
			return c, true
		}
	}
	return duroxide.OrchestrationCancelRequested{}, false
}

func (e *replayEngine) execute(working []duroxide.Event) *turnResult {
	for i, ev := range working {
		if i >= e.persistedHistoryLen {
			e.ctx.isReplaying = false
		}
		if e.mustPoll {
			e.cursor = i
			if abort := e.poll(); abort != nil {
				return abort
			}
			if e.done {
				break
			}
			e.mustPoll = false
		}
		if abort := e.apply(ev); abort != nil {
			return abort
		}
	}
	e.ctx.isReplaying = false
	e.cursor = len(working)
	if e.mustPoll && !e.done {
		if abort := e.poll(); abort != nil {
			return abort
		}
	}
	for _, id := range e.ctx.cancelledScheduleIDs(kindQueueDequeue) {
		e.ctx.markQueueSubscriptionCancelled(id)
	}
	e.convertEmitted(e.emitted)
	e.emitted = nil
	return e.quiesce()
}

// poll runs the orchestration's coroutines until all are blocked and
// collects the actions they emitted (one Rust poll).
func (e *replayEngine) poll() *turnResult {
	e.ctx.sched.poll()
	e.emitted = append(e.emitted, e.ctx.drainEmitted()...)
	if msg := e.ctx.sched.panicMsg; msg != nil {
		return failed(duroxide.ApplicationError{
			Kind:    duroxide.AppErrorKind{Type: duroxide.AppPanicked},
			Message: *msg,
		})
	}
	return nil
}

// quiesce re-polls while new actions keep appearing (a subscription bound
// this turn may resolve at once from an event already delivered).
func (e *replayEngine) quiesce() *turnResult {
	iter := 0
	for !e.done && len(e.actions) > 0 && iter < maxQuiescenceIterations {
		iter++
		before := len(e.actions)
		if abort := e.poll(); abort != nil {
			return abort
		}
		e.convertEmitted(e.emitted)
		e.emitted = nil
		if len(e.actions) == before {
			break
		}
	}
	if iter >= maxQuiescenceIterations {
		return failed(duroxide.InfrastructureError{Operation: "quiescence_loop", Message: quiescenceMessage})
	}
	return nil
}

// finalize picks the outcome: cancel > continue-as-new > output.
func (e *replayEngine) finalize() turnResult {
	if c, ok := e.cancelEvent(); ok {
		return turnResult{Kind: turnCancelled, Reason: c.Reason}
	}
	for _, a := range e.actions {
		if can, ok := a.(actionContinueAsNew); ok {
			return turnResult{Kind: turnContinueAsNew, Input: can.Input, Version: can.Version}
		}
	}
	if abort := e.collectCancelled(); abort != nil {
		return *abort
	}
	if !e.done {
		return turnResult{Kind: turnContinue}
	}
	if e.outErr != nil {
		return turnResult{Kind: turnFailed, Details: duroxide.ApplicationError{
			Kind:    duroxide.AppErrorKind{Type: duroxide.AppOrchestrationFailed},
			Message: e.outErr.Error(),
		}}
	}
	return turnResult{Kind: turnCompleted, Output: e.output}
}

// convertEmitted gives each new action the next event id, binds its future
// to that id, and records its history event (ContinueAsNew uses an id but
// records no event, as in Rust).
func (e *replayEngine) convertEmitted(list []emittedAction) {
	ctx := e.ctx
	for _, em := range list {
		id := e.nextEventID
		e.nextEventID++
		ctx.bindToken(em.token, id)
		a := withEventID(em.act, id, e.executionID)
		switch v := a.(type) {
		case actionStartSubOrchestration:
			ctx.bindSubOrchestrationInstance(em.token, v.Instance)
		case actionWaitExternal:
			ctx.bindExternalSubscription(id, v.Name)
		case actionDequeueEvent:
			ctx.bindQueueSubscription(id, v.Name)
		}
		if kind := actionEventKind(a); kind != nil {
			e.delta = append(e.delta, e.newEvent(id, nil, kind))
		}
		e.actions = append(e.actions, a)
	}
}

// withEventID sets the action's scheduling event id and turns a pending
// child id into an automatic one (autoChildID). Rust:
// update_action_event_id.
func withEventID(a action, id, executionID uint64) action {
	switch v := a.(type) {
	case actionCallActivity:
		v.SchedulingEventID = id
		return v
	case actionCreateTimer:
		v.SchedulingEventID = id
		return v
	case actionWaitExternal:
		v.SchedulingEventID = id
		return v
	case actionDequeueEvent:
		v.SchedulingEventID = id
		return v
	case actionStartSubOrchestration:
		v.SchedulingEventID = id
		if strings.HasPrefix(v.Instance, subOrchPendingPrefix) {
			v.Instance = autoChildID(executionID, id)
		}
		return v
	case actionStartOrchestrationDetached:
		v.SchedulingEventID = id
		return v
	}
	return a
}

// autoChildID is the id of a child started without an explicit one, as
// recorded in SubOrchestrationScheduled (the dispatcher prefixes it with
// the parent's id: childInstanceID). The first execution uses Rust's
// "sub::{event_id}", so ordinary histories match Rust's; later executions
// use "sub::{execution_id}::{event_id}". Event ids restart at 1 in every
// execution, so without the execution id an eternal orchestration's next
// execution would reuse its previous child's id, and that child, already
// finished, would drop the start (Rust 0.1.29 has this defect). The id
// depends only on the execution and the event id, so replay rebuilds it.
func autoChildID(executionID, eventID uint64) string {
	if executionID <= initialExecutionID {
		return subOrchAutoPrefix + strconv.FormatUint(eventID, 10)
	}
	return subOrchAutoPrefix + strconv.FormatUint(executionID, 10) + "::" + strconv.FormatUint(eventID, 10)
}

// actionEventKind is the history event an action records (nil for
// ContinueAsNew, which records none). Rust: action_to_event.
func actionEventKind(a action) duroxide.EventKind {
	switch v := a.(type) {
	case actionCallActivity:
		return duroxide.ActivityScheduled{Name: v.Name, Input: v.Input, SessionID: v.SessionID, Tag: v.Tag}
	case actionCreateTimer:
		return duroxide.TimerCreated{FireAtMs: v.FireAtMs}
	case actionWaitExternal:
		return duroxide.ExternalSubscribed{Name: v.Name}
	case actionDequeueEvent:
		return duroxide.ExternalSubscribedPersistent{Name: v.Name}
	case actionStartSubOrchestration:
		return duroxide.SubOrchestrationScheduled{Name: v.Name, Instance: v.Instance, Input: v.Input}
	case actionStartOrchestrationDetached:
		return duroxide.OrchestrationChained{Name: v.Name, Instance: v.Instance, Input: v.Input}
	case actionUpdateCustomStatus:
		return duroxide.CustomStatusUpdated{Status: v.Status}
	case actionSetKeyValue:
		return duroxide.KeyValueSet{Key: v.Key, Value: v.Value, LastUpdatedAtMs: v.LastUpdatedAtMs}
	case actionClearKeyValue:
		return duroxide.KeyValueCleared{Key: v.Key}
	case actionClearKeyValues:
		return duroxide.KeyValuesCleared{}
	}
	return nil
}

// formatIDSet renders a set of ids for a cancellation mismatch message,
// sorted, as "{1, 2}" (Rust's HashSet Debug).
func formatIDSet(ids map[uint64]bool) string {
	list := make([]uint64, 0, len(ids))
	for id := range ids {
		list = append(list, id)
	}
	sort.Slice(list, func(i, j int) bool { return list[i] < list[j] })
	parts := make([]string, len(list))
	for i, id := range list {
		parts[i] = strconv.FormatUint(id, 10)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
