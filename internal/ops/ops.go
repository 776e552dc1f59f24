// Package ops is the operations layer the duroxide CLI and the web
// dashboard share: search, inspect and act on instances through a
// durable.Client.
//
// It is the one place where those tools meet the Client, so that the
// Client's operations reach both tools at once: search and the bulk
// cancel and purge are the Client's (Search, CancelMany, DeleteMany); the
// actions the Client does not offer yet (suspend, resume, rewind,
// restart, redrive) return ErrNotSupported.
package ops

import (
	"context"
	"errors"
	"fmt"

	"github.com/duroxide-go/cdb/durable"
)

// ErrNotSupported is matched (errors.Is) by an action this version of the
// Client cannot perform yet.
var ErrNotSupported = errors.New("not supported yet by this version of the client")

// Action names an operation on one instance.
type Action string

// The actions. Suspend, Resume, Rewind, Restart and Redrive return
// ErrNotSupported until the Client offers them.
const (
	ActionCancel  Action = "cancel"
	ActionRaise   Action = "raise"
	ActionEnqueue Action = "enqueue"
	ActionSuspend Action = "suspend"
	ActionResume  Action = "resume"
	ActionRewind  Action = "rewind"
	ActionRestart Action = "restart"
	// ActionRedrive delivers a poisoned instance's or message's work again
	// once the code is fixed.
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

// Supported reports whether a can be performed by this version.
func (a Action) Supported() bool {
	switch a {
	case ActionSuspend, ActionResume, ActionRewind, ActionRestart, ActionRedrive:
		return false
	}
	return true
}

// Request is the input of an action; which fields matter depends on it.
type Request struct {
	// Reason is the cancellation reason.
	Reason string
	// Name is the event name (raise) or queue name (enqueue).
	Name string
	// Data is the event's or message's payload, stored as given.
	Data string
	// Force purges a running instance too.
	Force bool
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
	case ActionSuspend, ActionResume, ActionRewind, ActionRestart, ActionRedrive:
		return fmt.Errorf("%s: %w", a, ErrNotSupported)
	}
	return fmt.Errorf("%w: unknown action %q", durable.ErrInvalidInput, a)
}

// StartRequest is the input of Start.
type StartRequest struct {
	Instance, Orchestration, Version, Input string
}

// Start starts an instance; Input is stored as given.
func (s *Service) Start(ctx context.Context, r StartRequest) error {
	return s.c.StartOrchestration(ctx, r.Instance, r.Orchestration, r.Input, durable.StartOptions{Version: r.Version})
}
