package duroxide

// Event is one entry of an orchestration's append-only history.
//
// The common fields are shared by every kind; Kind carries the variant and
// its fields. On the wire an Event is a single JSON object in which Kind is
// flattened and tagged by "type", byte-compatible with Rust duroxide.
type Event struct {
	EventID         uint64
	SourceEventID   *uint64 // always written; null for lifecycle and scheduling events
	InstanceID      string
	ExecutionID     uint64
	TimestampMs     uint64
	DuroxideVersion string
	Kind            EventKind
}

// EventKind is the variant of an Event. It is implemented only by the types
// in this package whose names match Rust duroxide's EventKind variants.
type EventKind interface {
	// EventType returns the wire tag written as the "type" field.
	EventType() string
	isEventKind()
}

// CarryForwardEvent is a queued (name, data) pair carried into a new
// execution by continue-as-new. On the wire it is a two-element array.
type CarryForwardEvent struct {
	Name string
	Data string
}

// OrchestrationStarted is event 1 of every execution.
type OrchestrationStarted struct {
	Name                string
	Version             string
	Input               string
	ParentInstance      *string             // always written
	ParentID            *uint64             // always written
	ParentExecutionID   *uint64             // omitted when nil (duroxide 0.1.31)
	CarryForwardEvents  []CarryForwardEvent // omitted when nil
	InitialCustomStatus *string             // omitted when nil
}

// OrchestrationCompleted ends an execution successfully.
type OrchestrationCompleted struct{ Output string }

// OrchestrationFailed ends an execution with an error.
type OrchestrationFailed struct{ Details ErrorDetails }

// ActivityScheduled records that an activity was scheduled.
type ActivityScheduled struct {
	Name      string
	Input     string
	SessionID *string // omitted when nil
	Tag       *string // omitted when nil
}

// ActivityCompleted records an activity's result.
type ActivityCompleted struct{ Result string }

// ActivityFailed records an activity's failure.
type ActivityFailed struct{ Details ErrorDetails }

// ActivityCancelRequested is a breadcrumb that an activity was cancelled.
type ActivityCancelRequested struct{ Reason string }

// TimerCreated records a durable timer.
type TimerCreated struct{ FireAtMs uint64 }

// TimerFired records that a durable timer fired.
type TimerFired struct{ FireAtMs uint64 }

// ExternalSubscribed records a subscription to an external event.
type ExternalSubscribed struct{ Name string }

// ExternalEvent records a delivered external event.
type ExternalEvent struct {
	Name string
	Data string
}

// OrchestrationChained records a detached orchestration start.
type OrchestrationChained struct {
	Name     string
	Instance string
	Input    string
}

// SubOrchestrationScheduled records a sub-orchestration start.
type SubOrchestrationScheduled struct {
	Name     string
	Instance string
	Input    string
}

// SubOrchestrationCompleted records a sub-orchestration's result.
type SubOrchestrationCompleted struct{ Result string }

// SubOrchestrationFailed records a sub-orchestration's failure.
type SubOrchestrationFailed struct{ Details ErrorDetails }

// SubOrchestrationCancelRequested is a breadcrumb that a child was cancelled.
type SubOrchestrationCancelRequested struct{ Reason string }

// OrchestrationContinuedAsNew ends an execution that continues as a new one.
type OrchestrationContinuedAsNew struct{ Input string }

// OrchestrationCancelRequested records a cancellation request.
type OrchestrationCancelRequested struct{ Reason string }

// ExternalSubscribedCancelled records a cancelled external subscription.
type ExternalSubscribedCancelled struct{ Reason string }

// ExternalSubscribedPersistent is a persistent (queue) subscription. Rust
// names the variant QueueSubscribed; its wire tag is
// "ExternalSubscribedPersistent".
type ExternalSubscribedPersistent struct{ Name string }

// ExternalEventPersistent is a delivered persistent (queue) event. Rust
// names the variant QueueEventDelivered; its wire tag is
// "ExternalEventPersistent".
type ExternalEventPersistent struct {
	Name string
	Data string
}

// ExternalSubscribedPersistentCancelled cancels a persistent subscription.
// Rust names the variant QueueSubscriptionCancelled; its wire tag is
// "ExternalSubscribedPersistentCancelled".
type ExternalSubscribedPersistentCancelled struct{ Reason string }

// CustomStatusUpdated sets (or, with a nil Status, clears) the custom status.
type CustomStatusUpdated struct {
	Status *string // always written; null clears
}

// KeyValueSet sets an instance-scoped key.
type KeyValueSet struct {
	Key             string
	Value           string
	LastUpdatedAtMs uint64
}

// KeyValueCleared removes one key.
type KeyValueCleared struct{ Key string }

// KeyValuesCleared removes every key of the instance.
type KeyValuesCleared struct{}

// Wire tags of the event kinds (the "type" field). Each equals the Go type
// name; for the three queue kinds it differs from the Rust variant name
// (QueueSubscribed, QueueEventDelivered, QueueSubscriptionCancelled), whose
// #[serde(rename)] keeps the older wire tags.
const (
	TypeOrchestrationStarted                  = "OrchestrationStarted"
	TypeOrchestrationCompleted                = "OrchestrationCompleted"
	TypeOrchestrationFailed                   = "OrchestrationFailed"
	TypeActivityScheduled                     = "ActivityScheduled"
	TypeActivityCompleted                     = "ActivityCompleted"
	TypeActivityFailed                        = "ActivityFailed"
	TypeActivityCancelRequested               = "ActivityCancelRequested"
	TypeTimerCreated                          = "TimerCreated"
	TypeTimerFired                            = "TimerFired"
	TypeExternalSubscribed                    = "ExternalSubscribed"
	TypeExternalEvent                         = "ExternalEvent"
	TypeOrchestrationChained                  = "OrchestrationChained"
	TypeSubOrchestrationScheduled             = "SubOrchestrationScheduled"
	TypeSubOrchestrationCompleted             = "SubOrchestrationCompleted"
	TypeSubOrchestrationFailed                = "SubOrchestrationFailed"
	TypeSubOrchestrationCancelRequested       = "SubOrchestrationCancelRequested"
	TypeOrchestrationContinuedAsNew           = "OrchestrationContinuedAsNew"
	TypeOrchestrationCancelRequested          = "OrchestrationCancelRequested"
	TypeExternalSubscribedCancelled           = "ExternalSubscribedCancelled"
	TypeExternalSubscribedPersistent          = "ExternalSubscribedPersistent"
	TypeExternalEventPersistent               = "ExternalEventPersistent"
	TypeExternalSubscribedPersistentCancelled = "ExternalSubscribedPersistentCancelled"
	TypeCustomStatusUpdated                   = "CustomStatusUpdated"
	TypeKeyValueSet                           = "KeyValueSet"
	TypeKeyValueCleared                       = "KeyValueCleared"
	TypeKeyValuesCleared                      = "KeyValuesCleared"
)

// EventType returns the wire tag TypeOrchestrationStarted.
func (OrchestrationStarted) EventType() string { return TypeOrchestrationStarted }

// EventType returns the wire tag TypeOrchestrationCompleted.
func (OrchestrationCompleted) EventType() string { return TypeOrchestrationCompleted }

// EventType returns the wire tag TypeOrchestrationFailed.
func (OrchestrationFailed) EventType() string { return TypeOrchestrationFailed }

// EventType returns the wire tag TypeActivityScheduled.
func (ActivityScheduled) EventType() string { return TypeActivityScheduled }

// EventType returns the wire tag TypeActivityCompleted.
func (ActivityCompleted) EventType() string { return TypeActivityCompleted }

// EventType returns the wire tag TypeActivityFailed.
func (ActivityFailed) EventType() string { return TypeActivityFailed }

// EventType returns the wire tag TypeActivityCancelRequested.
func (ActivityCancelRequested) EventType() string { return TypeActivityCancelRequested }

// EventType returns the wire tag TypeTimerCreated.
func (TimerCreated) EventType() string { return TypeTimerCreated }

// EventType returns the wire tag TypeTimerFired.
func (TimerFired) EventType() string { return TypeTimerFired }

// EventType returns the wire tag TypeExternalSubscribed.
func (ExternalSubscribed) EventType() string { return TypeExternalSubscribed }

// EventType returns the wire tag TypeExternalEvent.
func (ExternalEvent) EventType() string { return TypeExternalEvent }

// EventType returns the wire tag TypeOrchestrationChained.
func (OrchestrationChained) EventType() string { return TypeOrchestrationChained }

// EventType returns the wire tag TypeSubOrchestrationScheduled.
func (SubOrchestrationScheduled) EventType() string { return TypeSubOrchestrationScheduled }

// EventType returns the wire tag TypeSubOrchestrationCompleted.
func (SubOrchestrationCompleted) EventType() string { return TypeSubOrchestrationCompleted }

// EventType returns the wire tag TypeSubOrchestrationFailed.
func (SubOrchestrationFailed) EventType() string { return TypeSubOrchestrationFailed }

// EventType returns the wire tag TypeSubOrchestrationCancelRequested.
func (SubOrchestrationCancelRequested) EventType() string {
	return TypeSubOrchestrationCancelRequested
}

// EventType returns the wire tag TypeOrchestrationContinuedAsNew.
func (OrchestrationContinuedAsNew) EventType() string { return TypeOrchestrationContinuedAsNew }

// EventType returns the wire tag TypeOrchestrationCancelRequested.
func (OrchestrationCancelRequested) EventType() string { return TypeOrchestrationCancelRequested }

// EventType returns the wire tag TypeExternalSubscribedCancelled.
func (ExternalSubscribedCancelled) EventType() string { return TypeExternalSubscribedCancelled }

// EventType returns the wire tag TypeExternalSubscribedPersistent.
func (ExternalSubscribedPersistent) EventType() string { return TypeExternalSubscribedPersistent }

// EventType returns the wire tag TypeExternalEventPersistent.
func (ExternalEventPersistent) EventType() string { return TypeExternalEventPersistent }

// EventType returns the wire tag TypeExternalSubscribedPersistentCancelled.
func (ExternalSubscribedPersistentCancelled) EventType() string {
	return TypeExternalSubscribedPersistentCancelled
}

// EventType returns the wire tag TypeCustomStatusUpdated.
func (CustomStatusUpdated) EventType() string { return TypeCustomStatusUpdated }

// EventType returns the wire tag TypeKeyValueSet.
func (KeyValueSet) EventType() string { return TypeKeyValueSet }

// EventType returns the wire tag TypeKeyValueCleared.
func (KeyValueCleared) EventType() string { return TypeKeyValueCleared }

// EventType returns the wire tag TypeKeyValuesCleared.
func (KeyValuesCleared) EventType() string { return TypeKeyValuesCleared }

func (OrchestrationStarted) isEventKind()                  {}
func (OrchestrationCompleted) isEventKind()                {}
func (OrchestrationFailed) isEventKind()                   {}
func (ActivityScheduled) isEventKind()                     {}
func (ActivityCompleted) isEventKind()                     {}
func (ActivityFailed) isEventKind()                        {}
func (ActivityCancelRequested) isEventKind()               {}
func (TimerCreated) isEventKind()                          {}
func (TimerFired) isEventKind()                            {}
func (ExternalSubscribed) isEventKind()                    {}
func (ExternalEvent) isEventKind()                         {}
func (OrchestrationChained) isEventKind()                  {}
func (SubOrchestrationScheduled) isEventKind()             {}
func (SubOrchestrationCompleted) isEventKind()             {}
func (SubOrchestrationFailed) isEventKind()                {}
func (SubOrchestrationCancelRequested) isEventKind()       {}
func (OrchestrationContinuedAsNew) isEventKind()           {}
func (OrchestrationCancelRequested) isEventKind()          {}
func (ExternalSubscribedCancelled) isEventKind()           {}
func (ExternalSubscribedPersistent) isEventKind()          {}
func (ExternalEventPersistent) isEventKind()               {}
func (ExternalSubscribedPersistentCancelled) isEventKind() {}
func (CustomStatusUpdated) isEventKind()                   {}
func (KeyValueSet) isEventKind()                           {}
func (KeyValueCleared) isEventKind()                       {}
func (KeyValuesCleared) isEventKind()                      {}
