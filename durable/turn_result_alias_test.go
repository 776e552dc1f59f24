package durable

// The engine tests name a turn's outcome as the ported Rust tests first
// did, when it was exported; these aliases keep them compiling until they
// are renamed to the unexported names.
type (
	TurnResult     = turnResult
	TurnResultKind = turnResultKind
)

const (
	TurnContinue      = turnContinue
	TurnCompleted     = turnCompleted
	TurnFailed        = turnFailed
	TurnContinueAsNew = turnContinueAsNew
	TurnCancelled     = turnCancelled
)
