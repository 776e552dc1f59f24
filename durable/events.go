package durable

import (
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// Helpers on history events that more than one layer uses: the dispatcher
// stamps the events it writes beside the engine's, and both the dispatcher
// and the client read a history's failures.

// newEventAt stamps an event the host writes (outside the engine) at now.
func newEventAt(now time.Time, id uint64, instance string, executionID uint64, source *uint64, kind duroxide.EventKind) duroxide.Event {
	return duroxide.Event{
		EventID: id, SourceEventID: source, InstanceID: instance, ExecutionID: executionID,
		TimestampMs: uint64(max(now.UnixMilli(), 0)), DuroxideVersion: DuroxideVersion, Kind: kind,
	}
}

// poisoned reports whether a failure in history is a poison failure.
func poisoned(history []duroxide.Event) bool {
	for _, e := range history {
		var d duroxide.ErrorDetails
		switch k := e.Kind.(type) {
		case duroxide.ActivityFailed:
			d = k.Details
		case duroxide.SubOrchestrationFailed:
			d = k.Details
		case duroxide.OrchestrationFailed:
			d = k.Details
		default:
			continue
		}
		if _, ok := poisonOf(d); ok {
			return true
		}
	}
	return false
}

// poisonOf returns details as a PoisonError.
func poisonOf(details duroxide.ErrorDetails) (duroxide.PoisonError, bool) {
	switch v := details.(type) {
	case duroxide.PoisonError:
		return v, true
	case *duroxide.PoisonError:
		if v != nil {
			return *v, true
		}
	}
	return duroxide.PoisonError{}, false
}

// terminalFailure returns the details of history's OrchestrationFailed.
func terminalFailure(history []duroxide.Event) (duroxide.ErrorDetails, bool) {
	for _, e := range history {
		if f, ok := e.Kind.(duroxide.OrchestrationFailed); ok {
			return f.Details, true
		}
	}
	return nil, false
}
