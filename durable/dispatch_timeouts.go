package durable

import (
	"fmt"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// The runtime's side of the timeouts (timeouts.go): the timers it arms
// with an instance's first turn and judges when they fire.

// armTimeouts adds the timeout timers of the instance t starts (its
// start item's limits) to the commit: in the first turn of the first
// execution, so that they are stored with it and fire whichever runtime
// holds the instance then. The instance timer stays the only one: later
// executions inherit it (judgeTimeouts); the execution timer is armed
// again for each execution that continues this one as new when it fires.
func (t *turn) armTimeouts(now time.Time) {
	s, ok := t.start.(duroxide.StartOrchestrationItem)
	if !ok || (s.ExecutionTimeoutMs == nil && s.InstanceTimeoutMs == nil) {
		return
	}
	if ms := s.ExecutionTimeoutMs; ms != nil {
		t.orch = append(t.orch, t.timeoutTimer(duroxide.ExecutionTimeoutTimerID, now, *ms))
	}
	if ms := s.InstanceTimeoutMs; ms != nil {
		t.orch = append(t.orch, t.timeoutTimer(duroxide.InstanceTimeoutTimerID, now, *ms))
	}
}

func (t *turn) timeoutTimer(id uint64, from time.Time, ms uint64) duroxide.TimerFiredItem {
	return duroxide.TimerFiredItem{Instance: t.instance, ExecutionID: t.executionID, ID: id,
		FireAtMs: uint64(from.UnixMilli()) + ms, TimeoutMs: ptr(ms)}
}

// isTimeoutTimer reports whether m is one of the runtime's timeout timers.
func isTimeoutTimer(m duroxide.WorkItem) (duroxide.TimerFiredItem, bool) {
	tf, ok := m.(duroxide.TimerFiredItem)
	return tf, ok && (tf.ID == duroxide.ExecutionTimeoutTimerID || tf.ID == duroxide.InstanceTimeoutTimerID)
}

// judgeTimeouts takes the timeout timers out of t's completions, so the
// orchestration never sees them, and acts on each:
//
//   - one of t's execution, or an instance timer of an execution t's
//     continues as new, ends the instance: it becomes a cancellation
//     whose reason starts "timeout: ", so the execution ends as duroxide
//     ends a cancelled one (its activities and children cancelled, the
//     parent told) and its history stays duroxide's;
//   - an execution timer of an execution t's continues as new is armed
//     again for t's execution, from t's start, or ends it if that is
//     past too;
//   - anything else (a timer of an ended life of the id, restarted since)
//     is dropped.
//
// It returns false when the item was given back (the executions could
// not be read).
func (rt *Runtime) judgeTimeouts(t *turn) bool {
	kept := t.completions[:0:0]
	var reason string
	for _, m := range t.completions {
		tf, ok := isTimeoutTimer(m)
		if !ok {
			kept = append(kept, m)
			continue
		}
		ours := tf.ExecutionID == t.executionID
		if !ours {
			chained, err := rt.continuedAsNew(t, tf.ExecutionID)
			if err != nil {
				rt.log.Warn("reading the executions a timeout spans failed; abandoning the item", "instance_id", t.instance, "error", err)
				rt.abandon(duroxide.OrchestratorQueue, t.instance, t.item.LockToken, time.Second, false)
				return false
			}
			if !chained {
				rt.log.Debug("dropping the timeout of an ended life of the instance", "instance_id", t.instance,
					"timer_execution_id", tf.ExecutionID, "execution_id", t.executionID)
				continue
			}
		}
		if tf.ID == duroxide.ExecutionTimeoutTimerID && !ours && tf.TimeoutMs != nil {
			if next := t.timeoutTimer(tf.ID, t.executionStart(), *tf.TimeoutMs); time.UnixMilli(int64(next.FireAtMs)).After(t.clock()) {
				t.orch = append(t.orch, next)
				continue
			}
		}
		reason = timeoutReason(tf)
	}
	if reason != "" {
		kept = append(kept, duroxide.CancelInstanceItem{Instance: t.instance, Reason: reason})
	}
	t.completions = kept
	return true
}

// executionStart is when t's execution started: its OrchestrationStarted's
// time, or now for an execution this turn starts.
func (t *turn) executionStart() time.Time {
	for _, e := range t.history {
		if _, ok := e.Kind.(duroxide.OrchestrationStarted); ok {
			return time.UnixMilli(int64(e.TimestampMs))
		}
	}
	return t.clock()
}

// timeoutReason is the cancellation reason of a fired timeout timer.
func timeoutReason(tf duroxide.TimerFiredItem) string {
	scope := "instance"
	if tf.ID == duroxide.ExecutionTimeoutTimerID {
		scope = "execution"
	}
	limit := ""
	if tf.TimeoutMs != nil {
		limit = " of " + (time.Duration(*tf.TimeoutMs) * time.Millisecond).String()
	}
	return fmt.Sprintf("%s%s timeout%s exceeded", timeoutPrefix, scope, limit)
}
