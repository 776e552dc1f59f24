package ops

import (
	"fmt"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// Entry is one event of an execution's history as the tools show it.
type Entry struct {
	EventID uint64 `json:"event_id"`
	// At is when the event was written; Offset is At minus the
	// execution's start.
	At     time.Time     `json:"at"`
	Offset time.Duration `json:"offset_ns"`
	// Kind is the event's type ("ActivityScheduled", ...).
	Kind string `json:"kind"`
	// Name is what the event is about: an activity, orchestration, event
	// or queue name, a KV key.
	Name string `json:"name,omitempty"`
	// Detail is the event's payload: input, result, failure, reason.
	Detail string `json:"detail,omitempty"`
	// Duration is, for an outcome (completed, failed, fired), the time
	// since the event it answers (its SourceEventID); 0 otherwise.
	Duration time.Duration `json:"duration_ns,omitempty"`
	// Failed marks failures.
	Failed bool `json:"failed,omitempty"`
	// Child is the full instance id of a sub-orchestration this event
	// schedules; empty otherwise.
	Child string `json:"child,omitempty"`
	// Source is the EventID of the event this one answers (an outcome's
	// scheduling event); 0 for events that answer none.
	Source uint64 `json:"source_event_id,omitempty"`
	// FireAt is when a timer (TimerCreated) is due; zero otherwise.
	FireAt time.Time `json:"fire_at,omitzero"`
}

// Timeline turns instance's execution history into entries.
func Timeline(instance string, hist []duroxide.Event) []Entry {
	var start time.Time
	at := map[uint64]time.Time{}
	names := map[uint64]string{}
	out := make([]Entry, 0, len(hist))
	for i, ev := range hist {
		t := msTime(ev.TimestampMs)
		if i == 0 {
			start = t
		}
		e := Entry{EventID: ev.EventID, At: t, Kind: ev.Kind.EventType()}
		if !start.IsZero() && !t.IsZero() {
			e.Offset = t.Sub(start)
		}
		describe(&e, instance, ev.Kind)
		if ev.SourceEventID != nil {
			e.Source = *ev.SourceEventID
			if from, ok := at[*ev.SourceEventID]; ok && !t.IsZero() {
				e.Duration = t.Sub(from)
			}
			if e.Name == "" {
				e.Name = names[*ev.SourceEventID]
			}
		}
		at[ev.EventID], names[ev.EventID] = t, e.Name
		out = append(out, e)
	}
	return out
}

func describe(e *Entry, instance string, k duroxide.EventKind) {
	switch v := k.(type) {
	case duroxide.OrchestrationStarted:
		e.Name, e.Detail = v.Name, v.Input
	case duroxide.OrchestrationCompleted:
		e.Detail = v.Output
	case duroxide.OrchestrationFailed:
		e.Detail, e.Failed = FailureText(v.Details), true
	case duroxide.OrchestrationContinuedAsNew:
		e.Detail = v.Input
	case duroxide.OrchestrationCancelRequested:
		e.Detail = v.Reason
	case duroxide.ActivityScheduled:
		e.Name, e.Detail = v.Name, v.Input
	case duroxide.ActivityCompleted:
		e.Detail = v.Result
	case duroxide.ActivityFailed:
		e.Detail, e.Failed = FailureText(v.Details), true
	case duroxide.ActivityCancelRequested:
		e.Detail = v.Reason
	case duroxide.TimerCreated:
		e.FireAt = msTime(v.FireAtMs)
		e.Detail = "fires at " + e.FireAt.Format(time.RFC3339Nano)
	case duroxide.ExternalSubscribed:
		e.Name = v.Name
	case duroxide.ExternalEvent:
		e.Name, e.Detail = v.Name, v.Data
	case duroxide.ExternalSubscribedPersistent:
		e.Name = v.Name
	case duroxide.ExternalEventPersistent:
		e.Name, e.Detail = v.Name, v.Data
	case duroxide.OrchestrationChained:
		e.Name, e.Detail, e.Child = v.Name, v.Input, v.Instance
	case duroxide.SubOrchestrationScheduled:
		e.Name, e.Detail, e.Child = v.Name, v.Input, ChildID(instance, v.Instance)
	case duroxide.SubOrchestrationCompleted:
		e.Detail = v.Result
	case duroxide.SubOrchestrationFailed:
		e.Detail, e.Failed = FailureText(v.Details), true
	case duroxide.SubOrchestrationCancelRequested:
		e.Detail = v.Reason
	case duroxide.CustomStatusUpdated:
		if v.Status != nil {
			e.Detail = *v.Status
		}
	case duroxide.KeyValueSet:
		e.Name, e.Detail = v.Key, v.Value
	case duroxide.KeyValueCleared:
		e.Name = v.Key
	}
}

// ChildID is the full id of a sub-orchestration scheduled as child by
// parent: the runtime prefixes auto-generated ids ("sub::5") with the
// parent's id.
func ChildID(parent, child string) string {
	if strings.HasPrefix(child, "sub::") {
		return parent + "::" + child
	}
	return child
}

// FailureText is a failure's display text.
func FailureText(d duroxide.ErrorDetails) string {
	switch v := d.(type) {
	case duroxide.ApplicationError:
		switch v.Kind.Type {
		case duroxide.AppCancelled:
			return "canceled: " + v.Kind.Reason
		case duroxide.AppPanicked:
			return "panicked: " + v.Message
		}
		return v.Message
	case duroxide.InfrastructureError:
		return "infrastructure: " + v.Operation + ": " + v.Message
	case duroxide.ConfigurationError:
		if v.Message != nil {
			return "nondeterministic: " + *v.Message
		}
		return "nondeterministic in " + v.Resource
	case duroxide.PoisonError:
		what := string(v.MessageType.Kind)
		if v.MessageType.ActivityName != "" {
			what += " " + v.MessageType.ActivityName
		}
		return fmt.Sprintf(poisonPrefix+"%s message failed %d of %d attempts: %s", what, v.AttemptCount, v.MaxAttempts, v.Message)
	case nil:
		return ""
	}
	return d.Variant()
}

// poisonPrefix starts the text of a poison failure.
const poisonPrefix = "poison: "
