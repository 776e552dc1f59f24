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
}

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
}

// QueueMessageItem is a persistent (FIFO) event for an instance.
type QueueMessageItem struct {
	Instance string
	Name     string
	Data     string
}

func (StartOrchestrationItem) Variant() string { return "StartOrchestration" }
func (ActivityExecuteItem) Variant() string    { return "ActivityExecute" }
func (ActivityCompletedItem) Variant() string  { return "ActivityCompleted" }
func (ActivityFailedItem) Variant() string     { return "ActivityFailed" }
func (TimerFiredItem) Variant() string         { return "TimerFired" }
func (ExternalRaisedItem) Variant() string     { return "ExternalRaised" }
func (SubOrchCompletedItem) Variant() string   { return "SubOrchCompleted" }
func (SubOrchFailedItem) Variant() string      { return "SubOrchFailed" }
func (CancelInstanceItem) Variant() string     { return "CancelInstance" }
func (ContinueAsNewItem) Variant() string      { return "ContinueAsNew" }
func (QueueMessageItem) Variant() string       { return "QueueMessage" }

func (w StartOrchestrationItem) InstanceID() string { return w.Instance }
func (w ActivityExecuteItem) InstanceID() string    { return w.Instance }
func (w ActivityCompletedItem) InstanceID() string  { return w.Instance }
func (w ActivityFailedItem) InstanceID() string     { return w.Instance }
func (w TimerFiredItem) InstanceID() string         { return w.Instance }
func (w ExternalRaisedItem) InstanceID() string     { return w.Instance }
func (w SubOrchCompletedItem) InstanceID() string   { return w.ParentInstance }
func (w SubOrchFailedItem) InstanceID() string      { return w.ParentInstance }
func (w CancelInstanceItem) InstanceID() string     { return w.Instance }
func (w ContinueAsNewItem) InstanceID() string      { return w.Instance }
func (w QueueMessageItem) InstanceID() string       { return w.Instance }

func (StartOrchestrationItem) Queue() Queue { return OrchestratorQueue }
func (ActivityExecuteItem) Queue() Queue    { return WorkerQueue }
func (ActivityCompletedItem) Queue() Queue  { return OrchestratorQueue }
func (ActivityFailedItem) Queue() Queue     { return OrchestratorQueue }
func (TimerFiredItem) Queue() Queue         { return OrchestratorQueue }
func (ExternalRaisedItem) Queue() Queue     { return OrchestratorQueue }
func (SubOrchCompletedItem) Queue() Queue   { return OrchestratorQueue }
func (SubOrchFailedItem) Queue() Queue      { return OrchestratorQueue }
func (CancelInstanceItem) Queue() Queue     { return OrchestratorQueue }
func (ContinueAsNewItem) Queue() Queue      { return OrchestratorQueue }
func (QueueMessageItem) Queue() Queue       { return OrchestratorQueue }

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
