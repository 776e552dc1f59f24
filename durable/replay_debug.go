package durable

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/duroxide-go/cdb/duroxide"
)

// Nondeterminism messages embed the action and the event that disagree,
// rendered as Rust's Debug format ({:?}) renders them, so the texts match
// Rust's.

// debugStr renders s quoted, with control and quote characters escaped
// (Rust's Debug for a str, with escape_debug escapes).
func debugStr(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case 0:
			b.WriteString(`\0`)
		default:
			if unicode.IsPrint(r) || r == ' ' {
				b.WriteRune(r)
			} else {
				fmt.Fprintf(&b, `\u{%x}`, r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func debugOpt(s *string) string {
	if s == nil {
		return "None"
	}
	return "Some(" + debugStr(*s) + ")"
}

func debugU64(v uint64) string { return strconv.FormatUint(v, 10) }

// debugStruct renders `Name { f1: v1, f2: v2 }`, or `Name` with no fields.
func debugStruct(name string, fields ...string) string {
	if len(fields) == 0 {
		return name
	}
	parts := make([]string, 0, len(fields)/2)
	for i := 0; i+1 < len(fields); i += 2 {
		parts = append(parts, fields[i]+": "+fields[i+1])
	}
	return name + " { " + strings.Join(parts, ", ") + " }"
}

// debugAction renders an action for a nondeterminism message ({:?} of
// Rust's Action).
func debugAction(a action) string {
	switch v := a.(type) {
	case actionCallActivity:
		return debugStruct("CallActivity", "scheduling_event_id", debugU64(v.SchedulingEventID), "name", debugStr(v.Name),
			"input", debugStr(v.Input), "session_id", debugOpt(v.SessionID), "tag", debugOpt(v.Tag))
	case actionCreateTimer:
		return debugStruct("CreateTimer", "scheduling_event_id", debugU64(v.SchedulingEventID), "fire_at_ms", debugU64(v.FireAtMs))
	case actionWaitExternal:
		return debugStruct("WaitExternal", "scheduling_event_id", debugU64(v.SchedulingEventID), "name", debugStr(v.Name))
	case actionStartOrchestrationDetached:
		return debugStruct("StartOrchestrationDetached", "scheduling_event_id", debugU64(v.SchedulingEventID), "name", debugStr(v.Name),
			"version", debugOpt(v.Version), "instance", debugStr(v.Instance), "input", debugStr(v.Input))
	case actionStartSubOrchestration:
		return debugStruct("StartSubOrchestration", "scheduling_event_id", debugU64(v.SchedulingEventID), "name", debugStr(v.Name),
			"version", debugOpt(v.Version), "instance", debugStr(v.Instance), "input", debugStr(v.Input))
	case actionContinueAsNew:
		return debugStruct("ContinueAsNew", "input", debugStr(v.Input), "version", debugOpt(v.Version))
	case actionUpdateCustomStatus:
		return debugStruct("UpdateCustomStatus", "status", debugOpt(v.Status))
	case actionDequeueEvent:
		return debugStruct("DequeueEvent", "scheduling_event_id", debugU64(v.SchedulingEventID), "name", debugStr(v.Name))
	case actionSetKeyValue:
		return debugStruct("SetKeyValue", "key", debugStr(v.Key), "value", debugStr(v.Value), "last_updated_at_ms", debugU64(v.LastUpdatedAtMs))
	case actionClearKeyValue:
		return debugStruct("ClearKeyValue", "key", debugStr(v.Key))
	case actionClearKeyValues:
		return "ClearKeyValues"
	}
	return fmt.Sprintf("%#v", a)
}

// debugEventKind renders a history event's kind for a nondeterminism
// message ({:?} of Rust's EventKind) for the kinds the engine matches
// against actions (schedules and metadata); other kinds fall back to their
// type name.
func debugEventKind(k duroxide.EventKind) string {
	switch v := k.(type) {
	case duroxide.ActivityScheduled:
		return debugStruct("ActivityScheduled", "name", debugStr(v.Name), "input", debugStr(v.Input),
			"session_id", debugOpt(v.SessionID), "tag", debugOpt(v.Tag))
	case duroxide.TimerCreated:
		return debugStruct("TimerCreated", "fire_at_ms", debugU64(v.FireAtMs))
	case duroxide.ExternalSubscribed:
		return debugStruct("ExternalSubscribed", "name", debugStr(v.Name))
	case duroxide.ExternalSubscribedPersistent:
		return debugStruct("QueueSubscribed", "name", debugStr(v.Name))
	case duroxide.SubOrchestrationScheduled:
		return debugStruct("SubOrchestrationScheduled", "name", debugStr(v.Name), "instance", debugStr(v.Instance), "input", debugStr(v.Input))
	case duroxide.OrchestrationChained:
		return debugStruct("OrchestrationChained", "name", debugStr(v.Name), "instance", debugStr(v.Instance), "input", debugStr(v.Input))
	case duroxide.CustomStatusUpdated:
		return debugStruct("CustomStatusUpdated", "status", debugOpt(v.Status))
	case duroxide.KeyValueSet:
		return debugStruct("KeyValueSet", "key", debugStr(v.Key), "value", debugStr(v.Value), "last_updated_at_ms", debugU64(v.LastUpdatedAtMs))
	case duroxide.KeyValueCleared:
		return debugStruct("KeyValueCleared", "key", debugStr(v.Key))
	case duroxide.KeyValuesCleared:
		return "KeyValuesCleared"
	}
	if k == nil {
		return "None"
	}
	return k.EventType()
}
