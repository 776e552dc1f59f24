package cdb

import (
	"context"
	"errors"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
	"github.com/duroxide-go/cdb/internal/limits"
)

// Acknowledging a work item: one batch in the instance's partition that
// deletes the item and enqueues its completion, so a completion is never
// lost or delivered twice.

// AckWorkItem implements duroxide.Provider: one batch deletes the item
// (If-Match: still ours) and enqueues the completion in the same
// partition. A completion for another instance (unusual: the runtime
// completes to the scheduling instance) goes through the outbox in the
// same batch, so the delete and the enqueue stay atomic.
func (p *Provider) AckWorkItem(ctx context.Context, lockToken string, completion duroxide.WorkItem) error {
	_, err := p.ackWork(ctx, lockToken, completion, nil)
	return err
}

// ackWork is AckWorkItem; with want, the batch also locks the next kept
// work item of the same partition, if there is one (workackfetch.go).
func (p *Provider) ackWork(ctx context.Context, lockToken string, completion duroxide.WorkItem, want *nextWork) (*duroxide.LockedWorkItem, error) {
	const op = "ack_work_item"
	if completion != nil {
		if completion.Queue() != duroxide.OrchestratorQueue {
			return nil, duroxide.Permanent(op, "a completion must be an orchestrator item, got %s", completion.Variant())
		}
		if err := validateInstanceID(op, completion.InstanceID()); err != nil {
			return nil, err
		}
	}
	lk, err := p.workLockFor(ctx, op, lockToken)
	if err != nil {
		return nil, err
	}
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if err := p.checkWorkLive(op, lk); err != nil {
		return nil, err
	}
	now := p.now()
	b := cosmos.NewBatch(lk.instance)
	if lk.doc.OutboxKey != "" {
		// Delivered through the outbox: keep a marker so a late
		// re-delivery of the same intent cannot enqueue it again.
		marker := map[string]any{"id": lk.itemID, "instanceId": lk.instance, "type": docReceived, "outboxKey": lk.doc.OutboxKey, "createdAt": ms(now)}
		b.Replace(lk.itemID, mustJSON(marker), &lk.etag)
	} else {
		b.Delete(lk.itemID, &lk.etag)
	}
	doneID := completionDocID(lk.instance, lk.itemID)
	var intents []outboxDoc
	if completion != nil {
		data, err := duroxide.MarshalWorkItem(completion)
		if err != nil {
			return nil, duroxide.Permanent(op, "completion cannot be encoded: %v", err)
		}
		q := &queueDoc{ID: doneID, InstanceID: completion.InstanceID(), Type: docOrchQueue, WorkItem: string(data),
			DispatchSlot: DispatchSlot(completion.InstanceID()), VisibleAt: p.visibleAt(now, now), EnqueuedAt: ms(now), EnqueueOrder: nextOrder(now),
			TraceParent: traceParent(ctx)}
		if q.InstanceID != lk.instance {
			// The intent's ids derive from the lock token, so a retried
			// ack writes the same intent.
			in := p.intent(&orchLock{instance: lk.instance, token: lk.token}, deref(lk.doc.ExecutionID), 0, q, now)
			intents = append(intents, in)
			b.Create(mustJSON(in))
		} else {
			b.Create(mustJSON(q))
		}
		if doc := b.Ops[len(b.Ops)-1].Doc; len(doc) > cosmos.MaxDocBytes {
			return nil, limits.DocSize(op, "activity completion", len(doc))
		}
	}
	p.touchSessionOps(b, lk, now)
	next := p.addNextLock(ctx, b, lk, want, now) // workackfetch.go
	defer next.release(p)
	for attempt := 0; ; attempt++ {
		res, err := p.st.ExecuteTolerant(ctx, b, next != nil)
		var be *BatchError
		if err != nil && next.refused(be, err) {
			// The next item changed since its discovery: ack alone.
			next = next.drop(p, b)
			continue
		}
		if err != nil && next != nil && !errors.As(err, &be) {
			// Unanswered: the lock on the next item, written in the same
			// batch, tells whether the batch applied.
			if got, ok := p.confirmNext(ctx, next, err); ok {
				p.workLocks.drop(lockToken)
				p.deliverIntents(ctx, lk.instance, intents)
				if completion != nil {
					p.notifyDoc(docOrchQueue, completion.InstanceID())
				}
				return got, nil
			}
			next = next.drop(p, b)
			return nil, duroxide.Wrap(op, err) // unknown, not lost: the caller retries the ack
		}
		if err != nil && attempt == 0 && errors.As(err, &be) && be.Index == 0 && errors.Is(be, cosmos.ErrPreconditionFailed) {
			// The item changed since this process last saw it: another
			// process renewed the lock (a new ETag), or the lock is gone.
			// Still ours and live: commit with the current ETag (the
			// batch's conditions point at lk.etag).
			ours, rerr := p.refreshWorkLock(ctx, lk)
			if rerr != nil {
				return nil, duroxide.Wrap(op, rerr) // unknown, not lost: the caller retries
			}
			if ours {
				continue
			}
		}
		if err == nil {
			p.workLocks.drop(lockToken)
			p.deliverIntents(ctx, lk.instance, intents)
			if completion != nil {
				p.notifyDoc(docOrchQueue, completion.InstanceID())
			}
			return next.locked(ctx, p, res, now)
		}
		if errors.As(err, &be) && be.Index == 0 && lockGoneStatus(be) {
			p.workLocks.drop(lockToken)
			if completion != nil && (p.exists(ctx, lk.instance, doneID) || (len(intents) > 0 && p.exists(ctx, lk.instance, intents[0].ID))) {
				p.notifyDoc(docOrchQueue, completion.InstanceID())
				return nil, nil // a retried ack whose first attempt committed
			}
			return nil, duroxide.Kinded(duroxide.ErrLockLost, op, "Invalid lock token: the work item was acked, cancelled or its lock expired")
		}
		return nil, duroxide.Wrap(op, err)
	}
}

func (p *Provider) exists(ctx context.Context, partition, id string) bool {
	_, _, err := p.st.Read(ctx, partition, id)
	return err == nil
}
