package durable

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// Giving locked items back. Every abandon the runtime makes goes through
// abandon or abandonRetrying, so a give-back that fails is logged once,
// with the instance and the cause: the item then stays locked until its
// lock (and the store's clock-skew margin) passes and its attempt may be
// counted, which an operator otherwise could not explain.

// abandon gives the item locked by token on queue q back to the provider,
// visible again after delay; ignoreAttempt leaves its attempt uncounted.
func (rt *Runtime) abandon(q duroxide.Queue, instance, token string, delay time.Duration, ignoreAttempt bool) {
	rt.noteAbandonFailure(q, instance, rt.abandonCall(q, token, delay, ignoreAttempt)())
}

// abandonRetrying is abandon, retrying transient failures for up to
// within (one lock timeout): used where the fault that made the runtime
// give up often lasts a while, and an abandon that does not get through
// leaves the item locked until its lock passes, its attempt counted. A
// retry cannot release the item twice: the abandon is fenced by
// the lock, which the first release ends.
func (rt *Runtime) abandonRetrying(q duroxide.Queue, instance, token string, delay time.Duration, ignoreAttempt bool, within time.Duration) {
	limit := time.Now().Add(within)
	err := retryTransient(rt.ctx, func() time.Time { return limit }, rt.abandonCall(q, token, delay, ignoreAttempt))
	rt.noteAbandonFailure(q, instance, err)
}

// abandonCall returns the provider call that abandons token on q.
func (rt *Runtime) abandonCall(q duroxide.Queue, token string, delay time.Duration, ignoreAttempt bool) func() error {
	if q == duroxide.WorkerQueue {
		return func() error { return rt.p.AbandonWorkItem(rt.ctx, token, delay, ignoreAttempt) }
	}
	return func() error { return rt.p.AbandonOrchestrationItem(rt.ctx, token, delay, ignoreAttempt) }
}

// noteAbandonFailure logs a failed abandon (err nil: nothing), never its
// lock token. Two failures are expected and logged at Debug only: one cut
// short by Shutdown (the lock expires and the item runs again) and one
// whose lock was already gone (expired or taken over: nothing of ours is
// left to give back).
func (rt *Runtime) noteAbandonFailure(q duroxide.Queue, instance string, err error) {
	if err == nil {
		return
	}
	level := slog.LevelWarn
	if rt.ctx.Err() != nil || errors.Is(err, duroxide.ErrLockLost) {
		level = slog.LevelDebug
	}
	rt.log.Log(context.Background(), level, "abandoning a locked item failed; it stays locked until its lock expires",
		"queue", q.String(), "instance_id", instance, "error", err)
}
