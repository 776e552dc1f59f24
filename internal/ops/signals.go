package ops

import (
	"context"
	"fmt"
	"time"

	"github.com/duroxide-go/cdb/durable"
)

// SignalStartRequest is the input of SignalWithStart: the message (Action
// is ActionRaise for an event, ActionEnqueue for a queue message) and the
// start used when the instance does not exist.
type SignalStartRequest struct {
	Instance string
	Action   Action
	// Name is the event or queue name; Data its payload, stored as given.
	Name, Data string
	// Orchestration, Version and Input start the instance (Input stored
	// as given).
	Orchestration, Version, Input string
}

// SignalWithStart delivers r's message to r.Instance, starting it first
// when it does not exist (durable.Client.SignalWithStart), and reports
// whether it started it.
func (s *Service) SignalWithStart(ctx context.Context, r SignalStartRequest) (started bool, err error) {
	if r.Instance == "" {
		return false, fmt.Errorf("%w: empty instance id", durable.ErrInvalidInput)
	}
	sig := durable.Signal{Data: r.Data}
	switch r.Action {
	case ActionRaise:
		sig.Event = r.Name
	case ActionEnqueue:
		sig.Queue = r.Name
	default:
		return false, fmt.Errorf("%w: signal-with-start raises or enqueues, not %q", durable.ErrInvalidInput, r.Action)
	}
	if r.Name == "" {
		return false, fmt.Errorf("%w: %s needs a name", durable.ErrInvalidInput, r.Action)
	}
	return s.c.SignalWithStart(ctx, r.Instance, r.Orchestration, r.Input, sig, durable.StartOptions{Version: r.Version})
}

// UpdateRequest is the input of Update.
type UpdateRequest struct {
	Instance, Name string
	// Data is the request, stored as given.
	Data string
	// ID makes a retry return the first call's answer (durable.UpdateOptions.ID).
	ID string
	// Timeout bounds the wait for the answer; 0 waits as long as ctx.
	Timeout time.Duration
}

// Update sends an update and returns the instance's answer as stored
// (durable.Update); a refusal, a failed handler or an instance that ends
// first is a *durable.UpdateError.
func (s *Service) Update(ctx context.Context, r UpdateRequest) (string, error) {
	if r.Instance == "" || r.Name == "" {
		return "", fmt.Errorf("%w: update needs an instance and an update name", durable.ErrInvalidInput)
	}
	return durable.Update[string](ctx, s.c, r.Instance, r.Name, r.Data, durable.UpdateOptions{ID: r.ID, Timeout: r.Timeout})
}
