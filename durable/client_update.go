package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/duroxide-go/cdb/duroxide"
)

// Update errors. Each is matched with errors.Is on the *UpdateError an
// Update returns.
var (
	// ErrUpdateRejected: the handler's validator refused the request;
	// nothing ran.
	ErrUpdateRejected = errors.New("durable: update rejected")
	// ErrUnknownUpdate: the instance has no handler of the update's name.
	ErrUnknownUpdate = errors.New("durable: no handler for the update")
	// ErrUpdateFailed: the handler ran and returned an error.
	ErrUpdateFailed = errors.New("durable: update failed")
	// ErrUpdateUnanswered: the instance ended (completed, failed, was
	// cancelled or deleted) or continued as new before it answered; an
	// accepted update's handler was stopped, and a request not yet taken
	// will never be.
	ErrUpdateUnanswered = errors.New("durable: the instance did not answer the update")
)

// UpdateError is an update that did not produce a result.
type UpdateError struct {
	// Kind is ErrUpdateRejected, ErrUnknownUpdate, ErrUpdateFailed or
	// ErrUpdateUnanswered.
	Kind               error
	Instance, ID, Name string
	// Reason is the validator's or handler's error text, or what ended
	// the wait.
	Reason string
	// Cause is what the wait met, if anything (ErrInstanceNotFound for a
	// deleted instance).
	Cause error
}

// Error implements error.
func (e *UpdateError) Error() string {
	return fmt.Sprintf("%v: update %q (%s) of %s: %s", e.Kind, e.ID, e.Name, e.Instance, e.Reason)
}

// Is matches Kind.
func (e *UpdateError) Is(target error) bool { return target == e.Kind }

// Unwrap returns Cause.
func (e *UpdateError) Unwrap() error { return e.Cause }

// UpdateOptions configures Update.
type UpdateOptions struct {
	// ID identifies the update across a caller's retries: an Update with
	// the ID of one the instance has answered returns that answer (its
	// result or error) and runs nothing, and one whose request is still
	// on its way or running waits for the same answer. "" = a fresh id,
	// which no retry can match. The instance keeps its last 64 answers.
	ID string
	// Start, when set, makes the call update-with-start: the instance is
	// started first if it does not exist, in the same atomic write as the
	// request (SignalWithStart).
	Start *UpdateStart
	// Timeout bounds the wait for the answer (ErrTimeout); 0 = ctx's.
	Timeout time.Duration
	// PollInterval fixes the time between reads (0: 5 ms doubling to
	// 100 ms).
	PollInterval time.Duration
}

// UpdateStart is the start of an update-with-start.
type UpdateStart struct {
	Orchestration string
	Input         any
	Options       StartOptions
}

// Update sends the update name with input (encoded with the typed codec)
// to instance and waits for the result its handler (SetUpdateHandler)
// returns, decoded into T. A refused request is an *UpdateError matching
// ErrUpdateRejected or ErrUnknownUpdate, a handler's error one matching
// ErrUpdateFailed, and an instance that ends, continues as new or is
// deleted before answering one matching ErrUpdateUnanswered. An instance
// that does not exist is ErrInstanceNotFound (unless UpdateOptions.Start
// starts it); a suspended one answers after it is resumed.
func Update[T any](ctx context.Context, c *Client, instance, name string, input any, opts ...UpdateOptions) (T, error) {
	var zero T
	raw, err := c.update(ctx, instance, name, input, lastOption(opts))
	if err != nil {
		return zero, err
	}
	return Decode[T](raw)
}

func (c *Client) update(ctx context.Context, instance, name string, input any, o UpdateOptions) (string, error) {
	const op = "update"
	if instance == "" || name == "" {
		return "", &InputError{Op: op, Reason: "instance and update names must not be empty"}
	}
	if o.Timeout < 0 || o.PollInterval < 0 {
		return "", &InputError{Op: op, Reason: "UpdateOptions.Timeout and PollInterval must not be negative"}
	}
	if o.ID == "" {
		o.ID = uuid.NewString()
	}
	in, err := Encode(input)
	if err != nil {
		return "", &InputError{Op: op, Reason: "encode input: " + err.Error()}
	}
	req, err := json.Marshal(updateRequest{ID: o.ID, Name: name, Input: in})
	if err != nil {
		return "", &InputError{Op: op, Reason: err.Error()}
	}
	ctx, end := c.tel.clientSpan(ctx, "update", instance)
	out, err := c.sendUpdate(ctx, instance, name, string(req), o)
	end(err)
	return out, err
}

// sendUpdate answers from the update's record if the instance has one,
// else sends the request (keyed by the update id, so retries send it
// once) and waits for the record's answer.
func (c *Client) sendUpdate(ctx context.Context, instance, name, req string, o UpdateOptions) (string, error) {
	key := updateKeyPrefix + o.ID
	if v, found, err := c.p.KVValue(ctx, instance, key); err != nil {
		return "", err
	} else if found {
		if rec, err := decodeUpdateRecord(v); err == nil && rec.answered() {
			return rec.answer(instance, o.ID)
		}
	}
	sig := Signal{Queue: updateQueue, Data: req, IdempotencyKey: "update:" + o.ID}
	if s := o.Start; s != nil {
		start, msg, err := c.signalItems(instance, s.Orchestration, s.Input, sig, s.Options)
		if err != nil {
			return "", err
		}
		if _, err := c.signalWithStart(ctx, start, s.Options.IdempotencyKey, msg, sig.IdempotencyKey); err != nil {
			return "", err
		}
	} else if err := c.EnqueueEvent(ctx, instance, sig.Queue, sig.Data, EventOptions{IdempotencyKey: sig.IdempotencyKey}); err != nil {
		return "", err
	}
	return c.awaitUpdate(ctx, instance, name, o)
}

// awaitUpdate polls the update's record until it holds an answer, or
// the instance shows it never will.
func (c *Client) awaitUpdate(ctx context.Context, instance, name string, o UpdateOptions) (string, error) {
	key := updateKeyPrefix + o.ID
	unanswered := func(reason string, cause error) error {
		return &UpdateError{Kind: ErrUpdateUnanswered, Instance: instance, ID: o.ID, Name: name, Reason: reason, Cause: cause}
	}
	var out string
	var answer error
	err := c.poll(ctx, WaitOptions{Timeout: o.Timeout, PollInterval: o.PollInterval}, func() (bool, error) {
		// The status is read before the record: a record read after a
		// terminal status holds everything the instance will answer.
		st, exec, err := c.updateTarget(ctx, instance)
		if err != nil {
			return false, err
		}
		v, found, err := c.p.KVValue(ctx, instance, key)
		if err != nil {
			return false, err
		}
		var rec updateRecord
		if found {
			if rec, err = decodeUpdateRecord(v); err != nil {
				return false, fmt.Errorf("durable: update record %s of %s: %w", key, instance, err)
			}
			if rec.answered() {
				out, answer = rec.answer(instance, o.ID)
				return true, nil
			}
		}
		switch {
		case st.State == StateNotFound:
			if err := c.notFoundIfMissing(ctx, instance); err != nil {
				return false, unanswered("the instance was deleted", err)
			}
		case st.IsTerminal():
			return false, unanswered("the instance ended: "+st.State.String(), nil)
		case found && exec != nil && *exec > rec.Execution:
			return false, unanswered(fmt.Sprintf("execution %d continued as new before answering", rec.Execution), nil)
		}
		return false, nil
	})
	if err != nil {
		return "", err
	}
	return out, answer
}

// updateTarget is what a poll of an update needs to know of instance:
// its state and current execution. The instance summary
// (ProviderAdmin.InstanceInfo, one point read on Cosmos DB) says both
// once a turn has run; without it (no management, a start still queued,
// a deleted instance) the full status and the latest execution decide,
// which on Cosmos DB costs three requests more.
func (c *Client) updateTarget(ctx context.Context, instance string) (*OrchestrationStatus, *uint64, error) {
	if a := c.p.Admin(); a != nil {
		if info, err := a.InstanceInfo(ctx, instance); err == nil && info != nil && info.CurrentExecutionID > 0 {
			st := &OrchestrationStatus{State: StateRunning}
			switch info.Status {
			case duroxide.StatusCompleted:
				st.State = StateCompleted
			case duroxide.StatusFailed:
				st.State = StateFailed
			}
			exec := info.CurrentExecutionID
			return st, &exec, nil
		}
	}
	st, err := c.status(ctx, instance, false)
	if err != nil {
		return nil, nil, err
	}
	exec, err := c.currentExecution(ctx, instance)
	return st, exec, err
}

// answer is an answered record's result, or its error.
func (r updateRecord) answer(instance, id string) (string, error) {
	kind := map[string]error{updateRejected: ErrUpdateRejected, updateUnknown: ErrUnknownUpdate, updateFailed: ErrUpdateFailed}[r.State]
	if kind == nil {
		return r.Result, nil
	}
	return "", &UpdateError{Kind: kind, Instance: instance, ID: id, Name: r.Name, Reason: r.Error}
}

// UpdateInfo is one update an instance keeps a record of.
type UpdateInfo struct {
	ID, Name string
	// State is "accepted" (its handler is running, or was stopped by the
	// end of Execution), "completed", "failed", "rejected" or "unknown"
	// (no handler of the name).
	State string
	// Execution is the execution that accepted the update (0 when it was
	// refused).
	Execution uint64
	// Result is a completed update's encoded result; Error the text of a
	// failure or refusal.
	Result, Error string
}

// Updates lists the updates instance keeps records of (its last 64
// answered ones and those in flight), sorted by id. A missing instance
// is ErrInstanceNotFound.
func (c *Client) Updates(ctx context.Context, instance string) ([]UpdateInfo, error) {
	kv, err := c.KVValues(ctx, instance)
	if err != nil {
		return nil, err
	}
	out := []UpdateInfo{}
	for k, v := range kv {
		id, ok := strings.CutPrefix(k, updateKeyPrefix)
		if !ok {
			continue
		}
		r, err := decodeUpdateRecord(v)
		if err != nil {
			continue // not a record the runtime wrote
		}
		out = append(out, UpdateInfo{ID: id, Name: r.Name, State: r.State, Execution: r.Execution, Result: r.Result, Error: r.Error})
	}
	slices.SortFunc(out, func(a, b UpdateInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
