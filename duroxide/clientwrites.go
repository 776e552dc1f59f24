package duroxide

import (
	"context"
	"time"
)

// ClientWriter is an optional Provider capability: the writes a client
// makes at the API edge, checked and deduplicated by the store itself so
// that concurrent callers and retried calls cannot race past the check.
// The durable Client uses it when the provider implements it; without it
// the Client falls back to EnqueueForOrchestrator (no existence check, no
// deduplication).
//
// Nothing here changes the work items' JSON: the idempotency key and the
// start record live beside the queued message, so the message a Rust
// reader would decode is duroxide's own (mixed Go and Rust processes are
// untested).
type ClientWriter interface {
	// StartInstance enqueues item (a client start, ExecutionID 1) only if
	// no instance with its id exists, atomically: of two concurrent starts
	// exactly one succeeds. If the instance exists it returns an error
	// matching ErrInstanceExists, except that repeating the start that
	// created it (same orchestration, version and input, or the same
	// non-empty key) succeeds and enqueues nothing. A start of an id
	// whose earlier instance was deleted begins at the execution after
	// the last one that instance reached (the item's ExecutionID is
	// raised), so that a message the deleted instance left in flight,
	// which names one of its executions, is never taken for the new
	// instance's.
	StartInstance(ctx context.Context, item StartOrchestrationItem, key string) error
	// EnqueueForInstance enqueues item (an event, queue message or
	// cancellation) for an instance that exists (ErrInstanceNotFound
	// otherwise). A second call with the same non-empty key for the same
	// instance enqueues nothing and returns nil, also after the first
	// message was consumed.
	EnqueueForInstance(ctx context.Context, item WorkItem, key string) error
	// InstanceExists reports whether instance exists: a client start was
	// accepted for it, or a turn of it was committed, and it was not
	// deleted since.
	InstanceExists(ctx context.Context, instance string) (bool, error)
}

// DelayedStartWriter is an optional Provider capability beside
// ClientWriter: a client start whose message becomes visible only at a
// given time. The instance exists from the call on (InstanceExists, the
// identical-start and duplicate-start rules of StartInstance hold at
// once), and a message for it enqueued meanwhile (a cancellation, an
// event) waits behind the start, as behind any start not visible yet.
// The durable Client's StartOptions.StartAt needs it.
type DelayedStartWriter interface {
	// StartInstanceAt is StartInstance with the start visible at at, read
	// on the provider's own clock (an at not after now is StartInstance).
	StartInstanceAt(ctx context.Context, item StartOrchestrationItem, key string, at time.Time) error
}

// NextExecutionWriter is an optional Provider capability beside
// ClientWriter: a client's request that starts a new execution of a
// terminal instance, accepted at most once per execution. The durable
// Client checks that the instance's latest execution ended; the provider
// makes the claim and the write one atomic step, so that of two requests
// seeing the same terminal execution (two restarts, a rewind and a
// restart, two starts with IDReuseAllowTerminal) exactly one is accepted.
// Without it the Client enqueues through ClientWriter, and the runtime
// alone drops a restart that arrives too late (ContinueAsNewItem's
// RestartOf, RewindInstanceItem's ExecutionID), after the call succeeded.
type NextExecutionWriter interface {
	// EnqueueNextExecution enqueues item (a ContinueAsNewItem with
	// RestartOf, a RewindInstanceItem or a RedriveInstanceItem) that
	// starts the execution after execution `after`, only if no request
	// for the successor of `after` or of a later execution was accepted
	// before: ErrStaleExecution otherwise, except that repeating the
	// accepted request with its non-empty key succeeds and enqueues
	// nothing. An instance that does not exist is ErrInstanceNotFound.
	EnqueueNextExecution(ctx context.Context, item WorkItem, after uint64, key string) error
}

// StartsNextExecution reports whether item is one of the requests
// NextExecutionWriter takes: a restart (ContinueAsNewItem with
// RestartOf), a rewind or a re-drive.
func StartsNextExecution(item WorkItem) bool {
	switch w := item.(type) {
	case ContinueAsNewItem:
		return w.RestartOf != nil
	case RewindInstanceItem, RedriveInstanceItem:
		return true
	}
	return false
}

// DefaultOrphanLifetime is how long a provider keeps an orchestrator
// message (an event or a cancellation) for an instance that does not
// exist, waiting for its start, before deleting it. A message enqueued
// shortly before its instance's start is still delivered; one for an
// instance that never starts does not stay in the queue for ever.
// Queue messages (EnqueueEvent) are dropped at once, as in duroxide.
const DefaultOrphanLifetime = time.Hour

// PendingNoter is an optional Provider capability: a short note on an
// instance that was started but cannot run yet (no runtime has its
// orchestration registered), which a client shows in the instance's
// status instead of a bare "not found".
type PendingNoter interface {
	// NotePending records note for instance, replacing an earlier one.
	NotePending(ctx context.Context, instance, note string) error
	// PendingNote returns the last note ("" when none).
	PendingNote(ctx context.Context, instance string) (string, error)
}

// SignalStarter is an optional Provider capability beside ClientWriter:
// signal-with-start, a client start and a message for the same instance
// written in one atomic step, so that of concurrent callers naming one id
// exactly one starts the instance and every caller's message is queued
// once. The durable Client's SignalWithStart uses it; with ClientWriter
// alone it falls back to a start followed by an enqueue (each atomic, the
// pair not), and without ClientWriter it refuses.
type SignalStarter interface {
	// SignalWithStart enqueues msg (an event or queue message for
	// start.Instance) and, if no instance with that id exists, start
	// with it, atomically: start and message are written together or
	// not at all, and a start is accepted only as StartInstance accepts
	// one (a deleted life's id continues its execution ids). When the
	// instance exists, whatever its state or the start that created it,
	// only msg is enqueued, as EnqueueForInstance would with msgKey.
	// started reports whether this call's start was written (a retry of
	// a call whose first attempt started the instance may report false).
	SignalWithStart(ctx context.Context, start StartOrchestrationItem, startKey string, msg WorkItem, msgKey string) (started bool, err error)
}

// CheckSignal refuses a signal-with-start message that is not an event
// or a queue message for instance (ErrInvalidInput), so every provider
// refuses the same items.
func CheckSignal(op, instance string, msg WorkItem) error {
	switch msg.(type) {
	case ExternalRaisedItem, QueueMessageItem:
	default:
		return Kinded(ErrInvalidInput, op, "signal-with-start sends an event or a queue message, not %T", msg)
	}
	if msg.InstanceID() != instance {
		return Kinded(ErrInvalidInput, op, "signal for %q cannot start %q", msg.InstanceID(), instance)
	}
	return nil
}
