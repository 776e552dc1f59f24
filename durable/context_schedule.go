package durable

import (
	"errors"
	"strconv"
	"time"
)

// Reserved names of the system activities the runtime registers; the
// orchestration helpers that need the outside world (GUIDs, the clock,
// another instance's KV) schedule them so their results are recorded in
// history and replay identically.
const (
	syscallPrefix   = "__duroxide_syscall:"
	SyscallNewGUID  = "__duroxide_syscall:new_guid"
	SyscallUTCNowMs = "__duroxide_syscall:utc_now_ms"
	SyscallKVValue  = "__duroxide_syscall:get_kv_value"
)

// Sub-orchestration instance id conventions (Rust SUB_ORCH_AUTO_PREFIX and
// SUB_ORCH_PENDING_PREFIX): an auto-generated child id is "sub::{event_id}"
// in history and "{parent}::sub::{event_id}" as an instance.
const (
	subOrchAutoPrefix    = "sub::"
	subOrchPendingPrefix = "sub::pending_"
)

// ScheduleActivity schedules the activity name with a raw input and returns
// its future. The result is the activity's raw output; a failure is a
// *TaskFailedError.
func (c *OrchestrationContext) ScheduleActivity(name, input string) *Future[string] {
	return c.scheduleActivity(name, input, nil)
}

// ScheduleActivityOnSession is ScheduleActivity routed to the worker that
// owns sessionID, so consecutive activities of a session share a process.
func (c *OrchestrationContext) ScheduleActivityOnSession(name, input, sessionID string) *Future[string] {
	return c.scheduleActivity(name, input, &sessionID)
}

func (c *OrchestrationContext) scheduleActivity(name, input string, sessionID *string) *Future[string] {
	token := c.emit(actionCallActivity{Name: name, Input: input, SessionID: sessionID})
	st := c.newFuture(token, kindActivity, func() (any, error, bool) {
		r, ok := c.results[token]
		if !ok {
			return nil, nil, false
		}
		switch r.kind {
		case activityOK:
			return r.value, nil, true
		case activityErr:
			return "", &TaskFailedError{Message: r.value}, true
		}
		return nil, nil, false
	})
	return stringFuture(st)
}

// ScheduleTimer starts a durable timer that fires after d. Await it for a
// durable sleep, or race it with Select for a timeout.
func (c *OrchestrationContext) ScheduleTimer(d time.Duration) *Future[struct{}] {
	delay := uint64(0)
	if d > 0 {
		delay = uint64(d / time.Millisecond)
	}
	fireAt := c.nowMs() + delay
	if fireAt < delay { // saturate like Rust's saturating_add
		fireAt = ^uint64(0)
	}
	token := c.emit(actionCreateTimer{FireAtMs: fireAt})
	st := c.newFuture(token, kindTimer, func() (any, error, bool) {
		r, ok := c.results[token]
		if ok && r.kind == timerFired {
			return struct{}{}, nil, true
		}
		return nil, nil, false
	})
	return &Future[struct{}]{st: st, convert: func(any, error) (struct{}, error) { return struct{}{}, nil }}
}

// ScheduleWait waits for the external event name (raised with the
// client's RaiseEvent). Subscriptions and arrivals of a name are matched
// in order: the n-th wait gets the n-th event raised after it subscribed.
//
// An event is dropped when it arrives while no ScheduleWait of its name is
// pending: raised before the orchestration reached this call (even before
// its first turn ran), or between two waits. It stays in history, but no
// wait ever receives it (duroxide's subscription semantics). For a signal
// that may come early, such as an approval, use the persistent queue
// instead: DequeueEvent here, EnqueueEvent on the client; it keeps
// messages until they are dequeued.
func (c *OrchestrationContext) ScheduleWait(name string) *Future[string] {
	token := c.emit(actionWaitExternal{Name: name})
	st := c.newFuture(token, kindExternalWait, func() (any, error, bool) {
		id, ok := c.boundScheduleID(token)
		if !ok {
			return nil, nil, false
		}
		data, ok := c.externalEvent(id)
		return data, nil, ok
	})
	return stringFuture(st)
}

// DequeueEvent takes the next message of the persistent queue (enqueued
// with the client's EnqueueEvent). Unlike ScheduleWait, messages that
// arrive before anyone waits are kept, matched first in, first out, and
// carried across continue-as-new.
func (c *OrchestrationContext) DequeueEvent(queue string) *Future[string] {
	token := c.emit(actionDequeueEvent{Name: queue})
	st := c.newFuture(token, kindQueueDequeue, func() (any, error, bool) {
		id, ok := c.boundScheduleID(token)
		if !ok {
			return nil, nil, false
		}
		data, ok := c.queueMessage(id)
		return data, nil, ok
	})
	return stringFuture(st)
}

// ScheduleSubOrchestration starts the child orchestration name with an
// auto-generated instance id ("{parent}::sub::{event_id}") and returns its
// future.
func (c *OrchestrationContext) ScheduleSubOrchestration(name, input string) *Future[string] {
	return c.scheduleSubOrchestration(name, nil, nil, input)
}

// ScheduleSubOrchestrationWithID starts a child under an explicit instance
// id, used exactly as given.
func (c *OrchestrationContext) ScheduleSubOrchestrationWithID(name, instance, input string) *Future[string] {
	return c.scheduleSubOrchestration(name, nil, &instance, input)
}

// ScheduleSubOrchestrationVersioned starts a child pinned to version; an
// empty version means the registry's policy.
func (c *OrchestrationContext) ScheduleSubOrchestrationVersioned(name, version, input string) *Future[string] {
	return c.scheduleSubOrchestration(name, optString(version), nil, input)
}

// ScheduleSubOrchestrationVersionedWithID combines a pinned version (empty
// = policy) with an explicit instance id.
func (c *OrchestrationContext) ScheduleSubOrchestrationVersionedWithID(name, version, instance, input string) *Future[string] {
	return c.scheduleSubOrchestration(name, optString(version), &instance, input)
}

func (c *OrchestrationContext) scheduleSubOrchestration(name string, version, instance *string, input string) *Future[string] {
	inst := ""
	if instance != nil {
		inst = *instance
	} else {
		inst = subOrchPendingPrefix + strconv.FormatUint(c.nextToken+1, 10)
	}
	token := c.emit(actionStartSubOrchestration{Name: name, Version: version, Instance: inst, Input: input})
	st := c.newFuture(token, kindSubOrchestration, func() (any, error, bool) {
		r, ok := c.results[token]
		if !ok {
			return nil, nil, false
		}
		switch r.kind {
		case subOrchOK:
			return r.value, nil, true
		case subOrchErr:
			return "", &TaskFailedError{Message: r.value}, true
		}
		return nil, nil, false
	})
	return stringFuture(st)
}

// ScheduleOrchestration starts an independent orchestration under instance
// (fire and forget): nothing comes back and it outlives this one.
func (c *OrchestrationContext) ScheduleOrchestration(name, instance, input string) {
	c.emit(actionStartOrchestrationDetached{Name: name, Instance: instance, Input: input})
}

// ScheduleOrchestrationVersioned is ScheduleOrchestration pinned to
// version; an empty version means the registry's policy.
func (c *OrchestrationContext) ScheduleOrchestrationVersioned(name, version, instance, input string) {
	c.emit(actionStartOrchestrationDetached{Name: name, Version: optString(version), Instance: instance, Input: input})
}

// ContinueAsNew ends this execution and starts the next one of the same
// instance with input (history is reset; unconsumed queue messages and the
// custom status are carried over). It never returns: write
// `return "", ctx.ContinueAsNew(next)`.
func (c *OrchestrationContext) ContinueAsNew(input string) error {
	c.emit(actionContinueAsNew{Input: input})
	c.sched.block(func() bool { return false })
	panic("unreachable")
}

// ContinueAsNewVersioned is ContinueAsNew that also moves the instance to
// version (empty = the registry's policy).
func (c *OrchestrationContext) ContinueAsNewVersioned(version, input string) error {
	c.emit(actionContinueAsNew{Input: input, Version: optString(version)})
	c.sched.block(func() bool { return false })
	panic("unreachable")
}

// NewGUID returns a random UUID (version 4) recorded in history, so replays
// see the same value.
func (c *OrchestrationContext) NewGUID() *Future[string] {
	return c.ScheduleActivity(SyscallNewGUID, "")
}

// UTCNow returns the current time as recorded in history (millisecond
// precision, UTC), so replays see the same value. Rust: utc_now.
func (c *OrchestrationContext) UTCNow() *Future[time.Time] {
	return mapFuture(c.ScheduleActivity(SyscallUTCNowMs, ""), func(s string, err error) (time.Time, error) {
		if err != nil {
			return time.Time{}, err
		}
		ms, perr := strconv.ParseUint(s, 10, 64)
		if perr != nil {
			return time.Time{}, &TaskFailedError{Message: rustParseIntError(s, perr)}
		}
		return time.UnixMilli(int64(ms)).UTC(), nil
	})
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// rustParseIntError is the text of Rust's ParseIntError for a u64 parse,
// which is what Rust's utc_now reports for a malformed recorded value.
func rustParseIntError(s string, err error) string {
	switch {
	case s == "":
		return "cannot parse integer from empty string"
	case errors.Is(err, strconv.ErrRange):
		return "number too large to fit in target type"
	}
	return "invalid digit found in string"
}
