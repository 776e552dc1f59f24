package duroxide

import (
	"errors"
	"fmt"
)

// ProviderError is the error every Provider and ProviderAdmin method returns
// on failure. Retryable errors are transient (busy, throttled, timeouts,
// network); permanent ones are not worth retrying (corruption, duplicates,
// invalid input, invalid or expired lock tokens).
type ProviderError struct {
	Operation string
	Message   string
	Retryable bool
	// Kind is the sentinel (ErrInstanceNotFound, ErrLockLost, ...) that
	// errors.Is matches, or nil when no sentinel describes the failure.
	// Callers test kinds instead of matching message text, which stays
	// Rust's wording for traceability.
	Kind error
	Err  error // optional cause, reachable through errors.Unwrap
}

// Error formats as "operation: message", like Rust duroxide.
func (e *ProviderError) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Operation + ": " + e.Err.Error()
	}
	return e.Operation + ": " + e.Message
}

// Unwrap returns the cause.
func (e *ProviderError) Unwrap() error { return e.Err }

// Is reports whether target is e's Kind, or ErrRetryable or ErrPermanent
// matching the retryability of e, so callers can write
// errors.Is(err, duroxide.ErrLockLost) or errors.Is(err, duroxide.ErrPermanent).
func (e *ProviderError) Is(target error) bool {
	switch target {
	case ErrRetryable:
		return e.Retryable
	case ErrPermanent:
		return !e.Retryable
	}
	return e.Kind != nil && target == e.Kind
}

// ErrRetryable and ErrPermanent are sentinels matched by errors.Is against
// any *ProviderError of that class.
var (
	ErrRetryable = errors.New("duroxide: retryable provider error")
	ErrPermanent = errors.New("duroxide: permanent provider error")
)

// Sentinels for the failures callers act on, matched with errors.Is against
// any error a Provider returns. Each is permanent: retrying the same call
// cannot succeed.
var (
	// ErrInstanceNotFound: the instance (or the execution asked for) does
	// not exist, or was deleted.
	ErrInstanceNotFound = errors.New("duroxide: instance not found")
	// ErrLockLost: the lock token is malformed, unknown, expired, or was
	// taken over by another dispatcher; the work it covered is someone
	// else's now and must not be acknowledged.
	ErrLockLost = errors.New("duroxide: lock lost or invalid lock token")
	// ErrDuplicateEvent: an event id already exists in the execution's
	// history; appending it again would fork the history.
	ErrDuplicateEvent = errors.New("duroxide: duplicate history event")
	// ErrInvalidInput: an argument the contract forbids (a nil work item,
	// an id the store cannot hold, a commit for another instance).
	ErrInvalidInput = errors.New("duroxide: invalid input")
	// ErrTooLarge: a payload (an activity result, an input, an event) is
	// larger than the store can hold. The error also holds a
	// *TooLargeError naming the size and the limit.
	ErrTooLarge = errors.New("duroxide: payload too large")
	// ErrInstanceExists: a start named an instance id that already exists
	// (and the start is not an identical retry of the one that created it).
	ErrInstanceExists = errors.New("duroxide: instance already exists")
	// ErrNotRegistered: no orchestration (or version of it) is registered
	// under the name a start asked for.
	ErrNotRegistered = errors.New("duroxide: orchestration not registered")
	// ErrInstanceStillRunning: a deletion without force named a running
	// instance (force it, or cancel the instance first).
	ErrInstanceStillRunning = errors.New("duroxide: instance is still running; use force or cancel first")
	// ErrCannotDeleteSubOrchestration: DeleteInstance named a
	// sub-orchestration; it goes with its root, which is what to delete.
	ErrCannotDeleteSubOrchestration = errors.New("duroxide: cannot delete a sub-orchestration directly; delete the root orchestration instead")
	// ErrStaleExecution: a request to start the execution after a
	// terminal one (a restart, rewind or re-drive) names an execution
	// whose successor another request already started or claimed (see
	// NextExecutionWriter).
	ErrStaleExecution = errors.New("duroxide: another request already started the execution after this one")
)

// ErrInstanceDeleting: the instance's deletion is under way (tombstoned,
// not yet swept), so a start of its id cannot be accepted yet. Unlike the
// sentinels above it is retryable: once the deletion is finished (by its
// caller, by the maintenance loop, or by the start itself once the
// deleter's time has lapsed) the same start succeeds. Errors of this kind
// also match ErrRetryable; build them with Deleting.
var ErrInstanceDeleting = errors.New("duroxide: instance is being deleted")

// Deleting returns the retryable ProviderError of kind
// ErrInstanceDeleting for op, with cause err (may be nil).
func Deleting(op string, err error, format string, args ...any) *ProviderError {
	return &ProviderError{Operation: op, Message: fmt.Sprintf(format, args...), Retryable: true, Kind: ErrInstanceDeleting, Err: err}
}

// TooLargeError says what was too large, how large it was and the store's
// limit, in bytes as stored. errors.Is(err, ErrTooLarge) and
// errors.Is(err, ErrInvalidInput) match it.
type TooLargeError struct {
	What  string // e.g. "activity result"
	Size  int
	Limit int
}

// Error names the size and the limit.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s too large: %d bytes stored, the limit is %d bytes", e.What, e.Size, e.Limit)
}

// Is matches ErrTooLarge, and ErrInvalidInput, the meaning it refines:
// input the store cannot hold, which a retry cannot change.
func (e *TooLargeError) Is(target error) bool {
	return target == ErrTooLarge || target == ErrInvalidInput
}

// TooLarge returns the permanent ProviderError of kind ErrTooLarge for op,
// holding a *TooLargeError.
func TooLarge(op, what string, size, limit int) *ProviderError {
	tl := &TooLargeError{What: what, Size: size, Limit: limit}
	return &ProviderError{Operation: op, Message: tl.Error(), Kind: ErrTooLarge, Err: tl}
}

// Kinded returns a permanent ProviderError of the given kind (one of the
// sentinels above).
func Kinded(kind error, op, format string, args ...any) *ProviderError {
	return &ProviderError{Operation: op, Message: fmt.Sprintf(format, args...), Kind: kind}
}

// Retryable returns a retryable ProviderError.
func Retryable(op, format string, args ...any) *ProviderError {
	return &ProviderError{Operation: op, Message: fmt.Sprintf(format, args...), Retryable: true}
}

// Permanent returns a permanent ProviderError.
func Permanent(op, format string, args ...any) *ProviderError {
	return &ProviderError{Operation: op, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns a ProviderError for op with cause err. A *ProviderError
// inside err keeps its retryability and message. An error in the chain
// that classifies itself (a Retryable() bool method, as storage errors
// such as cdb.RequestError have) decides retryability; any other error is
// treated as retryable, like Rust's From<String>.
func Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var pe *ProviderError
	if errors.As(err, &pe) {
		return &ProviderError{Operation: op, Message: pe.Message, Retryable: pe.Retryable, Kind: pe.Kind, Err: err}
	}
	retryable := true
	var c classifier
	if errors.As(err, &c) {
		retryable = c.Retryable()
	}
	return &ProviderError{Operation: op, Message: err.Error(), Retryable: retryable, Err: err}
}

// classifier is implemented by errors that know whether retrying helps.
type classifier interface{ Retryable() bool }

// IsRetryable reports whether err is (or wraps) a retryable ProviderError.
// Errors that are not ProviderErrors are reported as not retryable.
func IsRetryable(err error) bool {
	var pe *ProviderError
	return errors.As(err, &pe) && pe.Retryable
}

// ToInfrastructure converts the error into ErrorDetails for history.
func (e *ProviderError) ToInfrastructure() InfrastructureError {
	return InfrastructureError{Operation: e.Operation, Message: e.Message, Retryable: e.Retryable}
}
