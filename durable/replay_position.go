package durable

import "github.com/duroxide-go/cdb/duroxide"

// The code's position in the history it replays (replayEngine.cursor), as
// ctx.Patched and ctx.HistorySize read it.

// recordedAtPosition skips the events that will match the actions emitted
// and not matched yet (the engine's and pending more in the context) and
// returns the next event that will match an action.
func (e *replayEngine) recordedAtPosition(pending int) (duroxide.EventKind, bool) {
	pending += len(e.emitted)
	for _, ev := range e.working[e.cursor:] {
		if !matchesAction(ev.Kind) {
			continue
		}
		if pending == 0 {
			return ev.Kind, true
		}
		pending--
	}
	return nil, false
}

// matchesAction reports whether replay matches kind to an emitted action
// (apply: matchSchedule, popMetadata, OrchestrationChained).
func matchesAction(kind duroxide.EventKind) bool {
	switch kind.(type) {
	case duroxide.ActivityScheduled, duroxide.TimerCreated, duroxide.ExternalSubscribed,
		duroxide.ExternalSubscribedPersistent, duroxide.SubOrchestrationScheduled, duroxide.OrchestrationChained,
		duroxide.CustomStatusUpdated, duroxide.KeyValueSet, duroxide.KeyValueCleared, duroxide.KeyValuesCleared:
		return true
	}
	return false
}

// sizeAtCursor sums the events up to the last one before the code's
// position that delivered something to the code (its start, a
// completion, an event, a message), not the schedules after it. A fresh
// turn polls again once its schedules are written, and a dequeue of a
// message already delivered resolves there; replay resolves it right after
// applying its subscription, before the turn's other schedules: counting
// only up to the delivery, both answer the same. Sizes are summed once per
// event and turn (sizes holds the running totals).
func (e *replayEngine) sizeAtCursor() HistorySize {
	n := 0
	for i := min(e.cursor, len(e.working)) - 1; i >= 0; i-- {
		if deliversToCode(e.working[i].Kind) {
			n = i + 1
			break
		}
	}
	// The first poll runs before OrchestrationStarted is applied; it
	// counts, as the execution has it from the start.
	n = max(n, min(1, len(e.working)))
	for len(e.sizes) < n {
		i := len(e.sizes)
		prev := int64(0)
		if i > 0 {
			prev = e.sizes[i-1]
		}
		e.sizes = append(e.sizes, prev+int64(eventBytes(e.working[i])))
	}
	if n == 0 {
		return HistorySize{}
	}
	return HistorySize{Events: n, Bytes: e.sizes[n-1]}
}

// deliversToCode reports whether kind brings the code something from
// outside its own calls: the start, a result, an event, a message or a
// cancellation (never a schedule or metadata event it wrote itself).
func deliversToCode(kind duroxide.EventKind) bool {
	switch kind.(type) {
	case duroxide.OrchestrationStarted, duroxide.ActivityCompleted, duroxide.ActivityFailed, duroxide.TimerFired,
		duroxide.SubOrchestrationCompleted, duroxide.SubOrchestrationFailed, duroxide.ExternalEvent,
		duroxide.ExternalEventPersistent, duroxide.OrchestrationCancelRequested:
		return true
	}
	return false
}
