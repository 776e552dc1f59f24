package cdb

import (
	"context"
	"errors"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
	"github.com/duroxide-go/cdb/internal/limits"
)

// Lock lifetime: renewing and abandoning orchestration and work-item
// locks. Every write is conditioned on the ETag the lock holds (a batch led
// by the instance document for an orchestration, a patch for a work item),
// so a lost lock is detected as in the ack.

// AbandonOrchestrationItem implements duroxide.Provider.
func (p *Provider) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	return p.abandonOrchestrationItem(ctx, "abandon_orchestration_item", lockToken, delay, ignoreAttempt, nil)
}

// BlockOrchestrationItem implements duroxide.Provider: the abandon's
// patch of the instance document also records the reason, so it costs
// nothing more; the next ack's replace of the document clears it.
func (p *Provider) BlockOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, reason string) error {
	return p.abandonOrchestrationItem(ctx, "block_orchestration_item", lockToken, delay, true, &reason)
}

// abandonOrchestrationItem releases the lock in one batch; a non-nil
// blocked is recorded on the instance document. A 412 is not taken at its
// word, as in RenewOrchestrationItemLock: a renewal the service applied
// but did not answer moved the instance's ETag too, so the instance is
// read again and, still locked with our token and unexpired, released
// with its current ETag — otherwise it and its messages would stay locked
// until the lock lapsed, the attempt counted for nothing.
func (p *Provider) abandonOrchestrationItem(ctx context.Context, op, lockToken string, delay time.Duration, ignoreAttempt bool, blocked *string) error {
	lk, unlock, err := p.holdOrchLock(ctx, op, lockToken, false)
	if err != nil {
		return err
	}
	defer unlock()
	visible := p.releaseVisibleAt(delay)
	for attempt := 0; ; attempt++ {
		_, err := p.st.ExecuteTolerant(ctx, p.abandonBatch(lk, visible, ignoreAttempt, blocked), false)
		if err == nil {
			break
		}
		var be *BatchError
		if !errors.As(err, &be) || be.Index != 0 || !lockGoneStatus(be) {
			return duroxide.Wrap(op, err)
		}
		if !errors.Is(be, cosmos.ErrPreconditionFailed) || attempt > 0 {
			return errLockExpired(op)
		}
		// recheckLock refreshed lk.doc and lk.etag when it says retry: the
		// next batch is built from the instance as it is now.
		if _, retry, rerr := p.recheckLock(ctx, op, lk, false); rerr != nil || !retry {
			if rerr != nil {
				return rerr
			}
			return errLockExpired(op)
		}
	}
	p.trail("orchestration item abandoned", lk, "delay", delay, "ignore_attempt", ignoreAttempt)
	lk.finished = true
	p.orchLocks.drop(lockToken)
	p.busy.clear(lk.instance)
	return nil
}

// abandonBatch releases lk: the instance document (If-Match lk.etag,
// recording blocked when set) and its locked messages, made visible at
// visible (nil: at once), their attempt given back when ignoreAttempt.
func (p *Provider) abandonBatch(lk *orchLock, visible *int64, ignoreAttempt bool, blocked *string) *cosmos.Batch {
	b := cosmos.NewBatch(lk.instance)
	release := releaseOps()
	if blocked != nil {
		release.AppendSet("/blocked", *blocked)
	}
	switch {
	case len(lk.messages) > 0:
		// Recorded without a delay too: a fetch that discovered the
		// instance while these messages were locked would otherwise
		// lock only newer ones once we release it (releases.go heldBack).
		ids := make([]string, len(lk.messages))
		for i, m := range lk.messages {
			ids[i] = m.ID
		}
		until := ms(p.now())
		if visible != nil {
			until = *visible
		}
		release.AppendSet("/held", heldMessages{Until: until, IDs: ids})
	case lk.doc.Held != nil:
		release.AppendSet("/held", jsonNull)
	}
	b.Patch(instanceDocID(lk.instance), release, &lk.etag)
	for _, m := range lk.messages {
		n := m.AttemptCount
		if ignoreAttempt && n > 0 {
			n--
		}
		unlockMessage(b, m.ID, n, visible)
	}
	return b
}

// RenewOrchestrationItemLock implements duroxide.Provider: one batch
// extends the instance's lock (If-Match: still ours) and the locks of the
// messages it holds, as the seed does, so that other dispatchers do not
// see those messages as unlocked and keep trying to lock them.
func (p *Provider) RenewOrchestrationItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	const op = "renew_orchestration_item_lock"
	lk, unlock, err := p.holdOrchLock(ctx, op, lockToken, true)
	if err != nil {
		return err
	}
	defer unlock()
	until := p.now().Add(extendFor)
	var ops azcosmos.PatchOperations
	ops.AppendSet("/lockedUntil", ms(until))
	for attempt := 0; ; attempt++ {
		b := cosmos.NewBatch(lk.instance)
		b.Patch(instanceDocID(lk.instance), ops, &lk.etag)
		for _, m := range lk.messages {
			if b.Len() >= cosmos.MaxBatchOps {
				break
			}
			// Consumed meanwhile can only mean by us (we hold the lock):
			// nothing to extend.
			b.Add(cosmos.BatchOp{Kind: cosmos.BatchPatch, ID: m.ID, Patch: ops, Tolerate: []error{cosmos.ErrNotFound}})
		}
		res, err := p.st.ExecuteTolerant(ctx, b, false)
		if err == nil {
			lk.etag, lk.lockedUntil = res.ETags[0], until
			p.busy.mark(lk.instance, until)
			return nil
		}
		var be *BatchError
		if !errors.As(err, &be) || be.Index != 0 || !lockGoneStatus(be) {
			// A throttled or timed-out batch (a retryable BatchError)
			// rolled back: the lock is unchanged.
			return duroxide.Wrap(op, err)
		}
		if errors.Is(be, cosmos.ErrPreconditionFailed) && attempt == 0 {
			if _, retry, rerr := p.recheckLock(ctx, op, lk, false); rerr != nil || !retry {
				if rerr != nil {
					return rerr
				}
				return errLockExpired(op)
			}
			continue
		}
		return errLockExpired(op)
	}
}

// AbandonWorkItem implements duroxide.Provider. A 412 is not taken at its
// word: a renewal the service applied but did not answer moves the ETag
// too, so the item is read again (the lock no longer cached) and, still
// locked with lockToken — nobody else took it —, released with its
// current ETag.
func (p *Provider) AbandonWorkItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	const op = "abandon_work_item"
	for try := 0; ; try++ {
		lk, err := p.workLockFor(ctx, op, lockToken)
		if err != nil {
			return err
		}
		err = p.abandonWorkLock(ctx, lk, delay, ignoreAttempt)
		p.workLocks.drop(lockToken)
		if errors.Is(err, cosmos.ErrPreconditionFailed) && try == 0 {
			continue
		}
		if errors.Is(err, cosmos.ErrPreconditionFailed) || errors.Is(err, cosmos.ErrNotFound) {
			return errLockExpired(op)
		}
		return duroxide.Wrap(op, err)
	}
}

// abandonWorkLock releases lk's item with one patch conditioned on lk's
// ETag.
func (p *Provider) abandonWorkLock(ctx context.Context, lk *workLock, delay time.Duration, ignoreAttempt bool) error {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	n := lk.doc.AttemptCount
	if ignoreAttempt && n > 0 {
		n--
	}
	_, _, err := p.st.Patch(ctx, lk.instance, lk.itemID, unlockMessageOps(n, p.releaseVisibleAt(delay)), &lk.etag, false)
	return err
}

// RenewWorkItemLock implements duroxide.Provider.
func (p *Provider) RenewWorkItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	return p.renewWorkItemLock(ctx, "renew_work_item_lock", lockToken, extendFor, nil)
}

// renewWorkItemLock extends the lock with one patch of the item's
// document, conditioned on its ETag; with details, the same patch
// records the heartbeat (heartbeat.go).
func (p *Provider) renewWorkItemLock(ctx context.Context, op, lockToken string, extendFor time.Duration, details *string) error {
	lk, err := p.workLockFor(ctx, op, lockToken)
	if err != nil {
		return err
	}
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if err := p.checkWorkLive(op, lk); err != nil {
		return err
	}
	if details != nil {
		if err := limits.HeartbeatDetails(op, lk.doc.WorkItem, *details); err != nil {
			return err
		}
	}
	now := p.now()
	until := now.Add(extendFor)
	var ops azcosmos.PatchOperations
	ops.AppendSet("/lockedUntil", ms(until))
	if details != nil {
		ops.AppendSet("/heartbeat", heartbeatDoc{Details: *details, At: ms(now)})
	}
	_, etag, err := p.st.Patch(ctx, lk.instance, lk.itemID, ops, &lk.etag, false)
	if errors.Is(err, cosmos.ErrPreconditionFailed) {
		ours, rerr := p.refreshWorkLock(ctx, lk)
		if rerr != nil {
			return duroxide.Wrap(op, rerr) // unknown, not lost: the caller retries
		}
		if ours {
			// Renewed by another process meanwhile (or by our own earlier
			// attempt whose response was lost), still ours.
			_, etag, err = p.st.Patch(ctx, lk.instance, lk.itemID, ops, &lk.etag, false)
		}
	}
	if errors.Is(err, cosmos.ErrPreconditionFailed) || errors.Is(err, cosmos.ErrNotFound) {
		p.workLocks.drop(lockToken)
		return duroxide.Kinded(duroxide.ErrLockLost, op, "Invalid lock token: the work item was acked, cancelled or its lock expired")
	}
	if err != nil {
		return duroxide.Wrap(op, err)
	}
	lk.etag, lk.lockedUntil = etag, until
	p.touchSession(ctx, lk, now)
	return nil
}

// lockGoneStatus reports whether a batch rolled back because its lock
// condition failed: the locked document changed (412) or is gone (404).
// Any other status (a throttle, a timeout) leaves the lock as it was.
func lockGoneStatus(be *BatchError) bool {
	return errors.Is(be, cosmos.ErrPreconditionFailed) || errors.Is(be, cosmos.ErrNotFound)
}
