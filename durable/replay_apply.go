package durable

import (
	"fmt"

	"github.com/duroxide-go/cdb/duroxide"
)

// apply replays one history event into the context: it matches a schedule
// event to the action the code emitted and delivers a completion to its
// future; a non-nil result ends the turn (Rust's apply_history_event).
func (e *replayEngine) apply(ev duroxide.Event) *turnResult {
	ctx := e.ctx
	switch k := ev.Kind.(type) {
	case duroxide.OrchestrationStarted:
		if k.InitialCustomStatus != nil {
			s := *k.InitialCustomStatus
			ctx.customStatus = &s
		}
	case duroxide.CustomStatusUpdated:
		return e.popMetadata(ev.Kind, "custom status mismatch")
	case duroxide.KeyValueSet:
		return e.popMetadata(ev.Kind, "kv set mismatch")
	case duroxide.KeyValueCleared:
		return e.popMetadata(ev.Kind, "kv clear mismatch")
	case duroxide.KeyValuesCleared:
		return e.popMetadata(ev.Kind, "kv clear_all mismatch")

	case duroxide.ActivityScheduled:
		_, abort := e.matchSchedule(ev, kindActivity)
		return abort
	case duroxide.TimerCreated:
		_, abort := e.matchSchedule(ev, kindTimer)
		return abort
	case duroxide.ExternalSubscribed:
		if _, abort := e.matchSchedule(ev, kindExternalWait); abort != nil {
			return abort
		}
		ctx.bindExternalSubscription(ev.EventID, k.Name)
	case duroxide.ExternalSubscribedPersistent:
		if _, abort := e.matchSchedule(ev, kindQueueDequeue); abort != nil {
			return abort
		}
		ctx.bindQueueSubscription(ev.EventID, k.Name)
		e.mustPoll = true
	case duroxide.SubOrchestrationScheduled:
		token, abort := e.matchSchedule(ev, kindSubOrchestration)
		if abort != nil {
			return abort
		}
		ctx.bindSubOrchestrationInstance(token, k.Instance)
	case duroxide.OrchestrationChained:
		if len(e.emitted) == 0 {
			return nondeterminism("history OrchestrationChained but no emitted action")
		}
		em := e.emitted[0]
		e.emitted = e.emitted[1:]
		if !actionMatchesEvent(em.act, ev.Kind) {
			return nondeterminism(fmt.Sprintf("schedule mismatch: action=%s vs event=%s", debugAction(em.act), debugEventKind(ev.Kind)))
		}
		ctx.bindToken(em.token, ev.EventID)

	case duroxide.ActivityCompleted:
		return e.complete(ev, true, completion{kind: activityOK, value: k.Result})
	case duroxide.ActivityFailed:
		return e.complete(ev, false, completion{kind: activityErr, value: displayMessage(k.Details)})
	case duroxide.TimerFired:
		return e.complete(ev, false, completion{kind: timerFired})
	case duroxide.SubOrchestrationCompleted:
		return e.complete(ev, false, completion{kind: subOrchOK, value: k.Result})
	case duroxide.SubOrchestrationFailed:
		return e.complete(ev, false, completion{kind: subOrchErr, value: displayMessage(k.Details)})

	case duroxide.ExternalSubscribedCancelled:
		if ev.SourceEventID != nil {
			ctx.markExternalSubscriptionCancelled(*ev.SourceEventID)
		}
	case duroxide.ExternalSubscribedPersistentCancelled:
		if ev.SourceEventID != nil {
			ctx.markQueueSubscriptionCancelled(*ev.SourceEventID)
		}
	case duroxide.ExternalEvent:
		if ctx.hasPendingSubscriptionSlot(k.Name) {
			ctx.deliverExternalEvent(k.Name, k.Data)
			e.mustPoll = true
		} else {
			e.log().Warn("skipping ExternalEvent delivery: no pending subscription slot (event remains in history for audit)",
				"instance", e.instance, "event_name", k.Name)
		}
	case duroxide.ExternalEventPersistent:
		ctx.deliverQueueMessage(k.Name, k.Data)
		e.mustPoll = true
	}
	// ActivityCancelRequested, SubOrchestrationCancelRequested,
	// OrchestrationCancelRequested and terminal events change nothing here.
	return nil
}

// popMetadata consumes the custom-status or KV action the code emitted for
// a metadata event; none left is fine (a carried-over initial status).
func (e *replayEngine) popMetadata(kind duroxide.EventKind, what string) *turnResult {
	if len(e.emitted) == 0 {
		return nil
	}
	em := e.emitted[0]
	e.emitted = e.emitted[1:]
	if !actionMatchesEvent(em.act, kind) {
		return nondeterminism(fmt.Sprintf("%s: action=%s vs event=%s", what, debugAction(em.act), debugEventKind(kind)))
	}
	return nil
}

// matchSchedule pops the oldest emitted action, checks it against the
// schedule event and binds its future to the event id.
func (e *replayEngine) matchSchedule(ev duroxide.Event, kind scheduleKind) (uint64, *turnResult) {
	if len(e.emitted) == 0 {
		return 0, nondeterminism("history schedule but no emitted action")
	}
	em := e.emitted[0]
	e.emitted = e.emitted[1:]
	if !actionMatchesEvent(em.act, ev.Kind) {
		return 0, nondeterminism(fmt.Sprintf("schedule mismatch: action=%s vs event=%s", debugAction(em.act), debugEventKind(ev.Kind)))
	}
	e.ctx.bindToken(em.token, ev.EventID)
	e.open[ev.EventID] = true
	e.kinds[ev.EventID] = kind
	return em.token, nil
}

// complete delivers a completion to its open schedule. Only an activity
// completion checks the schedule's kind: the check is Rust's, and a
// stricter one would fail histories Rust replays.
func (e *replayEngine) complete(ev duroxide.Event, checkActivity bool, c completion) *turnResult {
	if ev.SourceEventID == nil {
		return nil
	}
	id := *ev.SourceEventID
	if !e.open[id] {
		return nondeterminism("completion without open schedule")
	}
	if checkActivity && e.kinds[id] != kindActivity {
		return nondeterminism("completion kind mismatch: expected activity")
	}
	e.ctx.deliverResult(id, c)
	delete(e.open, id)
	e.mustPoll = true
	return nil
}

// actionMatchesEvent reports whether the action the code emitted is the
// one the history's schedule event recorded: activities by name, input,
// session and tag; timers by position; waits by name; children by name and
// input; detached starts by name, instance and input; custom status by
// kind; KV by key and value (not timestamp). Rust:
// action_matches_event_kind.
func actionMatchesEvent(a action, kind duroxide.EventKind) bool {
	switch v := a.(type) {
	case actionCallActivity:
		k, ok := kind.(duroxide.ActivityScheduled)
		return ok && v.Name == k.Name && v.Input == k.Input && eqOpt(v.SessionID, k.SessionID) && eqOpt(v.Tag, k.Tag)
	case actionCreateTimer:
		_, ok := kind.(duroxide.TimerCreated)
		return ok
	case actionWaitExternal:
		k, ok := kind.(duroxide.ExternalSubscribed)
		return ok && v.Name == k.Name
	case actionDequeueEvent:
		k, ok := kind.(duroxide.ExternalSubscribedPersistent)
		return ok && v.Name == k.Name
	case actionStartSubOrchestration:
		k, ok := kind.(duroxide.SubOrchestrationScheduled)
		return ok && v.Name == k.Name && v.Input == k.Input
	case actionStartOrchestrationDetached:
		k, ok := kind.(duroxide.OrchestrationChained)
		return ok && v.Name == k.Name && v.Instance == k.Instance && v.Input == k.Input
	case actionUpdateCustomStatus:
		_, ok := kind.(duroxide.CustomStatusUpdated)
		return ok
	case actionSetKeyValue:
		k, ok := kind.(duroxide.KeyValueSet)
		return ok && v.Key == k.Key && v.Value == k.Value
	case actionClearKeyValue:
		k, ok := kind.(duroxide.KeyValueCleared)
		return ok && v.Key == k.Key
	case actionClearKeyValues:
		_, ok := kind.(duroxide.KeyValuesCleared)
		return ok
	}
	return false
}

func eqOpt(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
