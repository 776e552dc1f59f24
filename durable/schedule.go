package durable

import (
	"fmt"
	"time"
)

// The scheduling calls. Each concept has one generic function that takes
// the orchestration context first, its required arguments next and, last,
// an optional options struct; every call that has a result returns a
// *Future. Inputs are encoded and outputs decoded with the typed codec
// (see Encode and Decode); a string travels as its raw text both ways, so
// CallActivity[string] with a string input is Rust's untyped
// schedule_activity. An input that cannot be encoded panics, as in Rust: it
// is a programming error, and the panic fails the orchestration with the
// message.

// ActivityOptions are the optional settings of CallActivity. The zero value
// runs the activity once, on any worker, untagged.
type ActivityOptions struct {
	// Retry, when set, retries a failed attempt per the policy (Rust's
	// schedule_activity_with_retry); nil means one attempt.
	Retry *RetryPolicy
	// Session, when set, routes every attempt to the worker that owns the
	// session, so consecutive activities of a session share a process
	// (Rust's schedule_activity_on_session).
	Session string
	// Tag, when set, routes every attempt to workers serving the tag
	// (Rust's with_tag).
	Tag string
}

// CallActivity schedules the activity name with input and returns its
// future; a failure is a *TaskFailedError (Rust's schedule_activity,
// schedule_activity_on_session, schedule_activity_with_retry and their
// _typed forms).
//
// Without a retry policy the activity is scheduled at once. With one, the
// future runs the retry loop, which (as Rust's async fn) starts when the
// future is first awaited, raced or joined (never polled, it schedules
// nothing): it schedules each attempt, waits between attempts on durable
// timers, and resolves with the first success, or the last failure once the
// attempts are used up; a per-attempt timeout fails at once with "timeout:
// activity timed out". Either future goes into Select and Join. At most one
// ActivityOptions may be given.
func CallActivity[Out any](ctx *OrchestrationContext, name string, input any, opts ...ActivityOptions) *Future[Out] {
	o := oneOption("CallActivity", opts)
	in := mustEncode(input)
	if o.Retry != nil {
		return mapFuture(ctx.retryActivity(name, in, *o.Retry, o.Session, o.Tag), decodeResult[Out])
	}
	return mapFuture(ctx.scheduleActivity(name, in, o.Session, o.Tag), decodeResult[Out])
}

// NewTimer starts a durable timer that fires after d (Rust's
// schedule_timer). Await it for a durable sleep, or race it with Select for
// a timeout.
func NewTimer(ctx *OrchestrationContext, d time.Duration) *Future[struct{}] {
	return ctx.scheduleTimer(d)
}

// WaitEvent waits for the external event name, raised with the client's
// RaiseEvent, and decodes its data (Rust's schedule_wait). Subscriptions
// and arrivals of a name are matched in order: the n-th wait gets the n-th
// event raised after it subscribed.
//
// An event is dropped when it arrives while no WaitEvent of its name is
// pending: raised before the orchestration reached this call (even before
// its first turn ran), or between two waits. It stays in history, but no
// wait ever receives it (duroxide's subscription semantics). For a signal
// that may come early, such as an approval, use the persistent queue
// instead: DequeueEvent here, EnqueueEvent on the client; it keeps
// messages until they are dequeued.
func WaitEvent[T any](ctx *OrchestrationContext, name string) *Future[T] {
	return mapFuture(ctx.scheduleWait(name), decodeResult[T])
}

// DequeueEvent takes the next message of the persistent queue, enqueued
// with the client's EnqueueEvent, and decodes it (Rust's dequeue_event).
// Unlike WaitEvent, messages that arrive before anyone waits are kept,
// matched first in, first out, and carried across continue-as-new, so this
// is the way to wait for an approval.
func DequeueEvent[T any](ctx *OrchestrationContext, queue string) *Future[T] {
	return mapFuture(ctx.dequeueEvent(queue), decodeResult[T])
}

// SubOrchestrationOptions are the optional settings of
// CallSubOrchestration.
type SubOrchestrationOptions struct {
	// InstanceID is the child's instance id, used exactly as given; empty
	// means an auto-generated "{parent}::sub::{event_id}".
	InstanceID string
	// Version pins the child to a version; empty means the registry's
	// policy.
	Version string
	// ExecutionTimeout and InstanceTimeout bound the child as
	// StartOptions' do a started instance: past one, the child is
	// cancelled with a "timeout: ..." reason and this call's future fails
	// with an error matching ErrTimedOut. 0 = none.
	ExecutionTimeout time.Duration
	InstanceTimeout  time.Duration
}

// CallSubOrchestration starts the child orchestration name with input and
// returns its future; a failure is a *TaskFailedError (Rust's
// schedule_sub_orchestration and its _with_id, _versioned and _typed
// forms). At most one SubOrchestrationOptions may be given.
func CallSubOrchestration[Out any](ctx *OrchestrationContext, name string, input any, opts ...SubOrchestrationOptions) *Future[Out] {
	o := oneOption("CallSubOrchestration", opts)
	in := mustEncode(input)
	limits, err := newTimeouts(o.ExecutionTimeout, o.InstanceTimeout)
	if err != nil {
		panic("durable: CallSubOrchestration: " + err.Error())
	}
	return mapFuture(ctx.scheduleSubOrchestration(name, optString(o.Version), optString(o.InstanceID), in, limits), decodeResult[Out])
}

// StartOrchestrationOptions are the optional settings of
// StartOrchestration.
type StartOrchestrationOptions struct {
	// Version pins the new orchestration to a version; empty means the
	// registry's policy.
	Version string
}

// StartOrchestration starts the independent orchestration name under
// instanceID with input, fire and forget: nothing comes back and it
// outlives this one (Rust's schedule_orchestration and its _versioned and
// _typed forms). At most one StartOrchestrationOptions may be given.
func StartOrchestration(ctx *OrchestrationContext, name, instanceID string, input any, opts ...StartOrchestrationOptions) {
	o := oneOption("StartOrchestration", opts)
	ctx.startDetached(name, optString(o.Version), instanceID, mustEncode(input))
}

// ContinueAsNewOptions are the optional settings of ContinueAsNew.
type ContinueAsNewOptions struct {
	// Version moves the instance to a version; empty means the registry's
	// policy.
	Version string
}

// ContinueAsNew ends this execution and starts the next one of the same
// instance with input (Rust's continue_as_new and its _versioned and
// _typed forms): history is reset; unconsumed queue messages and the
// custom status are carried over. It never returns: write
// `return "", durable.ContinueAsNew(ctx, next)`. At most one
// ContinueAsNewOptions may be given.
func ContinueAsNew(ctx *OrchestrationContext, input any, opts ...ContinueAsNewOptions) error {
	o := oneOption("ContinueAsNew", opts)
	return ctx.continueAsNew(mustEncode(input), optString(o.Version))
}

// oneOption returns the single options value of a variadic options
// parameter, or the zero value; more than one is a programming error.
func oneOption[O any](call string, opts []O) O {
	var o O
	switch len(opts) {
	case 0:
	case 1:
		o = opts[0]
	default:
		panic(fmt.Sprintf("durable: %s takes at most one options value, got %d", call, len(opts)))
	}
	return o
}
