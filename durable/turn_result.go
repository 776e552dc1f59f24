package durable

import (
	"fmt"

	"github.com/duroxide-go/cdb/duroxide"
)

// TurnResultKind says how an orchestration turn ended.
type TurnResultKind int

// The outcomes of a turn, in Rust's TurnResult order.
const (
	// TurnContinue: the orchestration is waiting for more completions.
	TurnContinue TurnResultKind = iota
	// TurnCompleted: the orchestration returned an output.
	TurnCompleted
	// TurnFailed: the orchestration (or the turn) failed; see Details.
	TurnFailed
	// TurnContinueAsNew: the orchestration asked to restart with new input.
	TurnContinueAsNew
	// TurnCancelled: a cancellation request was recorded; see Reason.
	TurnCancelled
)

// String returns the Rust variant name.
func (k TurnResultKind) String() string {
	switch k {
	case TurnContinue:
		return "Continue"
	case TurnCompleted:
		return "Completed"
	case TurnFailed:
		return "Failed"
	case TurnContinueAsNew:
		return "ContinueAsNew"
	case TurnCancelled:
		return "Cancelled"
	}
	return fmt.Sprintf("TurnResultKind(%d)", int(k))
}

// TurnResult is Rust's TurnResult enum. Only the fields of Kind are set.
type TurnResult struct {
	Kind    TurnResultKind
	Output  string                // TurnCompleted
	Details duroxide.ErrorDetails // TurnFailed
	Input   string                // TurnContinueAsNew
	Version *string               // TurnContinueAsNew; nil = resolve by policy
	Reason  string                // TurnCancelled
}

// String renders the result for test failure messages.
func (r TurnResult) String() string {
	switch r.Kind {
	case TurnCompleted:
		return fmt.Sprintf("Completed(%q)", r.Output)
	case TurnFailed:
		if r.Details == nil {
			return "Failed(<nil>)"
		}
		return fmt.Sprintf("Failed(%s: %q)", r.Details.Variant(), displayMessage(r.Details))
	case TurnContinueAsNew:
		v := "None"
		if r.Version != nil {
			v = *r.Version
		}
		return fmt.Sprintf("ContinueAsNew(input=%q, version=%s)", r.Input, v)
	case TurnCancelled:
		return fmt.Sprintf("Cancelled(%q)", r.Reason)
	}
	return r.Kind.String()
}
