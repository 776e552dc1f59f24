package durable

import (
	"fmt"

	"github.com/duroxide-go/cdb/duroxide"
)

// turnResultKind says how an orchestration turn ended.
type turnResultKind int

// The outcomes of a turn (in the order of Rust's TurnResult).
const (
	// turnContinue: the orchestration is waiting for more completions.
	turnContinue turnResultKind = iota
	// turnCompleted: the orchestration returned an output.
	turnCompleted
	// turnFailed: the orchestration (or the turn) failed; see Details.
	turnFailed
	// turnContinueAsNew: the orchestration asked to restart with new input.
	turnContinueAsNew
	// turnCancelled: a cancellation request was recorded; see Reason.
	turnCancelled
)

// reportsToParent reports whether a child's turn that ends so sends its
// parent a result (a continue-as-new leaves that to the next execution).
func (k turnResultKind) reportsToParent() bool {
	return k == turnCompleted || k == turnFailed || k == turnCancelled
}

// String returns the outcome's name ("Continue", "Completed", ...), spelled
// as the Rust variant is.
func (k turnResultKind) String() string {
	switch k {
	case turnContinue:
		return "Continue"
	case turnCompleted:
		return "Completed"
	case turnFailed:
		return "Failed"
	case turnContinueAsNew:
		return "ContinueAsNew"
	case turnCancelled:
		return "Cancelled"
	}
	return fmt.Sprintf("turnResultKind(%d)", int(k))
}

// turnResult is how one turn ended, with what the dispatcher needs to
// commit it; only the fields of Kind are set (Rust: the TurnResult enum).
type turnResult struct {
	Kind    turnResultKind
	Output  string                // turnCompleted
	Details duroxide.ErrorDetails // turnFailed
	Input   string                // turnContinueAsNew
	Version *string               // turnContinueAsNew; nil = resolve by policy
	Reason  string                // turnCancelled
}

// String renders the result for test failure messages.
func (r turnResult) String() string {
	switch r.Kind {
	case turnCompleted:
		return fmt.Sprintf("Completed(%q)", r.Output)
	case turnFailed:
		if r.Details == nil {
			return "Failed(<nil>)"
		}
		return fmt.Sprintf("Failed(%s: %q)", r.Details.Variant(), displayMessage(r.Details))
	case turnContinueAsNew:
		v := "None"
		if r.Version != nil {
			v = *r.Version
		}
		return fmt.Sprintf("ContinueAsNew(input=%q, version=%s)", r.Input, v)
	case turnCancelled:
		return fmt.Sprintf("Cancelled(%q)", r.Reason)
	}
	return r.Kind.String()
}

// isNondeterminism reports whether d is a Configuration{Nondeterminism}
// failure.
func isNondeterminism(d duroxide.ErrorDetails) bool {
	switch v := d.(type) {
	case duroxide.ConfigurationError:
		return v.Kind == duroxide.ConfigNondeterminism
	case *duroxide.ConfigurationError:
		return v != nil && v.Kind == duroxide.ConfigNondeterminism
	}
	return false
}
