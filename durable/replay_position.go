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

// sizeAtCursor sums the events before the code's position. The first
// poll runs before OrchestrationStarted is applied; it counts, as the
// execution has it from the start. Sizes are summed once per event and
// turn (sizes holds the running totals).
func (e *replayEngine) sizeAtCursor() HistorySize {
	n := max(min(e.cursor, len(e.working)), min(1, len(e.working)))
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
