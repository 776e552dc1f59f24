package durable

import (
	"fmt"
	"log/slog"

	"github.com/duroxide-go/cdb/duroxide"
)

// Stage 1 (prepCompletions) turns the messages of a fetched orchestration
// item into events appended to this turn's delta; stage 2
// (executeOrchestration, replay_run.go) replays baseline+delta through the
// orchestration code. Both follow Rust's replay_engine.rs step by step, so
// event ids, source ids, order and error texts are Rust's.

// newEvent builds an event stamped like Rust's Event::with_event_id: now,
// and duroxide_version DuroxideVersion.
func (e *replayEngine) newEvent(id uint64, source *uint64, kind duroxide.EventKind) duroxide.Event {
	ms := e.now().UnixMilli()
	if ms < 0 {
		ms = 0
	}
	return duroxide.Event{
		EventID:         id,
		SourceEventID:   source,
		InstanceID:      e.instance,
		ExecutionID:     e.executionID,
		TimestampMs:     uint64(ms),
		DuroxideVersion: DuroxideVersion,
		Kind:            kind,
	}
}

// appendEvent gives kind the next event id and appends it to the delta.
func (e *replayEngine) appendEvent(source *uint64, kind duroxide.EventKind) {
	id := e.nextEventID
	e.nextEventID++
	e.delta = append(e.delta, e.newEvent(id, source, kind))
}

func (e *replayEngine) log() *slog.Logger {
	if e.logger != nil {
		return e.logger
	}
	return slog.Default()
}

func u64p(v uint64) *uint64 { return &v }

// prepCompletions is stage 1. Each message, in order, is dropped (another
// execution, or a completion already in history or in this delta), checked
// against its schedule (a mismatch aborts the turn with a nondeterminism
// error), and converted to an event with the next event id. A failure with
// system error details is recorded and aborts the turn.
func (e *replayEngine) prepCompletions(msgs []duroxide.WorkItem) {
	for _, msg := range msgs {
		if !e.isForCurrentExecution(msg) {
			if e.hasContinueAsNewInHistory() {
				e.log().Warn("ignoring completion from previous execution", "instance", e.instance)
			} else {
				e.log().Warn("completion from different execution", "instance", e.instance)
			}
			continue
		}
		if e.isCompletionInHistory(msg, e.baselineHistory, false) {
			e.log().Warn("ignoring duplicate completion", "instance", e.instance)
			continue
		}
		if e.isCompletionInHistory(msg, e.delta, true) {
			e.log().Warn("dropping duplicate completion in current run", "instance", e.instance)
			continue
		}
		if err := e.checkCompletionSchedule(msg); err != nil {
			e.log().Warn("detected nondeterminism in completion batch", "instance", e.instance, "error", displayMessage(err))
			e.abortError = err
			continue
		}
		source, kind := e.messageEvent(msg)
		if kind != nil {
			e.appendEvent(source, kind)
		}
	}
}

// isForCurrentExecution: completions carry their execution id; external,
// queue and cancel messages apply to whichever execution is current.
func (e *replayEngine) isForCurrentExecution(msg duroxide.WorkItem) bool {
	switch m := msg.(type) {
	case duroxide.ActivityCompletedItem:
		return m.ExecutionID == e.executionID
	case duroxide.ActivityFailedItem:
		return m.ExecutionID == e.executionID
	case duroxide.TimerFiredItem:
		return m.ExecutionID == e.executionID
	case duroxide.SubOrchCompletedItem:
		return m.ParentExecutionID == e.executionID
	case duroxide.SubOrchFailedItem:
		return m.ParentExecutionID == e.executionID
	case duroxide.ExternalRaisedItem, duroxide.QueueMessageItem, duroxide.CancelInstanceItem:
		return true
	}
	return false
}

func (e *replayEngine) hasContinueAsNewInHistory() bool {
	for _, ev := range e.baselineHistory {
		if _, ok := ev.Kind.(duroxide.OrchestrationContinuedAsNew); ok {
			return true
		}
	}
	return false
}

// isCompletionInHistory reports whether events already hold the completion
// msg carries (same source id and kind). In the baseline Rust matches the
// exact kind (a Completed does not shadow a Failed); in the delta either
// outcome counts. External and queue events are never deduplicated.
func (e *replayEngine) isCompletionInHistory(msg duroxide.WorkItem, events []duroxide.Event, inDelta bool) bool {
	var id uint64
	var match func(duroxide.EventKind) bool
	switch m := msg.(type) {
	case duroxide.ActivityCompletedItem:
		id = m.ID
		match = func(k duroxide.EventKind) bool {
			_, c := k.(duroxide.ActivityCompleted)
			_, f := k.(duroxide.ActivityFailed)
			return c || (inDelta && f)
		}
	case duroxide.ActivityFailedItem:
		if !inDelta {
			return false // Rust's baseline check has no ActivityFailed arm
		}
		id = m.ID
		match = func(k duroxide.EventKind) bool {
			_, c := k.(duroxide.ActivityCompleted)
			_, f := k.(duroxide.ActivityFailed)
			return c || f
		}
	case duroxide.TimerFiredItem:
		id = m.ID
		match = func(k duroxide.EventKind) bool { _, ok := k.(duroxide.TimerFired); return ok }
	case duroxide.SubOrchCompletedItem:
		id = m.ParentID
		match = func(k duroxide.EventKind) bool {
			_, c := k.(duroxide.SubOrchestrationCompleted)
			_, f := k.(duroxide.SubOrchestrationFailed)
			return c || (inDelta && f)
		}
	case duroxide.SubOrchFailedItem:
		id = m.ParentID
		match = func(k duroxide.EventKind) bool {
			_, c := k.(duroxide.SubOrchestrationCompleted)
			_, f := k.(duroxide.SubOrchestrationFailed)
			return f || (inDelta && c)
		}
	default:
		return false
	}
	for _, ev := range events {
		if ev.SourceEventID != nil && *ev.SourceEventID == id && match(ev.Kind) {
			return true
		}
	}
	return false
}

// scheduleKindOf names the schedule event with the given id, as Rust's
// prep-stage nondeterminism check does ("" when there is none).
func (e *replayEngine) scheduleKindOf(id uint64) string {
	for _, evs := range [][]duroxide.Event{e.baselineHistory, e.delta} {
		for _, ev := range evs {
			if ev.EventID != id {
				continue
			}
			switch ev.Kind.(type) {
			case duroxide.ActivityScheduled:
				return "activity"
			case duroxide.TimerCreated:
				return "timer"
			case duroxide.SubOrchestrationScheduled:
				return "suborchestration"
			}
		}
	}
	return ""
}

// checkCompletionSchedule verifies a completion names a schedule of its
// kind (Rust's messages, word for word).
func (e *replayEngine) checkCompletionSchedule(msg duroxide.WorkItem) duroxide.ErrorDetails {
	var id uint64
	var want, missing string
	switch m := msg.(type) {
	case duroxide.ActivityCompletedItem:
		id, want, missing = m.ID, "activity", "no matching schedule for completion id=%d"
	case duroxide.ActivityFailedItem:
		id, want, missing = m.ID, "activity", "no matching schedule for completion id=%d"
	case duroxide.TimerFiredItem:
		id, want, missing = m.ID, "timer", "no matching schedule for timer id=%d"
	case duroxide.SubOrchCompletedItem:
		id, want, missing = m.ParentID, "suborchestration", "no matching schedule for sub-orchestration id=%d"
	case duroxide.SubOrchFailedItem:
		id, want, missing = m.ParentID, "suborchestration", "no matching schedule for sub-orchestration id=%d"
	default:
		return nil
	}
	switch got := e.scheduleKindOf(id); got {
	case want:
		return nil
	case "":
		return nondeterminismError(fmt.Sprintf(missing, id))
	default:
		return nondeterminismError(fmt.Sprintf("completion kind mismatch for id=%d, expected '%s', got '%s'", id, got, want))
	}
}

// messageEvent converts a message to the event it records (nil kind: none).
func (e *replayEngine) messageEvent(msg duroxide.WorkItem) (*uint64, duroxide.EventKind) {
	switch m := msg.(type) {
	case duroxide.ActivityCompletedItem:
		return u64p(m.ID), duroxide.ActivityCompleted{Result: m.Result}
	case duroxide.ActivityFailedItem:
		e.noteSystemError(m.Details)
		return u64p(m.ID), duroxide.ActivityFailed{Details: m.Details}
	case duroxide.TimerFiredItem:
		return u64p(m.ID), duroxide.TimerFired{FireAtMs: m.FireAtMs}
	case duroxide.ExternalRaisedItem:
		return nil, duroxide.ExternalEvent{Name: m.Name, Data: m.Data}
	case duroxide.QueueMessageItem:
		return nil, duroxide.ExternalEventPersistent{Name: m.Name, Data: m.Data}
	case duroxide.SubOrchCompletedItem:
		return u64p(m.ParentID), duroxide.SubOrchestrationCompleted{Result: m.Result}
	case duroxide.SubOrchFailedItem:
		e.noteSystemError(m.Details)
		return u64p(m.ParentID), duroxide.SubOrchestrationFailed{Details: m.Details}
	case duroxide.CancelInstanceItem:
		if e.baselineTerminated() || e.cancelRequested() {
			return nil, nil
		}
		return nil, duroxide.OrchestrationCancelRequested{Reason: m.Reason}
	}
	return nil, nil
}

// noteSystemError aborts the turn on Infrastructure, Configuration or
// Poison details (the first one wins); the event is still recorded.
func (e *replayEngine) noteSystemError(d duroxide.ErrorDetails) {
	if isSystemError(d) && e.abortError == nil {
		e.log().Warn("system error aborts turn", "instance", e.instance, "error", displayMessage(d))
		e.abortError = d
	}
}

func (e *replayEngine) baselineTerminated() bool {
	for _, ev := range e.baselineHistory {
		switch ev.Kind.(type) {
		case duroxide.OrchestrationCompleted, duroxide.OrchestrationFailed:
			return true
		}
	}
	return false
}

// cancelEvent returns the first OrchestrationCancelRequested of baseline
// or delta.
func (e *replayEngine) cancelEvent() (duroxide.OrchestrationCancelRequested, bool) {
	for _, evs := range [][]duroxide.Event{e.baselineHistory, e.delta} {
		for _, ev := range evs {
			if c, ok := ev.Kind.(duroxide.OrchestrationCancelRequested); ok {
				return c, true
			}
		}
	}
	return duroxide.OrchestrationCancelRequested{}, false
}

func (e *replayEngine) cancelRequested() bool {
	_, ok := e.cancelEvent()
	return ok
}
