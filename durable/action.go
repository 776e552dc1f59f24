package durable

// action is a decision an orchestration turn produced: a durable call the
// code made that history did not hold yet (Rust: the Action enum).
// The engine turns each new action into a history event (except
// ContinueAsNew) and hands it to the host, which turns it into work items.
// SchedulingEventID is the event id of the matching history event; it is 0
// until the engine assigns it.
type action interface{ isAction() }

// actionCallActivity schedules an activity (ActivityScheduled).
type actionCallActivity struct {
	SchedulingEventID uint64
	Name              string
	Input             string
	SessionID         *string
	Tag               *string
}

// actionCreateTimer creates a durable timer (TimerCreated).
type actionCreateTimer struct {
	SchedulingEventID uint64
	FireAtMs          uint64
}

// actionWaitExternal subscribes to an external event (ExternalSubscribed).
type actionWaitExternal struct {
	SchedulingEventID uint64
	Name              string
}

// actionStartOrchestrationDetached starts an unrelated orchestration
// (OrchestrationChained); no result comes back.
type actionStartOrchestrationDetached struct {
	SchedulingEventID uint64
	Name              string
	Version           *string
	Instance          string
	Input             string
}

// actionStartSubOrchestration starts a child (SubOrchestrationScheduled).
// Instance is "sub::{event_id}" for auto-generated ids (the host prefixes
// the parent: "{parent}::sub::{event_id}") or the explicit id.
type actionStartSubOrchestration struct {
	SchedulingEventID uint64
	Name              string
	Version           *string
	Instance          string
	Input             string
	// Timeouts are the child's (SubOrchestrationOptions), carried on its
	// start item; not part of the schedule's identity in history.
	Timeouts timeouts
}

// actionContinueAsNew ends the execution and starts the next one.
type actionContinueAsNew struct {
	Input   string
	Version *string
}

// actionUpdateCustomStatus sets (Status != nil) or clears the custom status.
type actionUpdateCustomStatus struct {
	Status *string
}

// actionDequeueEvent subscribes to a persistent queue event
// (ExternalSubscribedPersistent, Rust's QueueSubscribed).
type actionDequeueEvent struct {
	SchedulingEventID uint64
	Name              string
}

// actionSetKeyValue sets a KV key (KeyValueSet).
type actionSetKeyValue struct {
	Key             string
	Value           string
	LastUpdatedAtMs uint64
}

// actionClearKeyValue removes a KV key (KeyValueCleared).
type actionClearKeyValue struct {
	Key string
}

// actionClearKeyValues removes every KV key (KeyValuesCleared).
type actionClearKeyValues struct{}

func (actionCallActivity) isAction()               {}
func (actionCreateTimer) isAction()                {}
func (actionWaitExternal) isAction()               {}
func (actionStartOrchestrationDetached) isAction() {}
func (actionStartSubOrchestration) isAction()      {}
func (actionContinueAsNew) isAction()              {}
func (actionUpdateCustomStatus) isAction()         {}
func (actionDequeueEvent) isAction()               {}
func (actionSetKeyValue) isAction()                {}
func (actionClearKeyValue) isAction()              {}
func (actionClearKeyValues) isAction()             {}
