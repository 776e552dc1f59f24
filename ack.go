package cdb

import (
	"context"
	"errors"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// An orchestration turn commits as one transactional batch in the
// instance's partition. Its first operation replaces the instance document
// with If-Match on the ETag the lock returned: that single condition is
// the lock check (a lost, renewed-elsewhere or deleted lock changes the
// ETag), so a valid ack costs exactly one request. Items for other
// instances go into outbox intents inside the same batch and are
// delivered right after (outbox.go).

// AckOrchestrationItem implements duroxide.Provider.
func (p *Provider) AckOrchestrationItem(ctx context.Context, lockToken string, commit duroxide.OrchestrationCommit) error {
	_, err := p.ackTurn(ctx, lockToken, commit, nil)
	return err
}

// ackTurn commits a turn; with want, some of its activities are written
// locked for the caller's workers (handoff.go) and returned.
func (p *Provider) ackTurn(ctx context.Context, lockToken string, commit duroxide.OrchestrationCommit, want *handOffWant) ([]*duroxide.LockedWorkItem, error) {
	const op = "ack_orchestration_item"
	if err := validateCommit(op, commit); err != nil {
		return nil, err
	}
	lk, unlock, err := p.holdOrchLock(ctx, op, lockToken, true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := validateCommitOwner(op, lk.instance, commit); err != nil {
		return nil, err
	}
	if lk.ambiguous {
		// An earlier attempt failed with an unknown outcome: it may have
		// committed (and a large turn may since have been rolled forward
		// by someone else), so ask the instance before writing anything.
		done, _, rerr := p.recheckLock(ctx, op, lk, true)
		if rerr != nil {
			return nil, rerr
		}
		if done {
			plan, _ := p.planFitting(op, lk, commit, traceParent(ctx), want)
			return p.finishAck(ctx, lk, plan, commit, true)
		}
	}
	plan, err := p.planFitting(op, lk, commit, traceParent(ctx), want)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		plan.result, err = p.commitTurn(ctx, plan)
		if err == nil {
			break
		}
		var be *BatchError
		if errors.As(err, &be) && be.Index == 0 && errors.Is(be, cosmos.ErrPreconditionFailed) && attempt < 3 {
			// The instance document changed since we locked it. Either our
			// own earlier attempt committed (a retried ack), another
			// process renewed our lock or changed the document (a prune),
			// or the lock is gone.
			done, retry, rerr := p.recheckLock(ctx, op, lk, lk.ambiguous)
			if rerr != nil {
				return nil, rerr
			}
			if done {
				return p.finishAck(ctx, lk, plan, commit, true)
			}
			if retry {
				// Re-plan from the document as it is now: the turn's
				// replace must not write back what changed meanwhile.
				if plan, err = p.planFitting(op, lk, commit, traceParent(ctx), want); err != nil {
					return nil, err
				}
				continue
			}
		}
		if errors.As(err, &be) && errors.Is(be, cosmos.ErrConflict) && be.Index != 0 && attempt == 0 {
			// Possibly leftovers of a large turn that never committed
			// (after a crash) holding the ids this turn writes; removed
			// only behind the lock proof.
			if n, cerr := p.cleanStale(ctx, lk, ""); cerr == nil && n > 0 {
				continue
			}
		}
		if consumedElsewhere(plan, err) {
			return nil, p.dropStaleTurn(ctx, op, lk)
		}
		if !errors.As(err, &be) && duroxide.IsRetryable(p.ackError(op, plan, err)) {
			lk.ambiguous = true // the batch may or may not have committed
		}
		return nil, p.ackError(op, plan, err)
	}
	p.rememberTurn(plan, commit) // turncache.go
	return p.finishAck(ctx, lk, plan, commit, false)
}

// finishAck ends a committed turn: the lock is released in this process,
// the turn's outbox intents and foreign cancellations are delivered
// (intents are idempotent) and the enqueue subscribers hear of the
// messages commit wrote (notify.go) but for the activities it handed to
// the caller, which it returns locked. earlier says an earlier attempt
// committed the turn: then a large turn's roll-forward may not have run
// yet.
func (p *Provider) finishAck(ctx context.Context, lk *orchLock, plan *turnPlan, commit duroxide.OrchestrationCommit, earlier bool) ([]*duroxide.LockedWorkItem, error) {
	if earlier {
		if doc, _, rerr := p.readInstance(ctx, lk.instance); rerr == nil && doc != nil && doc.PendingTurn != nil {
			if ferr := p.rollForward(ctx, lk.instance, doc.PendingTurn); ferr != nil {
				p.opts.Logger.Warn("rolling a large turn forward; it will be finished later", "instance_id", lk.instance, "error", ferr)
			}
		}
	}
	p.trail("turn committed: messages consumed", lk, "earlier_attempt", earlier)
	lk.finished = true
	p.orchLocks.drop(lk.token)
	p.busy.clear(lk.instance)
	if plan != nil {
		p.deliverIntents(ctx, lk.instance, plan.intents)
		p.cancelElsewhere(ctx, plan.foreignCancels)
	}
	handed := plan.handedItems(p)
	p.notifyCommit(plan.unhanded(commit))
	return handed, nil
}

// consumedElsewhere reports whether a turn's batch was refused because a
// message it consumes is gone (404 on its delete): another turn consumed
// it, so this turn ran on a message already in history. The fetch's lock
// batch only takes messages no live lock holds (addMessageLocks), which
// keeps this from happening; should it happen anyway, committing would
// record the message twice, and it is no reason to fail the instance.
func consumedElsewhere(plan *turnPlan, err error) bool {
	var be *BatchError
	return errors.As(err, &be) && errors.Is(be, cosmos.ErrNotFound) &&
		be.Index > 0 && be.Index < len(plan.kinds) && plan.kinds[be.Index] == docOrchQueue
}

// dropStaleTurn gives back the lock of a turn consumedElsewhere refused
// (its attempts too, the messages that remain visible at once) and
// reports the lock lost: the runtime drops the turn, and the next fetch
// runs the instance from its current state.
func (p *Provider) dropStaleTurn(ctx context.Context, op string, lk *orchLock) error {
	p.opts.Logger.Warn("a message this turn consumed is gone (another turn consumed it); the turn is dropped", "instance_id", lk.instance)
	p.releaseQuietly(ctx, lk)
	lk.finished = true
	p.orchLocks.drop(lk.token)
	return duroxide.Kinded(duroxide.ErrLockLost, op, "a message this turn consumed was consumed by another turn; the turn is dropped and the instance runs again from its current state")
}

// recheckLock re-reads the instance, from the primary, after an ETag
// mismatch: a write of ours the service applied without answering (a
// renewal, an ack) moved the ETag too, and then the lock is still ours.
func (p *Provider) recheckLock(ctx context.Context, op string, lk *orchLock, mayBeDone bool) (done, retry bool, err error) {
	doc, etag, err := p.readInstancePrimary(ctx, lk.instance)
	if err != nil {
		return false, false, duroxide.Wrap(op, err)
	}
	switch {
	case doc == nil:
		return false, false, errInvalidToken(op)
	case mayBeDone && doc.LastAckToken == lk.token:
		return true, false, nil
	case doc.LockToken != nil && *doc.LockToken == lk.token && p.now().Before(time.UnixMilli(deref(doc.LockedUntil))):
		lk.doc, lk.etag = *doc, etag
		lk.lockedUntil = time.UnixMilli(deref(doc.LockedUntil))
		return false, true, nil
	}
	return false, false, errLockExpired(op)
}

func (p *Provider) ackError(op string, plan *turnPlan, err error) error {
	var be *BatchError
	if errors.As(err, &be) {
		switch {
		case be.Index == 0 && (errors.Is(be, cosmos.ErrPreconditionFailed) || errors.Is(be, cosmos.ErrNotFound)):
			return errLockExpired(op)
		case errors.Is(be, cosmos.ErrConflict) && be.Index > 0 && be.Index < len(plan.kinds) && plan.kinds[be.Index] == docHistory:
			return duroxide.Kinded(duroxide.ErrDuplicateEvent, op, "duplicate history event: %s already exists", be.ID)
		case errors.Is(be, cosmos.ErrTooLarge) || errors.Is(be, cosmos.ErrBadRequest):
			return &duroxide.ProviderError{Operation: op, Message: "the turn was refused by Cosmos DB: " + be.Error(), Err: err}
		}
		// Rolled back for another reason: a throttle or timeout is worth
		// retrying (the batch left nothing behind), anything else is not.
		return &duroxide.ProviderError{Operation: op, Message: be.Error(), Retryable: be.Retryable(), Err: err}
	}
	return duroxide.Wrap(op, err)
}

// commitTurn writes the plan. A turn that fits one batch (the normal case)
// is one request, whose result it returns (nil for a large turn).
func (p *Provider) commitTurn(ctx context.Context, plan *turnPlan) (*cosmos.BatchResult, error) {
	b := plan.batch()
	if !b.Fits() {
		plan.large = true
		return nil, p.commitLargeTurn(ctx, plan)
	}
	p.addMarkerCleanup(b, plan)
	return p.st.ExecuteTolerant(ctx, b, false)
}

// batch is the plan as one batch, which may not fit.
func (plan *turnPlan) batch() *cosmos.Batch {
	b := cosmos.NewBatch(plan.instance)
	b.Add(plan.commit)
	for _, o := range plan.ops {
		b.Add(o)
	}
	return b
}

// addMarkerCleanup removes the instance's expired markers in the turn's
// batch, as far as the batch has room (the rest go in later turns).
func (p *Provider) addMarkerCleanup(b *cosmos.Batch, plan *turnPlan) {
	for _, id := range plan.staleMarkers {
		if b.Len() >= cosmos.MaxBatchOps || b.Bytes+len(id)+64 > cosmos.MaxBatchBytes {
			return
		}
		b.Delete(id, nil, cosmos.ErrNotFound)
	}
}
