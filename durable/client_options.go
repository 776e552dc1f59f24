package durable

import (
	"time"

	"go.opentelemetry.io/otel/trace"
)

// ClientOptions configures a Client made by NewClient.
type ClientOptions struct {
	// TracerProvider traces the client's calls (default: OpenTelemetry's
	// global provider).
	TracerProvider trace.TracerProvider
	// Registry, when set, lets StartOrchestration refuse an orchestration
	// name (or version) it does not hold with ErrNotRegistered before
	// writing anything. Leave it nil in a client that has no registry: the
	// runtime then backs off until a runtime that has it picks it up.
	Registry *Registry
}

// StartOptions configures Client.StartOrchestration. Rust's
// start_orchestration_versioned is StartOptions{Version: ...}.
type StartOptions struct {
	// Version pins an exact version of the orchestration ("" = the
	// registry's policy decides when the instance first runs).
	Version string
	// IDReuse says what a start on an existing instance id does.
	IDReuse IDReusePolicy
	// IdempotencyKey identifies the start across a caller's own retries
	// ("" = none beyond the identical-start rule).
	IdempotencyKey string
	// StartAt delays the start: the instance exists from the call on (a
	// second start is judged as for any start, events and cancellations
	// are accepted and wait), but its code first runs once StartAt has
	// passed on the provider's clock. Until then Status reports State
	// NotFound with Waiting "scheduled to start at <RFC 3339 time>". The
	// zero time (or one already past) starts at once. Needs a provider
	// with duroxide.DelayedStartWriter; cannot be combined with
	// IDReuseAllowTerminal.
	StartAt time.Time
	// ExecutionTimeout bounds each execution of the instance, from the
	// turn that starts it; InstanceTimeout bounds the whole instance,
	// from its first turn, across continue-as-new. Past either, the
	// runtime cancels the instance with the reason "timeout: execution
	// (instance) timeout of <d> exceeded": it fails as a cancelled
	// instance does (its activities and children cancelled), and its
	// failure matches ErrTimedOut. Both are durable timers the runtime
	// stores with the first turn, so they fire across restarts; a
	// suspended instance's timeout waits for Resume like its other
	// timers. A restart of the id (IDReuseAllowTerminal,
	// Client.Restart) runs without them. 0 = none; negative is refused.
	ExecutionTimeout time.Duration
	InstanceTimeout  time.Duration
}

// IDReusePolicy decides what a start on an instance id that already
// exists does.
type IDReusePolicy int

const (
	// IDReuseRejectExisting (the default) refuses with ErrInstanceExists,
	// except that repeating the identical start (same orchestration,
	// version and input: a caller's retry) succeeds and does nothing.
	IDReuseRejectExisting IDReusePolicy = iota
	// IDReuseAllowTerminal starts a new execution when the existing one
	// completed or failed; a running instance is still refused.
	IDReuseAllowTerminal
)

// EventOptions configures RaiseEvent, EnqueueEvent and CancelInstance.
type EventOptions struct {
	// IdempotencyKey makes a caller's retried call a no-op: the provider
	// delivers at most one message per (instance, key). "" = none: the
	// provider still gives the call's message one id, reused by its own
	// retries of the call, but a second call is a second message.
	IdempotencyKey string
}

// WaitOptions configures the Client's waits: WaitForOrchestration,
// WaitForStatusChange and WaitForKVValue. The zero value waits until the
// condition holds or ctx ends, polling 5 ms apart, doubling to 100 ms
// (Rust's client schedule).
type WaitOptions struct {
	// Timeout bounds the wait: when it passes, the wait returns
	// ErrTimeout. 0 = no bound but ctx's (whose end returns ctx's error).
	Timeout time.Duration
	// PollInterval is the fixed time between reads. 0 polls 5 ms apart,
	// doubling to 100 ms (Rust's client schedule).
	PollInterval time.Duration
}

// ListOptions configures Client.ListInstances.
type ListOptions struct {
	// Status keeps only instances in this status (duroxide.StatusRunning,
	// StatusCompleted, StatusFailed, ...). "" = every instance.
	Status string
}

// DeleteOptions configures Client.DeleteInstance.
type DeleteOptions struct {
	// Force deletes an instance that is still running (and its running
	// sub-orchestrations); without it a running instance is refused with
	// ErrInstanceStillRunning.
	Force bool
}

// lastOption returns the last of opts (the one a caller means when an
// options slice holds several), or the zero value.
func lastOption[T any](opts []T) T {
	var o T
	if len(opts) > 0 {
		o = opts[len(opts)-1]
	}
	return o
}

// waitOptions validates the options of a wait.
func waitOptions(op string, opts []WaitOptions) (WaitOptions, error) {
	o := lastOption(opts)
	if o.Timeout < 0 || o.PollInterval < 0 {
		return o, &InputError{Op: op, Reason: "WaitOptions.Timeout and PollInterval must not be negative"}
	}
	return o, nil
}
