package durable

import (
	"errors"
	"strings"
	"time"
)

// ErrTimedOut is matched (errors.Is) by the failure of work that ran past
// its time limit: an instance past StartOptions.ExecutionTimeout or
// InstanceTimeout (the *OrchestrationFailedError of DecodeOutput, the
// *TaskFailedError a parent's CallSubOrchestration gets), and an
// activity call past its RetryPolicy.Timeout or ScheduleToClose. Such a
// failure's text starts with "timeout: " (a timed-out instance's, being a
// cancellation, with "canceled: timeout: "); an error an activity or
// orchestration returns with that text matches too. It is not ErrTimeout,
// a client wait that ran out.
var ErrTimedOut = errors.New("durable: timed out")

// timeoutPrefix starts the text of every timeout failure (Rust's
// per-attempt activity timeout says "timeout: activity timed out").
const timeoutPrefix = "timeout: "

// isTimeoutMessage reports whether msg, a failure's display text, is a
// timeout's.
func isTimeoutMessage(msg string) bool {
	return strings.HasPrefix(msg, timeoutPrefix) || strings.HasPrefix(msg, "canceled: "+timeoutPrefix)
}

// Is makes a timed-out activity or sub-orchestration match ErrTimedOut,
// and an activity attempt that stopped heartbeating ErrHeartbeatTimeout
// as well.
func (e *TaskFailedError) Is(target error) bool {
	switch target {
	case ErrTimedOut:
		return isTimeoutMessage(e.Message)
	case ErrHeartbeatTimeout:
		return isHeartbeatTimeoutMessage(e.Message)
	}
	return false
}

// Is makes a timed-out instance's failure match ErrTimedOut.
func (e *OrchestrationFailedError) Is(target error) bool {
	return target == ErrTimedOut && isTimeoutMessage(displayMessage(e.Details))
}

// timeouts are an instance's limits as its start item carries them
// (milliseconds; nil = none).
type timeouts struct {
	execution, instance *uint64
}

// newTimeouts checks a start's limits: negative is refused, 0 is none,
// and anything else counts in whole milliseconds (at least one).
func newTimeouts(execution, instance time.Duration) (timeouts, error) {
	if execution < 0 || instance < 0 {
		return timeouts{}, errors.New("ExecutionTimeout and InstanceTimeout must not be negative")
	}
	return timeouts{execution: timeoutMs(execution), instance: timeoutMs(instance)}, nil
}

func timeoutMs(d time.Duration) *uint64 {
	if d == 0 {
		return nil
	}
	return ptr(uint64(max(d.Milliseconds(), 1)))
}
