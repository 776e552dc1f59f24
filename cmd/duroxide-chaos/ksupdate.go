package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/duroxide-go/cdb/durable"
)

// ksUpdateTimeout bounds one attempt at an update: a suspended instance
// answers only once resumed, and the operator's loop must not wait for
// that, so the next observation tries again with the same update ids.
const ksUpdateTimeout = time.Second

// ksServeUpdate serves the update wait p of inst: a request the
// validator must refuse, the request itself, and the event that tells
// the program the driver has its answer. done reports that the wait needs
// nothing more (served, or its run ended or moved on); wrong describes an
// answer that breaks the update contract.
func ksServeUpdate(ctx context.Context, c *durable.Client, inst string, p ksProgress) (done bool, wrong string) {
	data := ksUpdateData(inst, p.Run, p.Pos)
	name := ksUpdateName(p.Run, p.Pos)
	opts := durable.UpdateOptions{ID: "ks-bad/" + data, Timeout: ksUpdateTimeout}
	v, err := durable.Update[string](ctx, c, inst, name, "", opts)
	switch {
	case err == nil:
		return true, fmt.Sprintf("update %s: a request its validator refuses was answered %q", name, v)
	case !errors.Is(err, durable.ErrUpdateRejected):
		return ksUpdateEnded(err), ""
	}
	opts.ID = "ks/" + data
	v, err = durable.Update[string](ctx, c, inst, name, data, opts)
	switch {
	case errors.Is(err, durable.ErrUpdateRejected), errors.Is(err, durable.ErrUpdateFailed):
		return true, fmt.Sprintf("update %s: %v", name, err)
	case err != nil:
		return ksUpdateEnded(err), ""
	case v != ksUpdateAnswer(data):
		return true, fmt.Sprintf("update %s: answered %q, want %q", name, v, ksUpdateAnswer(data))
	}
	err = c.RaiseEvent(ctx, inst, ksUpdateDone(p.Run, p.Pos), data, durable.EventOptions{IdempotencyKey: "ks/" + data + "/done"})
	return err == nil || isRefusal(err), ""
}

// ksUpdateEnded reports whether err ends the serving of an update wait:
// the run ended, continued, was restarted or deleted before answering.
// A failed call or a timeout (a suspended instance) is tried again.
func ksUpdateEnded(err error) bool {
	return errors.Is(err, durable.ErrUpdateUnanswered) || errors.Is(err, durable.ErrUnknownUpdate) || isRefusal(err)
}
