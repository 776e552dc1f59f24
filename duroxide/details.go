package duroxide

// ErrorDetails describes why an activity, sub-orchestration or orchestration
// failed. It is implemented by InfrastructureError, ConfigurationError,
// ApplicationError and PoisonError. On the wire it is externally tagged:
// {"Application":{...}}.
type ErrorDetails interface {
	// Variant returns the Rust variant name used as the external tag.
	Variant() string
	isErrorDetails()
}

// InfrastructureError is a provider or runtime infrastructure failure.
type InfrastructureError struct {
	Operation string
	Message   string
	Retryable bool
}

// ConfigErrorKind is the kind of a ConfigurationError.
type ConfigErrorKind string

// ConfigNondeterminism is the only ConfigErrorKind duroxide defines.
const ConfigNondeterminism ConfigErrorKind = "Nondeterminism"

// ConfigurationError is a configuration problem such as nondeterminism.
type ConfigurationError struct {
	Kind     ConfigErrorKind
	Resource string
	Message  *string // always written; null when absent
}

// AppErrorType enumerates the kinds of application error.
type AppErrorType string

// The application error kinds. AppCancelled carries a reason.
const (
	AppActivityFailed      AppErrorType = "ActivityFailed"
	AppOrchestrationFailed AppErrorType = "OrchestrationFailed"
	AppPanicked            AppErrorType = "Panicked"
	AppCancelled           AppErrorType = "Cancelled"
)

// AppErrorKind is Rust's AppErrorKind: a unit variant, or Cancelled with a
// reason ({"Cancelled":{"reason":"..."}} on the wire).
type AppErrorKind struct {
	Type   AppErrorType
	Reason string // only for AppCancelled
}

// ApplicationError is a failure raised by user code.
type ApplicationError struct {
	Kind      AppErrorKind
	Message   string
	Retryable bool
}

// PoisonKind enumerates the kinds of poisoned message.
type PoisonKind string

// The poison message kinds.
const (
	PoisonOrchestration         PoisonKind = "Orchestration"
	PoisonActivity              PoisonKind = "Activity"
	PoisonFailedDeserialization PoisonKind = "FailedDeserialization"
)

// PoisonMessageType identifies what was poisoned. Which fields are written
// depends on Kind: Orchestration (Instance, ExecutionID), Activity (plus
// ActivityName, ActivityID), FailedDeserialization (plus Error).
type PoisonMessageType struct {
	Kind         PoisonKind
	Instance     string
	ExecutionID  uint64
	ActivityName string
	ActivityID   uint64
	Error        string
}

// PoisonError reports a message that exceeded its maximum attempts.
type PoisonError struct {
	AttemptCount uint32
	MaxAttempts  uint32
	MessageType  PoisonMessageType
	Message      string
}

// Variant returns "Infrastructure".
func (InfrastructureError) Variant() string { return "Infrastructure" }

// Variant returns "Configuration".
func (ConfigurationError) Variant() string { return "Configuration" }

// Variant returns "Application".
func (ApplicationError) Variant() string { return "Application" }

// Variant returns "Poison".
func (PoisonError) Variant() string { return "Poison" }

func (InfrastructureError) isErrorDetails() {}
func (ConfigurationError) isErrorDetails()  {}
func (ApplicationError) isErrorDetails()    {}
func (PoisonError) isErrorDetails()         {}
