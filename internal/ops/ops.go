// Package ops is the operations layer the duroxide CLI and the web
// dashboard share: search, inspect and act on instances through a
// durable.Client.
//
// Start with [New], which wraps a durable.Client in a [Service]: the
// command line and the dashboard each hold one.
//
// It is the one place where those tools meet the Client, so that the
// Client's operations reach both tools at once: search, the bulk cancel
// and purge (Search, CancelMany, DeleteMany), and the lifecycle calls
// (Suspend, Resume, Rewind, Restart, Redrive).
package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// ErrNotSupported is matched (errors.Is) by an operation this version
// cannot perform: raise and enqueue in bulk, and suspend and resume on a
// provider that cannot suspend instances (durable.ErrSuspensionNotSupported
// is matched too).
var ErrNotSupported = errors.New("not supported by this version")

// Action names an operation on one instance.
type Action string

// The actions.
const (
	ActionCancel  Action = "cancel"
	ActionRaise   Action = "raise"
	ActionEnqueue Action = "enqueue"
	ActionSuspend Action = "suspend"
	ActionResume  Action = "resume"
	// ActionRewind runs a failed instance's failed work again, keeping
	// every successful result (durable.Client.Rewind).
	ActionRewind Action = "rewind"
	// ActionRestart starts a terminal instance again from the beginning
	// as a new execution (durable.Client.Restart).
	ActionRestart Action = "restart"
	// ActionRedrive delivers a poisoned instance's work again once the
	// code is fixed (durable.Client.Redrive).
	ActionRedrive Action = "redrive"
	ActionPurge   Action = "purge"
)

// Actions lists every Action in the order tools show them.
var Actions = []Action{ActionCancel, ActionRaise, ActionEnqueue, ActionSuspend, ActionResume, ActionRewind, ActionRestart,
	ActionRedrive, ActionPurge}

// ParseAction returns the Action named s.
func ParseAction(s string) (Action, bool) {
	for _, a := range Actions {
		if string(a) == s {
			return a, true
		}
	}
	return "", false
}

// Request is the input of an action; which fields matter depends on it.
type Request struct {
	// Reason is the reason of a cancel, suspend, resume or rewind.
	Reason string
	// Name is the event name (raise) or queue name (enqueue).
	Name string
	// Data is the event's or message's payload, stored as given.
	Data string
	// Force purges a running instance too.
	Force bool
	// Input, when set, replaces a restarted instance's input (stored as
	// given); nil keeps the input of the execution that ended.
	Input *string
	// Version pins the version a restart runs ("" lets the registry
	// choose, as for a new start).
	Version string
}

// Service performs operations through a durable.Client.
type Service struct {
	c *durable.Client
}

// New returns a Service over c.
func New(c *durable.Client) *Service { return &Service{c: c} }

// Do performs a on instance.
func (s *Service) Do(ctx context.Context, instance string, a Action, r Request) error {
	if instance == "" {
		return fmt.Errorf("%w: empty instance id", durable.ErrInvalidInput)
	}
	switch a {
	case ActionCancel:
		// The client accepts a cancel of an ended instance, which the
		// runtime then drops: a person asking for one is told instead.
		if st, err := s.c.Status(ctx, instance); err == nil && st.IsTerminal() {
			return fmt.Errorf("%w: cancel needs a running instance; %s already ended (%s)", durable.ErrInvalidState, instance, endedState(st))
		}
		return s.c.CancelInstance(ctx, instance, r.Reason)
	case ActionRaise:
		if r.Name == "" {
			return fmt.Errorf("%w: raise needs an event name", durable.ErrInvalidInput)
		}
		return s.c.RaiseEvent(ctx, instance, r.Name, r.Data)
	case ActionEnqueue:
		if r.Name == "" {
			return fmt.Errorf("%w: enqueue needs a queue name", durable.ErrInvalidInput)
		}
		return s.c.EnqueueEvent(ctx, instance, r.Name, r.Data)
	case ActionPurge:
		_, err := s.c.DeleteInstance(ctx, instance, durable.DeleteOptions{Force: r.Force})
		return err
	case ActionSuspend:
		return notSupported(s.c.Suspend(ctx, instance, r.Reason))
	case ActionResume:
		return notSupported(s.c.Resume(ctx, instance, r.Reason))
	case ActionRewind:
		return s.c.Rewind(ctx, instance, durable.RewindOptions{Reason: r.Reason})
	case ActionRestart:
		o := durable.RestartOptions{Version: r.Version}
		if r.Input != nil {
			o.Input = *r.Input // a string is stored as given
		}
		return s.c.Restart(ctx, instance, o)
	case ActionRedrive:
		return s.c.Redrive(ctx, instance)
	}
	return fmt.Errorf("%w: unknown action %q", durable.ErrInvalidInput, a)
}

// endedState names how a terminal instance ended: Completed, Failed or
// Cancelled.
func endedState(st *durable.OrchestrationStatus) string {
	if st.State == durable.StateFailed && strings.HasPrefix(st.FailureMessage(), "canceled: ") {
		return "Cancelled"
	}
	return st.State.String()
}

// PurgePlan returns the ids a purge of instance (Do with ActionPurge)
// would delete, the instance first and then its sub-orchestrations, and
// deletes nothing. The refusals are the purge's: ErrInstanceNotFound,
// durable.ErrCannotDeleteSubOrchestration for a sub-orchestration, and,
// without force, durable.ErrInstanceStillRunning when any of them is
// running.
func (s *Service) PurgePlan(ctx context.Context, instance string, force bool) ([]string, error) {
	if instance == "" {
		return nil, fmt.Errorf("%w: empty instance id", durable.ErrInvalidInput)
	}
	info, err := s.c.InstanceInfo(ctx, instance)
	if err != nil {
		return nil, err
	}
	if info.ParentInstanceID != nil && *info.ParentInstanceID != "" {
		return nil, fmt.Errorf("%w: %s is a sub-orchestration of %s: purge its root instead", durable.ErrCannotDeleteSubOrchestration,
			instance, *info.ParentInstanceID)
	}
	tree, err := s.c.InstanceTree(ctx, instance)
	if err != nil {
		return nil, err
	}
	if !force {
		if id, ok := s.RunningInTree(ctx, instance); ok {
			return nil, fmt.Errorf("%w: instance %q is running", durable.ErrInstanceStillRunning, id)
		}
	}
	ids := []string{instance}
	for _, id := range tree.AllIDs {
		if id != instance {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// RunningInTree returns the first instance of instance's tree (instance
// itself, then its sub-orchestrations) that is running, which a purge
// without force refuses; ok is false when none is, or the tree cannot be
// read.
func (s *Service) RunningInTree(ctx context.Context, instance string) (id string, ok bool) {
	tree, err := s.c.InstanceTree(ctx, instance)
	if err != nil {
		return "", false
	}
	ids := append([]string{instance}, tree.AllIDs...)
	for _, id := range ids {
		info, err := s.c.InstanceInfo(ctx, id)
		if err == nil && info.Status == duroxide.StatusRunning {
			return id, true
		}
	}
	return "", false
}

// StartRequest is the input of Start.
type StartRequest struct {
	Instance, Orchestration, Version, Input string
}

// Start starts an instance; Input is stored as given.
func (s *Service) Start(ctx context.Context, r StartRequest) error {
	return s.c.StartOrchestration(ctx, r.Instance, r.Orchestration, r.Input, durable.StartOptions{Version: r.Version})
}

// notSupported adds ErrNotSupported to a provider's refusal to suspend,
// so that tools answer it as they answer every unsupported operation.
func notSupported(err error) error {
	if errors.Is(err, durable.ErrSuspensionNotSupported) {
		return fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	return err
}
