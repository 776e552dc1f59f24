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
	syscallPrefix   = ReservedActivityPrefix
	SyscallNewGUID  = "__duroxide_syscall:new_guid"
	SyscallUTCNowMs = "__duroxide_syscall:utc_now_ms"
	SyscallKVValue  = "__duroxide_syscall:get_kv_value"
	// SyscallPatch is the marker Patched records; its input and result are
	// the change id.
	SyscallPatch = "__duroxide_syscall:patch"
)

// Sub-orchestration instance id conventions (Rust SUB_ORCH_AUTO_PREFIX and
// SUB_ORCH_PENDING_PREFIX): an auto-generated child id is "sub::{event_id}"
// in history and "{parent}::sub::{event_id}" as an instance.
const (
	subOrchAutoPrefix    = "sub::"
	subOrchPendingPrefix = "sub::pending_"
)

// scheduleActivity emits the activity call and returns its raw future; an
// empty session or tag means none.
func (c *OrchestrationContext) scheduleActivity(name, input, session, tag string) *Future[string] {
	token := c.emit(actionCallActivity{Name: name, Input: input, SessionID: optString(session), Tag: optString(tag)})
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

// scheduleTimer emits a timer that fires d after the orchestration's
// current time.
func (c *OrchestrationContext) scheduleTimer(d time.Duration) *Future[struct{}] {
	delay := uint64(0)
	if d > 0 {
		delay = uint64(d / time.Millisecond)
	}
	fireAt := c.nowMs() + delay
	if fireAt < delay {
		// Overflow: saturate at the latest time instead of wrapping (Rust's
		// saturating_add).
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

// scheduleWait emits the subscription to the external event name.
func (c *OrchestrationContext) scheduleWait(name string) *Future[string] {
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

// dequeueEvent emits the dequeue of the next message of queue.
func (c *OrchestrationContext) dequeueEvent(queue string) *Future[string] {
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

// scheduleSubOrchestration emits the start of a child; a nil instance
// means an auto-generated id, bound to the scheduling event id.
func (c *OrchestrationContext) scheduleSubOrchestration(name string, version, instance *string, input string, limits timeouts) *Future[string] {
	inst := ""
	if instance != nil {
		inst = *instance
	} else {
		inst = subOrchPendingPrefix + strconv.FormatUint(c.nextToken+1, 10)
	}
	token := c.emit(actionStartSubOrchestration{Name: name, Version: version, Instance: inst, Input: input, Timeouts: limits})
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

// startDetached emits the start of an independent orchestration.
func (c *OrchestrationContext) startDetached(name string, version *string, instance, input string) {
	c.emit(actionStartOrchestrationDetached{Name: name, Version: version, Instance: instance, Input: input})
}

// continueAsNew emits the continue-as-new and parks the calling coroutine
// for good: the turn ends with it.
func (c *OrchestrationContext) continueAsNew(input string, version *string) error {
	c.emit(actionContinueAsNew{Input: input, Version: version})
	c.sched.block(func() bool { return false })
	panic("unreachable")
}

// NewGUID returns a random UUID (version 4) recorded in history, so replays
// see the same value.
func (c *OrchestrationContext) NewGUID() *Future[string] {
	return c.scheduleActivity(SyscallNewGUID, "", "", "")
}

// UTCNow returns the current time as recorded in history (millisecond
// precision, UTC), so replays see the same value. Rust: utc_now.
func (c *OrchestrationContext) UTCNow() *Future[time.Time] {
	return mapFuture(c.scheduleActivity(SyscallUTCNowMs, "", "", ""), func(s string, err error) (time.Time, error) {
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

// rustParseIntError is the message UTCNow fails with when the recorded
// time is not a u64, worded as Rust's ParseIntError so the failure reads as
// Rust's utc_now reports it.
func rustParseIntError(s string, err error) string {
	switch {
	case s == "":
		return "cannot parse integer from empty string"
	case errors.Is(err, strconv.ErrRange):
		return "number too large to fit in target type"
	}
	return "invalid digit found in string"
}
