package durable

import (
	"fmt"

	"github.com/duroxide-go/cdb/duroxide"
)

// TaskFailedError is the error an activity or sub-orchestration future
// resolves with when the work failed. Message is the failure's display
// text, exactly what Rust code would see as the Err string
// (ErrorDetails::display_message).
type TaskFailedError struct {
	Message string
}

// Error returns Message.
func (e *TaskFailedError) Error() string { return e.Message }

// displayMessage is the text a failure shows the orchestration code (a
// TaskFailedError's Message) and the client: its message, prefixed per kind
// ("canceled: ", "nondeterministic: ", ...). Rust:
// ErrorDetails::display_message.
func displayMessage(d duroxide.ErrorDetails) string {
	switch v := d.(type) {
	case duroxide.InfrastructureError:
		return fmt.Sprintf("infrastructure:%s: %s", v.Operation, v.Message)
	case *duroxide.InfrastructureError:
		return displayMessage(*v)
	case duroxide.ConfigurationError:
		if v.Message != nil {
			return "nondeterministic: " + *v.Message
		}
		return "nondeterministic in " + v.Resource
	case *duroxide.ConfigurationError:
		return displayMessage(*v)
	case duroxide.ApplicationError:
		switch v.Kind.Type {
		case duroxide.AppCancelled:
			return "canceled: " + v.Kind.Reason
		case duroxide.AppPanicked:
			return "orchestration panicked: " + v.Message
		}
		return v.Message
	case *duroxide.ApplicationError:
		return displayMessage(*v)
	case duroxide.PoisonError:
		return poisonDisplay(v)
	case *duroxide.PoisonError:
		return displayMessage(*v)
	}
	if d == nil {
		return ""
	}
	return fmt.Sprintf("%v", d)
}

func poisonDisplay(v duroxide.PoisonError) string {
	m := v.MessageType
	switch m.Kind {
	case duroxide.PoisonActivity:
		return fmt.Sprintf("poison: activity %s#%d exceeded %d attempts (max %d)", m.ActivityName, m.ActivityID, v.AttemptCount, v.MaxAttempts)
	case duroxide.PoisonFailedDeserialization:
		return fmt.Sprintf("poison: orchestration %s history deserialization failed after %d attempts (max %d): %s", m.Instance, v.AttemptCount, v.MaxAttempts, m.Error)
	}
	return fmt.Sprintf("poison: orchestration %s exceeded %d attempts (max %d)", m.Instance, v.AttemptCount, v.MaxAttempts)
}

// isSystemError reports whether details abort the turn when they arrive
// (Infrastructure, Configuration, Poison), rather than flowing to user code.
func isSystemError(d duroxide.ErrorDetails) bool {
	switch d.(type) {
	case duroxide.ApplicationError, *duroxide.ApplicationError, nil:
		return false
	}
	return true
}

// nondeterminismError is the Configuration{Nondeterminism} failure the
// engine reports when code and history disagree.
func nondeterminismError(msg string) duroxide.ErrorDetails {
	return duroxide.ConfigurationError{Kind: duroxide.ConfigNondeterminism, Message: &msg}
}
