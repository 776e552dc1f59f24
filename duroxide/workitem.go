package duroxide

// WorkItem is a message on the orchestrator or worker queue. It is
// implemented only by the *Item types in this package. On the wire a work
// item is externally tagged: {"VariantName":{...fields...}}.
type WorkItem interface {
	// Variant returns the Rust variant name used as the external tag.
	Variant() string
	// InstanceID returns the instance the item is routed to (the parent
	// instance for SubOrchCompleted/SubOrchFailed).
	InstanceID() string
	// Queue reports which queue the item belongs on.
	Queue() Queue
	isWorkItem()
}

// Queue identifies one of the provider's two queues.
type Queue int

// The two queues.
const (
	OrchestratorQueue Queue = iota + 1
	WorkerQueue
)

// String returns "orchestrator", "worker" or "unknown".
func (q Queue) String() string {
	switch q {
	case OrchestratorQueue:
		return "orchestrator"
	case WorkerQueue:
		return "worker"
	}
	return "unknown"
}

// StartOrchestrationItem starts an execution.
type StartOrchestrationItem struct {
	Instance          string
	Orchestration     string
	Input             string
	Version           *string // always written; null = resolve from the registry
	ParentInstance    *string // always written
	ParentID          *uint64 // always written
	ParentExecutionID *uint64 // omitted when nil (0.1.31)
	ExecutionID       uint64
	// ExecutionTimeoutMs and InstanceTimeoutMs, when set, bound each
	// execution and the whole instance (across continue-as-new): the Go
	// runtime arms a timeout timer (ExecutionTimeoutTimerID,
	// InstanceTimeoutTimerID) in the first turn. Go-only, omitted when
	// nil; the Rust crate ignores them.
	ExecutionTimeoutMs *uint64
	InstanceTimeoutMs  *uint64
}

// The ids of the Go runtime's own timeout timers (TimerFiredItem.ID):
// no TimerCreated event has them (event ids count from 1), so they never
// meet an orchestration's timer.
const (
	ExecutionTimeoutTimerID uint64 = 1<<64 - 1
	InstanceTimeoutTimerID  uint64 = 1<<64 - 2
)

// ActivityExecuteItem asks a worker to run an activity.
type ActivityExecuteItem struct {
	Instance    string
	ExecutionID uint64
	ID          uint64 // the ActivityScheduled event id
	Name        string
	Input       string
	SessionID   *string // omitted when nil
	Tag         *string // omitted when nil
}

// ActivityCompletedItem delivers an activity's result.
type ActivityCompletedItem struct {
	Instance    string
	ExecutionID uint64
	ID          uint64
	Result      string
}

// ActivityFailedItem delivers an activity's failure.
type ActivityFailedItem struct {
	Instance    string
	ExecutionID uint64
	ID          uint64
	Details     ErrorDetails
}

// TimerFiredItem fires a durable timer.
type TimerFiredItem struct {
	Instance    string
	ExecutionID uint64
	ID          uint64 // the TimerCreated event id
	FireAtMs    uint64
	// TimeoutMs is set on the runtime's timeout timers only: the
	// timeout's length, with which an execution timeout is armed again
	// for the execution that continued the timer's as new. Go-only,
	// omitted when nil.
	TimeoutMs *uint64
}

// ExternalRaisedItem delivers an external event.
type ExternalRaisedItem struct {
	Instance string
	Name     string
	Data     string
}

// SubOrchCompletedItem delivers a child's result to its parent.
type SubOrchCompletedItem struct {
	ParentInstance    string
	ParentExecutionID uint64
	ParentID          uint64
	Result            string
}

// SubOrchFailedItem delivers a child's failure to its parent.
type SubOrchFailedItem struct {
	ParentInstance    string
	ParentExecutionID uint64
	ParentID          uint64
	Details           ErrorDetails
}

// CancelInstanceItem requests cancellation of an instance.
type CancelInstanceItem struct {
	Instance string
	Reason   string
	// ExecutionID, when set, is the execution the cancel was made
	// against (the client's): the runtime drops the cancel in a turn of
	// another execution, unless that execution continues the targeted one
	// as new, so a cancel meant for an execution that ended never ends a
	// restarted one. Go-only, omitted when nil; a cancel without it (the
	// Rust crate's, the runtime's of a child) applies to any execution.
	ExecutionID *uint64
	// ParentExecutionID, when set, is the parent execution that sent the
	// cancel to its child: a child whose execution reports to a later
	// execution of the parent (a rewind of the parent asked it to rewind
	// or report there) drops it, so the end of the failed execution the
	// rewind undoes never fails the child its new execution waits for.
	// Go-only, omitted when nil; a cancel without it applies as it comes.
	ParentExecutionID *uint64
}

// ContinueAsNewItem starts the next execution of an instance.
type ContinueAsNewItem struct {
	Instance            string
	Orchestration       string
	Input               string
	Version             *string             // always written
	ParentInstance      *string             // omitted when nil (0.1.31)
	ParentID            *uint64             // omitted when nil (0.1.31)
	ParentExecutionID   *uint64             // omitted when nil (0.1.31)
	CarryForwardEvents  []CarryForwardEvent // always written, [] when empty
	InitialCustomStatus *string             // omitted when nil
	// RestartOf, when set, marks a client's restart of that terminal
	// execution: the runtime starts the next execution only while the
	// instance's current execution is that one and ended completed or
	// failed, and drops the item otherwise (another request already
	// started an execution after it). Go-only, omitted when nil; without
	// it (the runtime's own continue-as-new, the Rust crate's items) the
	// item starts the next execution unconditionally.
	RestartOf *uint64
}

// QueueMessageItem is a persistent (FIFO) event for an instance.
type QueueMessageItem struct {
	Instance string
	Name     string
	Data     string
}

// RewindInstanceItem asks the runtime to rewind a failed execution: a
// new execution whose history is the failed one's up to its first
// failure, so the failed work runs again and every earlier result is
// kept (durable's Client.Rewind documents the rule). Go-only: duroxide's
// WorkItem has no such variant, so a Rust node cannot decode it.
type RewindInstanceItem struct {
	Instance string
	// ExecutionID is the failed execution to rewind; the runtime drops
	// the item when the instance's current execution is another one or
	// did not fail. 0 = whichever execution is current.
	ExecutionID uint64
	Reason      string
	// ParentExecutionID, when set, rewrites the parent execution the
	// rewound sub-orchestration reports to: its parent was rewound into
	// that execution. Omitted when nil.
	ParentExecutionID *uint64
}

// RedriveInstanceItem asks the runtime to re-drive a poisoned execution:
// a rewind (RewindInstanceItem) whose cut, for an orchestration poisoned
// by its own messages, is the failure itself and whose new execution
// receives the poisoned messages again. Go-only, as RewindInstanceItem.
type RedriveInstanceItem struct {
	Instance    string
	ExecutionID uint64 // the poisoned execution; 0 = the current one
	Reason      string
}

// SuspendInstanceItem asks the runtime to suspend an instance: the turn
// that takes it commits OrchestrationCommit.Suspend, after which the
// provider hands out none of the instance's messages until a
// ResumeInstanceItem (or a CancelInstanceItem) is among them. Go-only,
// as RewindInstanceItem.
type SuspendInstanceItem struct {
	Instance string
	Reason   string
}

// ResumeInstanceItem asks the runtime to resume a suspended instance;
// the provider hands it out with the messages held while suspended.
// Go-only, as RewindInstanceItem.
type ResumeInstanceItem struct {
	Instance string
	Reason   string
}

// Variant returns "StartOrchestration".
func (StartOrchestrationItem) Variant() string { return "StartOrchestration" }

// Variant returns "ActivityExecute".
func (ActivityExecuteItem) Variant() string { return "ActivityExecute" }

// Variant returns "ActivityCompleted".
func (ActivityCompletedItem) Variant() string { return "ActivityCompleted" }

// Variant returns "ActivityFailed".
func (ActivityFailedItem) Variant() string { return "ActivityFailed" }

// Variant returns "TimerFired".
func (TimerFiredItem) Variant() string { return "TimerFired" }

// Variant returns "ExternalRaised".
func (ExternalRaisedItem) Variant() string { return "ExternalRaised" }

// Variant returns "SubOrchCompleted".
func (SubOrchCompletedItem) Variant() string { return "SubOrchCompleted" }

// Variant returns "SubOrchFailed".
func (SubOrchFailedItem) Variant() string { return "SubOrchFailed" }

// Variant returns "CancelInstance".
func (CancelInstanceItem) Variant() string { return "CancelInstance" }

// Variant returns "ContinueAsNew".
func (ContinueAsNewItem) Variant() string { return "ContinueAsNew" }

// Variant returns "QueueMessage".
func (QueueMessageItem) Variant() string { return "QueueMessage" }

// Variant returns "RewindInstance".
func (RewindInstanceItem) Variant() string { return "RewindInstance" }

// Variant returns "RedriveInstance".
func (RedriveInstanceItem) Variant() string { return "RedriveInstance" }

// InstanceID returns Instance.
func (w RewindInstanceItem) InstanceID() string { return w.Instance }

// InstanceID returns Instance.
func (w RedriveInstanceItem) InstanceID() string { return w.Instance }

// Queue returns OrchestratorQueue.
func (RewindInstanceItem) Queue() Queue { return OrchestratorQueue }

// Queue returns OrchestratorQueue.
func (RedriveInstanceItem) Queue() Queue { return OrchestratorQueue }

func (RewindInstanceItem) isWorkItem()  {}
func (RedriveInstanceItem) isWorkItem() {}

// Variant returns "SuspendInstance".
func (SuspendInstanceItem) Variant() string { return "SuspendInstance" }

// Variant returns "ResumeInstance".
func (ResumeInstanceItem) Variant() string { return "ResumeInstance" }

// InstanceID returns Instance.
func (w SuspendInstanceItem) InstanceID() string { return w.Instance }

// InstanceID returns Instance.
func (w ResumeInstanceItem) InstanceID() string { return w.Instance }

// Queue returns OrchestratorQueue.
func (SuspendInstanceItem) Queue() Queue { return OrchestratorQueue }

// Queue returns OrchestratorQueue.
func (ResumeInstanceItem) Queue() Queue { return OrchestratorQueue }

func (SuspendInstanceItem) isWorkItem() {}
func (ResumeInstanceItem) isWorkItem()  {}

// WakesSuspended reports whether w is fetched for a suspended instance
// (ResumeInstanceItem and CancelInstanceItem are; a cancellation is not
// held back by a suspension), with every message the instance holds.
func WakesSuspended(w WorkItem) bool {
	switch w.(type) {
	case ResumeInstanceItem, CancelInstanceItem:
		return true
	}
	return false
}

// IsResult reports whether w answers something an instance's turn did:
// an activity's, a timer's or a child's outcome. Only an instance that
// exists can have asked for it, so for one that does not (deleted, its
// start never accepted) the orphan rule drops it at once, as it drops
// queue messages; events and cancellations, which a client may send just
// before the start, wait for DefaultOrphanLifetime.
func IsResult(w WorkItem) bool {
	switch w.(type) {
	case ActivityCompletedItem, ActivityFailedItem, TimerFiredItem, SubOrchCompletedItem, SubOrchFailedItem:
		return true
	}
	return false
}

// InstanceID returns Instance.
func (w StartOrchestrationItem) InstanceID() string { return w.Instance }

// InstanceID returns Instance.
func (w ActivityExecuteItem) InstanceID() string { return w.Instance }

// InstanceID returns Instance.
func (w ActivityCompletedItem) InstanceID() string { return w.Instance }

// InstanceID returns Instance.
func (w ActivityFailedItem) InstanceID() string { return w.Instance }

// InstanceID returns Instance.
func (w TimerFiredItem) InstanceID() string { return w.Instance }

// InstanceID returns Instance.
func (w ExternalRaisedItem) InstanceID() string { return w.Instance }

// InstanceID returns ParentInstance: the item is routed to the parent.
func (w SubOrchCompletedItem) InstanceID() string { return w.ParentInstance }

// InstanceID returns ParentInstance: the item is routed to the parent.
func (w SubOrchFailedItem) InstanceID() string { return w.ParentInstance }

// InstanceID returns Instance.
func (w CancelInstanceItem) InstanceID() string { return w.Instance }

// InstanceID returns Instance.
func (w ContinueAsNewItem) InstanceID() string { return w.Instance }

// InstanceID returns Instance.
func (w QueueMessageItem) InstanceID() string { return w.Instance }

// Queue returns OrchestratorQueue.
func (StartOrchestrationItem) Queue() Queue { return OrchestratorQueue }

// Queue returns WorkerQueue.
func (ActivityExecuteItem) Queue() Queue { return WorkerQueue }

// Queue returns OrchestratorQueue.
func (ActivityCompletedItem) Queue() Queue { return OrchestratorQueue }

// Queue returns OrchestratorQueue.
func (ActivityFailedItem) Queue() Queue { return OrchestratorQueue }

// Queue returns OrchestratorQueue.
func (TimerFiredItem) Queue() Queue { return OrchestratorQueue }

// Queue returns OrchestratorQueue.
func (ExternalRaisedItem) Queue() Queue { return OrchestratorQueue }

// Queue returns OrchestratorQueue.
func (SubOrchCompletedItem) Queue() Queue { return OrchestratorQueue }

// Queue returns OrchestratorQueue.
func (SubOrchFailedItem) Queue() Queue { return OrchestratorQueue }

// Queue returns OrchestratorQueue.
func (CancelInstanceItem) Queue() Queue { return OrchestratorQueue }

// Queue returns OrchestratorQueue.
func (ContinueAsNewItem) Queue() Queue { return OrchestratorQueue }

// Queue returns OrchestratorQueue.
func (QueueMessageItem) Queue() Queue { return OrchestratorQueue }

func (StartOrchestrationItem) isWorkItem() {}
func (ActivityExecuteItem) isWorkItem()    {}
func (ActivityCompletedItem) isWorkItem()  {}
func (ActivityFailedItem) isWorkItem()     {}
func (TimerFiredItem) isWorkItem()         {}
func (ExternalRaisedItem) isWorkItem()     {}
func (SubOrchCompletedItem) isWorkItem()   {}
func (SubOrchFailedItem) isWorkItem()      {}
func (CancelInstanceItem) isWorkItem()     {}
func (ContinueAsNewItem) isWorkItem()      {}
func (QueueMessageItem) isWorkItem()       {}
