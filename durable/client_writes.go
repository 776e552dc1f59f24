package durable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// startInstance enqueues a client start through the provider's
// ClientWriter (atomic existence check) when it has one.
func (c *Client) startInstance(ctx context.Context, item duroxide.StartOrchestrationItem, o StartOptions) error {
	if !o.StartAt.IsZero() {
		return c.startDelayed(ctx, item, o)
	}
	w, ok := c.p.(duroxide.ClientWriter)
	if !ok {
		return c.enqueue(ctx, item)
	}
	err := w.StartInstance(ctx, item, o.IdempotencyKey)
	if errors.Is(err, duroxide.ErrInstanceExists) && o.IDReuse == IDReuseAllowTerminal {
		return c.restartTerminal(ctx, item, o, err)
	}
	if err != nil {
		return err
	}
	c.wake(duroxide.OrchestratorQueue, item.InstanceID())
	return nil
}

// startDelayed is a start whose message becomes visible at o.StartAt
// (duroxide.DelayedStartWriter). It notes the start time for Status's
// Waiting, best effort: the note is a hint, the start is what counts.
func (c *Client) startDelayed(ctx context.Context, item duroxide.StartOrchestrationItem, o StartOptions) error {
	w, ok := c.p.(duroxide.DelayedStartWriter)
	if !ok {
		return &InputError{Op: "start orchestration", Reason: "StartOptions.StartAt needs a provider with duroxide.DelayedStartWriter"}
	}
	if err := w.StartInstanceAt(ctx, item, o.IdempotencyKey, o.StartAt); err != nil {
		return err
	}
	if n, ok := c.p.(duroxide.PendingNoter); ok {
		_ = n.NotePending(ctx, item.Instance, scheduledNote(o.StartAt))
	}
	c.wake(duroxide.OrchestratorQueue, item.Instance)
	return nil
}

// scheduledNote is the Waiting text of a delayed start.
func scheduledNote(at time.Time) string {
	return "scheduled to start at " + at.UTC().Format(time.RFC3339Nano)
}

// restartTerminal starts a new execution of a terminal instance
// (IDReuseAllowTerminal); exists is returned for a running one, and for
// one whose next execution another request already started.
func (c *Client) restartTerminal(ctx context.Context, item duroxide.StartOrchestrationItem, o StartOptions, exists error) error {
	hist, err := c.p.Read(ctx, item.Instance)
	if err != nil {
		return err
	}
	if _, state := lastExecution(hist); len(hist) == 0 || (state != "Completed" && state != "Failed") {
		return exists
	}
	ended := hist[0].ExecutionID
	err = c.enqueueNextExecution(ctx, duroxide.ContinueAsNewItem{Instance: item.Instance, Orchestration: item.Orchestration,
		Input: item.Input, Version: item.Version, CarryForwardEvents: []duroxide.CarryForwardEvent{}, RestartOf: &ended},
		ended, restartKey(o.IdempotencyKey))
	if errors.Is(err, duroxide.ErrStaleExecution) {
		return exists
	}
	return err
}

// enqueueNextExecution enqueues item, a request that starts the execution
// after the terminal execution ended, through the provider's
// NextExecutionWriter when it has one, so that of two requests for it
// exactly one is accepted (the other is duroxide.ErrStaleExecution).
// Without one the request goes through enqueueFor and the runtime drops
// it if it comes too late.
func (c *Client) enqueueNextExecution(ctx context.Context, item duroxide.WorkItem, ended uint64, key string) error {
	w, ok := c.p.(duroxide.NextExecutionWriter)
	if !ok {
		return c.enqueueFor(ctx, item, []EventOptions{{IdempotencyKey: key}})
	}
	if err := w.EnqueueNextExecution(ctx, item, ended, key); err != nil {
		return err
	}
	c.wake(duroxide.OrchestratorQueue, item.InstanceID())
	return nil
}

// restartKey keys a restart apart from the start that shares its key.
func restartKey(key string) string {
	if key == "" {
		return ""
	}
	return "restart:" + key
}

// enqueueFor enqueues a client message for an existing instance through
// the provider's ClientWriter when it has one: ErrInstanceNotFound for a
// missing instance, and at most one delivery per idempotency key.
func (c *Client) enqueueFor(ctx context.Context, item duroxide.WorkItem, opts []EventOptions) error {
	w, ok := c.p.(duroxide.ClientWriter)
	if !ok {
		return c.enqueue(ctx, item)
	}
	key := ""
	if len(opts) > 0 {
		key = opts[len(opts)-1].IdempotencyKey
	}
	if err := w.EnqueueForInstance(ctx, item, key); err != nil {
		return err
	}
	c.wake(duroxide.OrchestratorQueue, item.InstanceID())
	return nil
}

// checkRegistered refuses a start of an orchestration the client's
// registry does not have (no registry: nothing to check).
func (c *Client) checkRegistered(orchestration string, version *string) error {
	if c.reg == nil {
		return nil
	}
	ok := false
	if version != nil {
		_, _, ok = c.reg.resolveOrchestrationExact(orchestration, *version)
	} else {
		_, _, ok = c.reg.resolveOrchestration(orchestration)
	}
	if ok {
		return nil
	}
	v := "any version"
	if version != nil {
		v = "version " + *version
	}
	return fmt.Errorf("%w: %s (%s) is not in the client's registry", ErrNotRegistered, orchestration, v)
}

// notFoundIfMissing turns an empty answer about instance into
// ErrInstanceNotFound when the instance does not exist (providers report
// an unknown instance's reads as empty, not as an error).
func (c *Client) notFoundIfMissing(ctx context.Context, instance string) error {
	exists, err := c.instanceExists(ctx, instance)
	if err != nil || exists {
		return err
	}
	return fmt.Errorf("%w: %s", ErrInstanceNotFound, instance)
}

// instanceExists asks the provider's ClientWriter; without one an
// instance is assumed to exist (the provider cannot tell a queued start
// from nothing), so reads keep their empty answers.
func (c *Client) instanceExists(ctx context.Context, instance string) (bool, error) {
	if w, ok := c.p.(duroxide.ClientWriter); ok {
		return w.InstanceExists(ctx, instance)
	}
	return true, nil
}

// pendingNote is the runtime's note on why a started instance has not run
// (best effort, like the custom status: "" on any error).
func (c *Client) pendingNote(ctx context.Context, instance string) string {
	n, ok := c.p.(duroxide.PendingNoter)
	if !ok {
		return ""
	}
	note, err := n.PendingNote(ctx, instance)
	if err != nil {
		return ""
	}
	return note
}

// wake tells the runtime c belongs to, if any, that q may have work:
// through the func that runtime gave it (runtimeWake), so the client
// refers to nothing in dispatch.
func (c *Client) wake(q duroxide.Queue, instance string) {
	if c.runtimeWake != nil {
		c.runtimeWake(q, instance)
	}
}
