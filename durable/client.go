package durable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// Client starts, signals, cancels, observes and repairs (rewind,
// re-drive, restart, suspend and resume) orchestrations through a
// Provider. It needs no Runtime: any process sharing the store may use it.
// A Client is safe for concurrent use.
type Client struct {
	p   duroxide.Provider
	tel *telemetry
	reg *Registry // nil: starts are not checked against a registry
	// runtimeWake wakes the runtime whose Client this is after a write
	// (wake.go); nil for NewClient's.
	runtimeWake func(q duroxide.Queue, instance string)
}

// NewClient returns a Client over p. Without ClientOptions its calls are
// traced through OpenTelemetry's global TracerProvider and starts are not
// checked against a registry.
func NewClient(p duroxide.Provider, opts ...ClientOptions) *Client {
	o := lastOption(opts)
	return &Client{p: p, tel: newTelemetry(o.TracerProvider, nil), reg: o.Registry}
}

// Client errors.
var (
	// ErrTimeout: a wait ran out of time before its condition held.
	ErrTimeout = errors.New("durable: operation timed out")
	// ErrManagementNotAvailable: the provider has no ProviderAdmin.
	ErrManagementNotAvailable = errors.New("durable: management features not available - provider doesn't implement ProviderAdmin")
	// ErrInstanceNotFound is duroxide.ErrInstanceNotFound (one sentinel,
	// two names): the instance does not exist.
	ErrInstanceNotFound = duroxide.ErrInstanceNotFound
	// ErrInstanceExists is duroxide.ErrInstanceExists: a start named an
	// existing instance (see IDReusePolicy).
	ErrInstanceExists = duroxide.ErrInstanceExists
	// ErrInstanceDeleting is duroxide.ErrInstanceDeleting: a start named
	// an instance whose deletion is not finished yet; it is retryable.
	ErrInstanceDeleting = duroxide.ErrInstanceDeleting
	// ErrInvalidInput is duroxide.ErrInvalidInput: an argument was refused
	// before anything was written (an *InputError or a provider's limit).
	ErrInvalidInput = duroxide.ErrInvalidInput
	// ErrNotRegistered is duroxide.ErrNotRegistered: the client's registry
	// has no orchestration of the name (and version) a start asked for.
	ErrNotRegistered = duroxide.ErrNotRegistered
	// ErrInstanceStillRunning is duroxide.ErrInstanceStillRunning:
	// deleting a running instance needs DeleteOptions.Force (or cancel it
	// first).
	ErrInstanceStillRunning = duroxide.ErrInstanceStillRunning
	// ErrCannotDeleteSubOrchestration is
	// duroxide.ErrCannotDeleteSubOrchestration: delete the root instead.
	ErrCannotDeleteSubOrchestration = duroxide.ErrCannotDeleteSubOrchestration
)

// The client's poll schedule for its waits: 5 ms doubling to 100 ms, so a
// short turn is seen at once and a long one costs few reads (Rust's client
// schedule).
const (
	clientInitialPollDelay = 5 * time.Millisecond
	clientMaxPollDelay     = 100 * time.Millisecond
)

// StartOrchestration starts instance running orchestration; input is
// encoded with the typed codec (a string is stored as is, anything else as
// JSON). Without options it runs the latest version (by the registry's
// policy) and refuses an existing id (ErrInstanceExists) unless the call
// repeats the start that created it; StartOptions pins a version, allows
// reusing a terminal instance's id and sets the idempotency key. A start
// of an id whose deletion another call left unfinished is
// ErrInstanceDeleting, which a retry outlasts.
func (c *Client) StartOrchestration(ctx context.Context, instance, orchestration string, input any, opts ...StartOptions) error {
	o := lastOption(opts)
	var version *string
	if o.Version != "" {
		if _, err := duroxide.ParseSemVer(o.Version); err != nil {
			return &InputError{Op: "start orchestration", Reason: err.Error()}
		}
		version = &o.Version
	}
	if !o.StartAt.IsZero() && o.IDReuse == IDReuseAllowTerminal {
		return &InputError{Op: "start orchestration", Reason: "StartOptions.StartAt cannot be combined with IDReuseAllowTerminal"}
	}
	return c.start(ctx, instance, orchestration, version, input, o)
}

func (c *Client) start(ctx context.Context, instance, orchestration string, version *string, input any, o StartOptions) error {
	limits, err := newTimeouts(o.ExecutionTimeout, o.InstanceTimeout)
	if err != nil {
		return &InputError{Op: "start orchestration", Reason: err.Error()}
	}
	if instance == "" || orchestration == "" {
		return &InputError{Op: "start orchestration", Reason: "instance and orchestration names must not be empty"}
	}
	if err := c.checkRegistered(orchestration, version); err != nil {
		return err
	}
	raw, err := Encode(input)
	if err != nil {
		return &InputError{Op: "start orchestration", Reason: "encode input: " + err.Error()}
	}
	ctx, end := c.tel.clientSpan(ctx, "start_orchestration", instance, attrOrchestation.String(orchestration))
	err = c.startInstance(ctx, duroxide.StartOrchestrationItem{
		Instance: instance, Orchestration: orchestration, Input: raw, Version: version, ExecutionID: initialExecutionID,
		ExecutionTimeoutMs: limits.execution, InstanceTimeoutMs: limits.instance,
	}, o)
	end(err)
	return err
}

// RaiseEvent delivers an external event to a WaitEvent(ctx, name) of
// instance that is pending when the event arrives; if none is (the
// orchestration has not reached its wait yet, say), the event is dropped.
// data is encoded with the typed codec. To send a signal that must not be
// lost however early it comes, such as an approval, use EnqueueEvent and
// DequeueEvent. An instance that does not exist is ErrInstanceNotFound;
// EventOptions sets the idempotency key.
func (c *Client) RaiseEvent(ctx context.Context, instance, name string, data any, opts ...EventOptions) error {
	raw, err := Encode(data)
	if err != nil {
		return &InputError{Op: "raise event", Reason: "encode data: " + err.Error()}
	}
	ctx, end := c.tel.clientSpan(ctx, "raise_event", instance)
	err = c.enqueueFor(ctx, duroxide.ExternalRaisedItem{Instance: instance, Name: name, Data: raw}, opts)
	end(err)
	return err
}

// EnqueueEvent appends data to instance's persistent queue name, read in
// FIFO order by the orchestration's DequeueEvent. A message is kept until
// it is dequeued, even one sent before the orchestration waits for it. An
// instance that does not exist is ErrInstanceNotFound; EventOptions sets
// the idempotency key.
func (c *Client) EnqueueEvent(ctx context.Context, instance, queue string, data any, opts ...EventOptions) error {
	raw, err := Encode(data)
	if err != nil {
		return &InputError{Op: "enqueue event", Reason: "encode data: " + err.Error()}
	}
	ctx, end := c.tel.clientSpan(ctx, "enqueue_event", instance)
	err = c.enqueueFor(ctx, duroxide.QueueMessageItem{Instance: instance, Name: queue, Data: raw}, opts)
	end(err)
	return err
}

// CancelInstance asks instance to stop; it fails with "canceled: reason"
// and cancels its children. The cancel is meant for the execution the
// instance is in when the call is made (and the executions that continue
// it as new): should that one end and the instance be restarted before a
// runtime takes the cancel, the restarted execution runs on. An instance
// that does not exist is ErrInstanceNotFound; EventOptions sets the
// idempotency key.
func (c *Client) CancelInstance(ctx context.Context, instance, reason string, opts ...EventOptions) error {
	ctx, end := c.tel.clientSpan(ctx, "cancel_instance", instance)
	target, err := c.currentExecution(ctx, instance)
	if err == nil {
		err = c.enqueueFor(ctx, duroxide.CancelInstanceItem{Instance: instance, Reason: reason, ExecutionID: target}, opts)
	}
	end(err)
	return err
}

// currentExecution is the execution a client request made now is meant
// for: the instance's latest (one point read on a provider with admin
// calls), nil when it has none yet (a queued start) or the provider
// cannot tell, which leaves the request unjudged.
func (c *Client) currentExecution(ctx context.Context, instance string) (*uint64, error) {
	a := c.p.Admin()
	if a == nil || instance == "" {
		return nil, nil
	}
	exec, err := a.LatestExecutionID(ctx, instance)
	switch {
	case errors.Is(err, ErrInstanceNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case exec == 0:
		return nil, nil
	}
	return &exec, nil
}

func (c *Client) enqueue(ctx context.Context, item duroxide.WorkItem) error {
	if err := c.p.EnqueueForOrchestrator(ctx, item, 0); err != nil {
		return err
	}
	c.wake(duroxide.OrchestratorQueue, item.InstanceID())
	return nil
}

// InputError reports invalid arguments to a Client or Registry call.
type InputError struct {
	Op, Reason string
}

// Error implements error.
func (e *InputError) Error() string { return "durable: " + e.Op + ": invalid input: " + e.Reason }

// Is makes errors.Is(err, ErrInvalidInput) match every InputError.
func (e *InputError) Is(target error) bool { return target == duroxide.ErrInvalidInput }

// State is an orchestration's coarse state as a Client sees it.
type State int

// The states. NotFound: no history yet (a start may still be queued).
const (
	StateNotFound State = iota
	StateRunning
	StateCompleted
	StateFailed
	// StateBlocked: running, but its turns are held back because the
	// orchestration code does not match its history (NondeterminismBlock);
	// BlockedReason says why. Deploying code that replays it resumes it.
	StateBlocked
	// StateSuspended: running, but suspended by Client.Suspend: it takes
	// no turns, and its messages and fired timers wait, until
	// Client.Resume. SuspendedReason says why.
	StateSuspended
)

// String returns the state's name ("Running", "Completed", ...), spelled
// as the Rust variant is.
func (s State) String() string {
	switch s {
	case StateRunning:
		return "Running"
	case StateCompleted:
		return "Completed"
	case StateFailed:
		return "Failed"
	case StateBlocked:
		return "Blocked"
	case StateSuspended:
		return "Suspended"
	}
	return "NotFound"
}

// OrchestrationStatus is an instance's status as its latest execution's
// history and the provider's marks give it (Rust: OrchestrationStatus).
type OrchestrationStatus struct {
	State State
	// Output is the result of a Completed instance.
	Output string
	// Details is the failure of a Failed instance.
	Details duroxide.ErrorDetails
	// CustomStatus is the latest custom status (nil: none or cleared).
	CustomStatus *string
	// CustomStatusVersion increases with every custom status change.
	CustomStatusVersion uint64
	// BlockedReason is the nondeterminism error that holds a Blocked
	// instance (the mismatching call and event); empty otherwise.
	BlockedReason string
	// SuspendedReason is the reason given to Client.Suspend for a
	// Suspended instance; empty otherwise.
	SuspendedReason string
	// Waiting says why a started instance has not run yet (State
	// NotFound), e.g. that no runtime has its orchestration registered,
	// or why a Running one does not progress: that it waits for an
	// activity no runtime has registered (shown while that activity is
	// outstanding); "" when nothing is known. Needs a provider with
	// duroxide.PendingNoter.
	Waiting string
}

// FailureMessage is the failure's display text ("canceled: reason",
// the orchestration's error text, ...); empty unless State is Failed.
func (s *OrchestrationStatus) FailureMessage() string {
	if s == nil || s.Details == nil {
		return ""
	}
	return displayMessage(s.Details)
}

// IsTerminal reports whether the instance completed or failed.
func (s *OrchestrationStatus) IsTerminal() bool {
	return s != nil && (s.State == StateCompleted || s.State == StateFailed)
}

// DecodeOutput decodes a Completed status's output with the typed codec;
// a Failed status returns its failure as an *OrchestrationFailedError.
func DecodeOutput[T any](s *OrchestrationStatus) (T, error) {
	var zero T
	switch {
	case s == nil || s.State == StateNotFound || s.State == StateRunning || s.State == StateBlocked || s.State == StateSuspended:
		return zero, fmt.Errorf("durable: orchestration is not finished")
	case s.State == StateFailed:
		return zero, &OrchestrationFailedError{Details: s.Details}
	}
	return Decode[T](s.Output)
}

// OrchestrationFailedError is a failed orchestration's outcome as an error.
type OrchestrationFailedError struct {
	Details duroxide.ErrorDetails
}

// Error returns the failure's display text.
func (e *OrchestrationFailedError) Error() string { return displayMessage(e.Details) }

// Status reads instance's status from its latest execution (Rust:
// get_orchestration_status).
func (c *Client) Status(ctx context.Context, instance string) (*OrchestrationStatus, error) {
	return c.status(ctx, instance, true)
}

// status is Status; without notes it does not read a running instance's
// pending note (Waiting stays ""), which the wait loops have no use for.
func (c *Client) status(ctx context.Context, instance string, notes bool) (*OrchestrationStatus, error) {
	view, err := c.readStatus(ctx, instance)
	if err != nil {
		return nil, err
	}
	hist := view.History
	st := &OrchestrationStatus{}
	if cs := view.CustomStatus; cs != nil {
		st.CustomStatus, st.CustomStatusVersion = cs.Status, cs.Version
	}
	for i := len(hist) - 1; i >= 0; i-- {
		switch k := hist[i].Kind.(type) {
		case duroxide.OrchestrationCompleted:
			st.State, st.Output = StateCompleted, k.Output
			return st, nil
		case duroxide.OrchestrationFailed:
			st.State, st.Details = StateFailed, k.Details
			return st, nil
		}
	}
	for _, e := range hist {
		if _, ok := e.Kind.(duroxide.OrchestrationStarted); ok {
			st.State = StateRunning
			suspended, why, err := view.suspension(ctx)
			if err != nil {
				return nil, err
			}
			if suspended {
				st.State, st.SuspendedReason = StateSuspended, why
				return st, nil
			}
			reason, err := view.blockedReason(ctx)
			if err != nil {
				return nil, err
			}
			if reason != "" {
				st.State, st.BlockedReason = StateBlocked, reason
				return st, nil
			}
			if notes {
				st.Waiting = c.activityWaiting(ctx, instance, hist)
			}
			return st, nil
		}
	}
	if note := c.pendingNote(ctx, instance); note != "" {
		if _, _, _, activity := parseActivityNote(note); !activity {
			st.Waiting = note
		}
	}
	return st, nil
}

// activityWaiting is the runtime's note that a running instance waits for
// an activity no runtime has registered, if that activity is still
// outstanding in hist (the latest execution's history); "" otherwise. It
// reads the note only when some activity is outstanding.
func (c *Client) activityWaiting(ctx context.Context, instance string, hist []duroxide.Event) string {
	open := map[uint64]bool{}
	var execution uint64
	for _, e := range hist {
		execution = e.ExecutionID
		switch e.Kind.(type) {
		case duroxide.ActivityScheduled:
			open[e.EventID] = true
		case duroxide.ActivityCompleted, duroxide.ActivityFailed, duroxide.ActivityCancelRequested:
			if e.SourceEventID != nil {
				delete(open, *e.SourceEventID)
			}
		}
	}
	if len(open) == 0 {
		return ""
	}
	ex, id, text, ok := parseActivityNote(c.pendingNote(ctx, instance))
	if !ok || ex != execution || !open[id] {
		return ""
	}
	return text
}

// statusView is what Client.Status reads.
type statusView struct {
	duroxide.InstanceStatus
	// blocked reads the blocked reason when the provider did not return
	// it with the history (it is needed for a running instance only).
	blocked func(context.Context) (string, error)
	// suspended reads the suspension likewise (nil: the provider
	// returned it, or cannot suspend).
	suspended func(context.Context) (bool, string, error)
}

func (v *statusView) suspension(ctx context.Context) (bool, string, error) {
	if v.suspended == nil {
		return v.Suspended, v.SuspendedReason, nil
	}
	return v.suspended(ctx)
}

func (v *statusView) blockedReason(ctx context.Context) (string, error) {
	if v.blocked == nil {
		return v.BlockedReason, nil
	}
	return v.blocked(ctx)
}

// readStatus reads instance's history, custom status and blocked reason:
// in one call from a duroxide.StatusReader, else by Read and
// CustomStatus, leaving BlockedReason for a running instance.
func (c *Client) readStatus(ctx context.Context, instance string) (*statusView, error) {
	if r, ok := c.p.(duroxide.StatusReader); ok {
		st, err := r.ReadStatus(ctx, instance)
		if err != nil {
			return nil, err
		}
		return &statusView{InstanceStatus: *st}, nil
	}
	hist, err := c.p.Read(ctx, instance)
	if err != nil {
		return nil, err
	}
	v := &statusView{InstanceStatus: duroxide.InstanceStatus{History: hist}, blocked: func(ctx context.Context) (string, error) {
		return c.p.BlockedReason(ctx, instance)
	}}
	if r, ok := c.p.(duroxide.SuspensionReader); ok {
		v.suspended = func(ctx context.Context) (bool, string, error) { return r.Suspension(ctx, instance) }
	}
	// Best effort: a custom status read error does not fail the status
	// query, whose state comes from history (as in Rust).
	if cs, err := c.p.CustomStatus(ctx, instance, 0); err == nil {
		v.CustomStatus = cs
	}
	return v, nil
}

// WaitForOrchestration polls instance's status until it completes or
// fails, WaitOptions.Timeout passes (ErrTimeout) or ctx ends (ctx's
// error). Polls start 5 ms apart and back off to 100 ms, as Rust's client
// does, unless WaitOptions.PollInterval fixes the interval. A provider
// that is a duroxide.InstanceEndNotifier also wakes the wait when a
// commit it made ends the instance's execution, so the status is read
// then rather than at the next poll; the polls go on beside it, for ends
// committed elsewhere.
func (c *Client) WaitForOrchestration(ctx context.Context, instance string, opts ...WaitOptions) (*OrchestrationStatus, error) {
	o, err := waitOptions("wait for orchestration", opts)
	if err != nil {
		return nil, err
	}
	ctx, end := c.tel.clientSpan(ctx, "wait_for_orchestration", instance)
	st, err := c.waitForOrchestration(ctx, instance, o)
	end(err)
	return st, err
}

func (c *Client) waitForOrchestration(ctx context.Context, instance string, o WaitOptions) (*OrchestrationStatus, error) {
	// Subscribed before the first read, so an end committed between a
	// read and the sleep after it still wakes the sleep.
	ended, cancel := c.instanceEnds(instance)
	defer cancel()
	var out *OrchestrationStatus
	err := c.pollWoken(ctx, o, ended, func() (bool, error) {
		if c.stillRunning(ctx, instance) {
			return false, nil
		}
		st, err := c.status(ctx, instance, false)
		if err != nil {
			return false, err
		}
		if st.State == StateNotFound {
			// No history yet: fine for a start still queued, but an
			// instance that does not exist would wait out the timeout.
			if err := c.notFoundIfMissing(ctx, instance); err != nil {
				return false, err
			}
		}
		out = st
		return st.IsTerminal(), nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// stillRunning reports whether the instance's summary says its current
// execution runs on: one point read on the Cosmos provider
// (ProviderAdmin.InstanceInfo), where a full status reads the instance
// and queries its history. A wait polls it until the summary says the
// execution ended (its commit writes both at once), then reads the full
// status; without management, or while the instance has no summary yet
// (a start still queued), it reads the full status every time.
func (c *Client) stillRunning(ctx context.Context, instance string) bool {
	a := c.p.Admin()
	if a == nil {
		return false
	}
	info, err := a.InstanceInfo(ctx, instance)
	if err != nil || info == nil {
		return false // not found or unreadable: the full status decides
	}
	return info.Status != duroxide.StatusCompleted && info.Status != duroxide.StatusFailed
}

// WaitForStatusChange waits until instance's custom status version exceeds
// lastSeenVersion or the instance finishes; WaitOptions bound the wait and
// set the polling as for WaitForOrchestration.
func (c *Client) WaitForStatusChange(ctx context.Context, instance string, lastSeenVersion uint64, opts ...WaitOptions) (*OrchestrationStatus, error) {
	o, err := waitOptions("wait for status change", opts)
	if err != nil {
		return nil, err
	}
	var out *OrchestrationStatus
	err = c.poll(ctx, o, func() (bool, error) {
		cs, err := c.p.CustomStatus(ctx, instance, lastSeenVersion)
		if err != nil {
			return false, err
		}
		st, err := c.status(ctx, instance, false)
		if err != nil {
			return false, err
		}
		if st.State == StateNotFound {
			if err := c.notFoundIfMissing(ctx, instance); err != nil {
				return false, err
			}
		}
		out = st
		return cs != nil || st.IsTerminal(), nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// poll calls check until it reports done: at o.PollInterval, or on Rust's
// client schedule (5 ms doubling to 100 ms). Past o.Timeout it returns
// ErrTimeout after one last check; without a Timeout only ctx ends it.
func (c *Client) poll(ctx context.Context, o WaitOptions, check func() (bool, error)) error {
	return c.pollWoken(ctx, o, nil, check)
}

// pollWoken is poll that also checks as soon as wake receives (nil: never
// does), then goes on with its schedule.
func (c *Client) pollWoken(ctx context.Context, o WaitOptions, wake <-chan struct{}, check func() (bool, error)) error {
	var deadline time.Time
	if o.Timeout > 0 {
		deadline = time.Now().Add(o.Timeout)
	}
	delay := clientInitialPollDelay
	if o.PollInterval > 0 {
		delay = o.PollInterval
	}
	for {
		done, err := check()
		if err != nil || done {
			return err
		}
		sleep := delay
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return ErrTimeout
			}
			sleep = min(sleep, left)
		}
		if err := sleepCtx(ctx, sleep, wake); err != nil {
			return err
		}
		if o.PollInterval == 0 {
			delay = min(delay*2, clientMaxPollDelay)
		}
	}
}

// sleepCtx sleeps for d, until wake receives or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration, wake <-chan struct{}) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	case <-wake:
		return nil
	}
}

// KVValue reads key of instance's KV store (merged across executions);
// a missing instance is ErrInstanceNotFound. Rust: get_kv_value.
func (c *Client) KVValue(ctx context.Context, instance, key string) (value string, found bool, err error) {
	value, found, err = c.p.KVValue(ctx, instance, key)
	if err == nil && !found {
		err = c.notFoundIfMissing(ctx, instance)
	}
	return value, found, err
}

// KVValues reads instance's whole KV store; a missing instance is
// ErrInstanceNotFound. Rust: get_kv_all_values.
func (c *Client) KVValues(ctx context.Context, instance string) (map[string]string, error) {
	kv, err := c.p.KVValues(ctx, instance)
	if err == nil && len(kv) == 0 {
		err = c.notFoundIfMissing(ctx, instance)
	}
	if err != nil {
		return nil, err
	}
	return kv, nil
}

// WaitForKVValue polls until key exists in instance's KV store; an
// instance missing when the wait begins is ErrInstanceNotFound. WaitOptions
// bound the wait and set the polling as for WaitForOrchestration.
func (c *Client) WaitForKVValue(ctx context.Context, instance, key string, opts ...WaitOptions) (string, error) {
	o, err := waitOptions("wait for KV value", opts)
	if err != nil {
		return "", err
	}
	var out string
	first := true
	err = c.poll(ctx, o, func() (bool, error) {
		v, ok, err := c.p.KVValue(ctx, instance, key)
		if err == nil && !ok && first {
			err = c.notFoundIfMissing(ctx, instance)
		}
		first = false
		out = v
		return ok, err
	})
	return out, err
}

// CustomStatus returns instance's custom status if its version exceeds
// lastSeenVersion, else nil; a missing instance is ErrInstanceNotFound.
// Rust: get_custom_status.
func (c *Client) CustomStatus(ctx context.Context, instance string, lastSeenVersion uint64) (*duroxide.CustomStatus, error) {
	cs, err := c.p.CustomStatus(ctx, instance, lastSeenVersion)
	if err == nil && cs == nil {
		err = c.notFoundIfMissing(ctx, instance)
	}
	if err != nil {
		return nil, err
	}
	return cs, nil
}

// Stats returns stats of instance's current execution (nil for an unknown
// instance). Rust: get_orchestration_stats.
func (c *Client) Stats(ctx context.Context, instance string) (*duroxide.InstanceStats, error) {
	return c.p.InstanceStats(ctx, instance)
}

// ClientKVValue reads key of instance's KV store and decodes it with the
// typed codec (see Encode), the client-side counterpart of the
// orchestration's typed KVValue (which owns the shorter name); found is
// false when the key is absent. Rust: get_kv_value_typed on the client.
func ClientKVValue[T any](ctx context.Context, c *Client, instance, key string) (value T, found bool, err error) {
	s, ok, err := c.KVValue(ctx, instance, key)
	if err != nil || !ok {
		return value, false, err
	}
	if value, err = Decode[T](s); err != nil {
		return value, true, fmt.Errorf("durable: KV value for key '%s' cannot be decoded: %w", key, err)
	}
	return value, true, nil
}
