package durable

import (
	"context"
	"errors"

	"github.com/duroxide-go/cdb/duroxide"
)

// ErrSignalWithStartNotSupported: the provider has no ClientWriter, so it
// cannot tell an existing instance from a new one and SignalWithStart
// cannot promise one instance.
var ErrSignalWithStartNotSupported = errors.New("durable: the provider does not support signal-with-start (no duroxide.ClientWriter)")

// Signal is the message SignalWithStart delivers: an external event (as
// RaiseEvent sends) or a persistent queue message (as EnqueueEvent).
type Signal struct {
	// Event names the external event; Queue the persistent queue. Set
	// exactly one. A queue message waits for its DequeueEvent however
	// early it comes; an event reaches only a WaitEvent pending when it
	// arrives, so a signal that starts an instance is usually a Queue.
	Event, Queue string
	// Data is encoded with the typed codec.
	Data any
	// IdempotencyKey makes a caller's retry deliver the message once (as
	// EventOptions.IdempotencyKey).
	IdempotencyKey string
}

// SignalWithStart delivers sig to instance, starting it first (running
// orchestration with input, as StartOrchestration would) if no instance
// with that id exists. Start and message are one atomic write when the
// provider is a duroxide.SignalStarter (memprovider and the Cosmos
// provider, where it is one transactional batch in the instance's
// partition), so of concurrent callers exactly one starts the instance
// and every caller's message is delivered once. An instance that exists,
// in any state, only gets the message (an ended one drains it unread);
// StartOptions.IDReuse does not apply. started reports whether this call
// started the instance (on a provider with ClientWriter alone, start and
// message are two writes and concurrent identical calls may each report
// true; still one instance gets every message).
func (c *Client) SignalWithStart(ctx context.Context, instance, orchestration string, input any, sig Signal, opts ...StartOptions) (started bool, err error) {
	start, msg, err := c.signalItems(instance, orchestration, input, sig, lastOption(opts))
	if err != nil {
		return false, err
	}
	ctx, end := c.tel.clientSpan(ctx, "signal_with_start", instance, attrOrchestation.String(orchestration))
	started, err = c.signalWithStart(ctx, start, lastOption(opts).IdempotencyKey, msg, sig.IdempotencyKey)
	end(err)
	return started, err
}

// signalItems checks SignalWithStart's arguments and builds its start
// and message.
func (c *Client) signalItems(instance, orchestration string, input any, sig Signal, o StartOptions) (duroxide.StartOrchestrationItem, duroxide.WorkItem, error) {
	const op = "signal with start"
	var start duroxide.StartOrchestrationItem
	if instance == "" || orchestration == "" {
		return start, nil, &InputError{Op: op, Reason: "instance and orchestration names must not be empty"}
	}
	if (sig.Event == "") == (sig.Queue == "") {
		return start, nil, &InputError{Op: op, Reason: "Signal needs exactly one of Event and Queue"}
	}
	var version *string
	if o.Version != "" {
		if _, err := duroxide.ParseSemVer(o.Version); err != nil {
			return start, nil, &InputError{Op: op, Reason: err.Error()}
		}
		version = &o.Version
	}
	if err := c.checkRegistered(orchestration, version); err != nil {
		return start, nil, err
	}
	in, err := Encode(input)
	if err != nil {
		return start, nil, &InputError{Op: op, Reason: "encode input: " + err.Error()}
	}
	data, err := Encode(sig.Data)
	if err != nil {
		return start, nil, &InputError{Op: op, Reason: "encode data: " + err.Error()}
	}
	start = duroxide.StartOrchestrationItem{Instance: instance, Orchestration: orchestration, Input: in, Version: version, ExecutionID: initialExecutionID}
	if sig.Queue != "" {
		return start, duroxide.QueueMessageItem{Instance: instance, Name: sig.Queue, Data: data}, nil
	}
	return start, duroxide.ExternalRaisedItem{Instance: instance, Name: sig.Event, Data: data}, nil
}

// signalWithStart writes start and msg through the provider's
// SignalStarter, else as a start and an enqueue through its ClientWriter:
// each of those is atomic and the start is accepted before the message is
// written, so concurrent callers still get one instance and every
// message, but a caller that fails between the two has started the
// instance without its message (its retry delivers it), and started may
// be true for more than one of concurrent identical calls.
func (c *Client) signalWithStart(ctx context.Context, start duroxide.StartOrchestrationItem, startKey string, msg duroxide.WorkItem, msgKey string) (bool, error) {
	if s, ok := c.p.(duroxide.SignalStarter); ok {
		started, err := s.SignalWithStart(ctx, start, startKey, msg, msgKey)
		if err == nil {
			c.wake(duroxide.OrchestratorQueue, start.Instance)
		}
		return started, err
	}
	w, ok := c.p.(duroxide.ClientWriter)
	if !ok {
		return false, ErrSignalWithStartNotSupported
	}
	exists, err := w.InstanceExists(ctx, start.Instance)
	if err != nil {
		return false, err
	}
	started := false
	if !exists {
		// An identical start that raced in since is accepted as a retry,
		// so here started may be true for more than one caller.
		err = w.StartInstance(ctx, start, startKey)
		started = err == nil
		if errors.Is(err, duroxide.ErrInstanceExists) {
			err = nil
		}
		if err != nil {
			return false, err
		}
	}
	if err := w.EnqueueForInstance(ctx, msg, msgKey); err != nil {
		return started, err
	}
	c.wake(duroxide.OrchestratorQueue, start.Instance)
	return started, nil
}
