package durable

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/duroxide-go/cdb/duroxide"
)

// ErrInvalidState: the instance exists but is not in the state the
// operation needs (rewind needs a failed instance, restart a terminal
// one, re-drive a poisoned one). The error's text names the state found.
var ErrInvalidState = errors.New("durable: instance is not in a state that allows the operation")

// RewindOptions configures Client.Rewind.
type RewindOptions struct {
	// Reason is logged by the runtime that rewinds the instance.
	Reason string
}

// RestartOptions configures Client.Restart.
type RestartOptions struct {
	// Input replaces the restarted execution's input, encoded with the
	// typed codec; nil keeps that execution's input.
	Input any
	// Version pins an exact version of the orchestration; "" lets the
	// registry's policy choose, as for a new start.
	Version string
}

// Rewind makes a failed instance run its failed work again while keeping
// every result it has: the runtime starts a new execution whose history
// is the failed one's up to the failures the orchestration did not move
// on from, issues the activities, timers and sub-orchestrations that
// history leaves open again (a failed child is rewound too), and replays.
// Earlier executions are kept. Deploy the fixed code first: the new
// execution replays the kept history, so the fix must not change the
// calls made before the failure (dispatch_rewind_plan.go documents the exact rule).
//
// The call enqueues the request and returns; the instance's status says
// Running once a runtime has rewound it. An instance that does not exist
// is ErrInstanceNotFound; one that did not fail is ErrInvalidState.
// Repeating the call before the rewind happened rewinds once; a Rewind,
// Redrive or Restart of the same execution after it is ErrInvalidState
// (on a provider that is a duroxide.NextExecutionWriter; otherwise the
// runtime drops the later request). KV changes made after the cut are
// not rolled back.
func (c *Client) Rewind(ctx context.Context, instance string, opts RewindOptions) error {
	ctx, end := c.tel.clientSpan(ctx, "rewind_instance", instance)
	err := c.rewind(ctx, instance, opts.Reason, false)
	end(err)
	return err
}

// Redrive makes a poisoned instance eligible again once the code is
// fixed. An orchestration whose own messages exceeded MaxAttempts
// (Poison of kind Orchestration) continues as a new execution with its
// whole history and receives those messages again, with fresh attempt
// counts; one failed by a poisoned activity is rewound (Rewind), which
// runs the activity again. An instance that does not exist is
// ErrInstanceNotFound; one that is not failed, or failed without a
// poison failure, is ErrInvalidState.
func (c *Client) Redrive(ctx context.Context, instance string) error {
	ctx, end := c.tel.clientSpan(ctx, "redrive_instance", instance)
	err := c.rewind(ctx, instance, "redrive", true)
	end(err)
	return err
}

func (c *Client) rewind(ctx context.Context, instance, reason string, redrive bool) error {
	op := "rewind"
	if redrive {
		op = "redrive"
	}
	hist, err := c.latestHistory(ctx, instance, op)
	if err != nil {
		return err
	}
	if _, failed := terminalFailure(hist); !failed {
		return fmt.Errorf("%w: %s needs a failed instance; %s is %s", ErrInvalidState, op, instance, stateOf(hist))
	}
	if redrive && !poisoned(hist) {
		return fmt.Errorf("%w: redrive needs a poisoned instance; %s failed without a poison failure (use Rewind)", ErrInvalidState, instance)
	}
	exec := hist[0].ExecutionID
	var item duroxide.WorkItem = duroxide.RewindInstanceItem{Instance: instance, ExecutionID: exec, Reason: reason}
	if redrive {
		item = duroxide.RedriveInstanceItem{Instance: instance, ExecutionID: exec, Reason: reason}
	}
	// Keyed by the execution: a retried call is one request.
	return claimed(c.enqueueNextExecution(ctx, item, exec, op+"@"+strconv.FormatUint(exec, 10)), op, instance, exec)
}

// claimed turns the refusal of a request whose execution's successor
// another request already started into ErrInvalidState.
func claimed(err error, op, instance string, exec uint64) error {
	if errors.Is(err, duroxide.ErrStaleExecution) {
		return fmt.Errorf("%w: %s of %s: another request already started the execution after %d", ErrInvalidState, op, instance, exec)
	}
	return err
}

// Restart starts a terminal instance (completed, failed or cancelled)
// again from the beginning as a new execution, with the input of the
// execution that ended unless opts gives another, and the same
// orchestration name; earlier executions are kept. A sub-orchestration
// keeps its parent link. An instance that does not exist is
// ErrInstanceNotFound; a running one is ErrInvalidState. Repeating the
// call before the restart happened restarts once; a restart of an
// execution whose successor another request (a Rewind, a start with
// IDReuseAllowTerminal) already started is ErrInvalidState.
func (c *Client) Restart(ctx context.Context, instance string, opts RestartOptions) error {
	var version *string
	if opts.Version != "" {
		if _, err := duroxide.ParseSemVer(opts.Version); err != nil {
			return &InputError{Op: "restart", Reason: err.Error()}
		}
		version = &opts.Version
	}
	ctx, end := c.tel.clientSpan(ctx, "restart_instance", instance)
	err := c.restart(ctx, instance, opts.Input, version)
	end(err)
	return err
}

func (c *Client) restart(ctx context.Context, instance string, input any, version *string) error {
	hist, err := c.latestHistory(ctx, instance, "restart")
	if err != nil {
		return err
	}
	started, state := lastExecution(hist)
	if state != "Completed" && state != "Failed" {
		return fmt.Errorf("%w: restart needs a terminal instance; %s is %s", ErrInvalidState, instance, state)
	}
	if started == nil {
		return fmt.Errorf("%w: %s has no OrchestrationStarted to restart from", ErrInvalidState, instance)
	}
	raw := started.Input
	if input != nil {
		if raw, err = Encode(input); err != nil {
			return &InputError{Op: "restart", Reason: "encode input: " + err.Error()}
		}
	}
	if err := c.checkRegistered(started.Name, version); err != nil {
		return err
	}
	// A restart is the continue-as-new item duroxide's runtime already
	// turns into a new execution of a terminal instance; RestartOf names
	// the execution it replaces, so that the runtime drops it should
	// another execution have started meanwhile.
	exec := hist[0].ExecutionID
	item := duroxide.ContinueAsNewItem{Instance: instance, Orchestration: started.Name, Input: raw, Version: version,
		CarryForwardEvents: []duroxide.CarryForwardEvent{}, RestartOf: &exec}
	if started.ParentInstance != nil && started.ParentID != nil {
		item.ParentInstance, item.ParentID, item.ParentExecutionID = started.ParentInstance, started.ParentID, started.ParentExecutionID
	}
	return claimed(c.enqueueNextExecution(ctx, item, exec, "restart@"+strconv.FormatUint(exec, 10)), "restart", instance, exec)
}

// latestHistory reads instance's latest execution: ErrInstanceNotFound
// when it does not exist, ErrInvalidState when it has not started yet.
func (c *Client) latestHistory(ctx context.Context, instance, op string) ([]duroxide.Event, error) {
	if instance == "" {
		return nil, &InputError{Op: op, Reason: "instance must not be empty"}
	}
	hist, err := c.p.Read(ctx, instance)
	if err != nil {
		return nil, err
	}
	if len(hist) > 0 {
		return hist, nil
	}
	// Without a ClientWriter a queued start cannot be told from nothing:
	// either way there is nothing to operate on.
	exists := false
	if w, ok := c.p.(duroxide.ClientWriter); ok {
		if exists, err = w.InstanceExists(ctx, instance); err != nil {
			return nil, err
		}
	}
	if !exists {
		return nil, fmt.Errorf("%w: %s", ErrInstanceNotFound, instance)
	}
	return nil, fmt.Errorf("%w: %s needs a started instance; %s has not started yet", ErrInvalidState, op, instance)
}

// stateOf names the state history ends in, for error messages.
func stateOf(hist []duroxide.Event) string {
	_, state := lastExecution(hist)
	return state
}

// lastExecution finds history's last OrchestrationStarted (nil if none)
// and names the state its execution ended in: Completed, Failed,
// ContinuedAsNew, or Running when no terminal event follows it.
func lastExecution(hist []duroxide.Event) (*duroxide.OrchestrationStarted, string) {
	var started *duroxide.OrchestrationStarted
	state := "Running"
	for _, e := range hist {
		switch k := e.Kind.(type) {
		case duroxide.OrchestrationStarted:
			started, state = &k, "Running"
		case duroxide.OrchestrationCompleted:
			state = "Completed"
		case duroxide.OrchestrationFailed:
			state = "Failed"
		case duroxide.OrchestrationContinuedAsNew:
			state = "ContinuedAsNew"
		}
	}
	return started, state
}

// ErrSuspensionNotSupported: the provider cannot suspend instances (it
// is not a duroxide.SuspensionReader).
var ErrSuspensionNotSupported = errors.New("durable: the provider does not support suspending instances")

// Suspend stops a running instance from taking turns: once a runtime has
// taken the request the instance's status is Suspended (with reason),
// and the events, completions and fired timers that arrive for it wait,
// in order, until Resume. Activities already running finish and their
// results wait too. A suspension is stored with the instance, so it
// outlasts the processes. Cancelling a suspended instance ends it. The
// suspension is the running execution's: a continue-as-new passes it to
// the next execution, and an instance that ends (cancelled, or failed as
// poison when resumed) is no longer suspended.
// An instance that does not exist is ErrInstanceNotFound; one that ended
// or is already Suspended is ErrInvalidState; a provider that cannot
// suspend is ErrSuspensionNotSupported.
func (c *Client) Suspend(ctx context.Context, instance, reason string) error {
	ctx, end := c.tel.clientSpan(ctx, "suspend_instance", instance)
	err := c.changeSuspension(ctx, instance, true, reason)
	end(err)
	return err
}

// Resume lets a Suspended instance take turns again: the next turn
// receives everything that waited. An instance that does not exist is
// ErrInstanceNotFound; one that is not Suspended is ErrInvalidState.
func (c *Client) Resume(ctx context.Context, instance, reason string) error {
	ctx, end := c.tel.clientSpan(ctx, "resume_instance", instance)
	err := c.changeSuspension(ctx, instance, false, reason)
	end(err)
	return err
}

func (c *Client) changeSuspension(ctx context.Context, instance string, suspend bool, reason string) error {
	op := "resume"
	if suspend {
		op = "suspend"
	}
	sr, ok := c.p.(duroxide.SuspensionReader)
	if !ok {
		return ErrSuspensionNotSupported
	}
	hist, err := c.latestHistory(ctx, instance, op)
	if err != nil {
		return err
	}
	if state := stateOf(hist); state != "Running" {
		return fmt.Errorf("%w: %s needs a running instance; %s is %s", ErrInvalidState, op, instance, state)
	}
	suspended, _, err := sr.Suspension(ctx, instance)
	switch {
	case err != nil:
		return err
	case suspend && suspended:
		return fmt.Errorf("%w: %s is already Suspended", ErrInvalidState, instance)
	case !suspend && !suspended:
		return fmt.Errorf("%w: resume needs a Suspended instance; %s is not suspended", ErrInvalidState, instance)
	}
	var item duroxide.WorkItem = duroxide.ResumeInstanceItem{Instance: instance, Reason: reason}
	if suspend {
		item = duroxide.SuspendInstanceItem{Instance: instance, Reason: reason}
	}
	return c.enqueueFor(ctx, item, nil)
}
