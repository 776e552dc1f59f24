package durable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// The dispatch side of activity heartbeats (activity_heartbeat.go has
// what activity code calls): renewals carry the details, a lost lock
// becomes the attempt's cause, a silent attempt fails.

// renewWithHeartbeat renews a work item's lock, carrying the attempt's
// unstored details when the provider records them. Details the store
// refuses as too large for the item (its input near the document limit)
// are dropped with a warning and the lock renewed without them: losing a
// resume point must not cost the attempt its lock.
func (rt *Runtime) renewWithHeartbeat(ctx context.Context, h *heartbeatState, token string, extend time.Duration) error {
	rec, ok := rt.p.(duroxide.HeartbeatRecorder)
	if h == nil || !ok {
		return rt.p.RenewWorkItemLock(ctx, token, extend)
	}
	details, seq, unsent := h.pending()
	if !unsent {
		return rt.p.RenewWorkItemLock(ctx, token, extend)
	}
	err := rec.RenewWorkItemLockWithDetails(ctx, token, extend, details)
	if errors.Is(err, duroxide.ErrTooLarge) {
		rt.log.Warn("heartbeat details refused by the store; renewing the lock without them", "error", err)
		h.stored(seq)
		return rt.p.RenewWorkItemLock(ctx, token, extend)
	}
	if err == nil {
		h.stored(seq)
	}
	return err
}

// Why an attempt's lock is no longer its own; both match
// duroxide.ErrLockLost.
var (
	errActivityLockGone    = fmt.Errorf("durable: the activity's work item lock is gone (the item was deleted or taken over): %w", duroxide.ErrLockLost)
	errActivityLockExpired = fmt.Errorf("durable: the activity's work item lock expired while its renewals failed: %w", duroxide.ErrLockLost)
)

// lostCause is the error of a lease whose lost channel closed.
func (l *lockLease) lostCause() error {
	if l.gone.Load() {
		return errActivityLockGone
	}
	return errActivityLockExpired
}

// heartbeatTimeoutFailure is the failure of an attempt whose heartbeat
// timed out.
func heartbeatTimeoutFailure(w *activityWork, timeout time.Duration) duroxide.WorkItem {
	return duroxide.ActivityFailedItem{Instance: w.item.Instance, ExecutionID: w.item.ExecutionID, ID: w.item.ID,
		Details: duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppActivityFailed},
			Message: fmt.Sprintf("%s timeout of %s exceeded", heartbeatTimeoutPrefix, timeout)}}
}
