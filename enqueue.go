package cdb

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
	"github.com/duroxide-go/cdb/internal/limits"
)

// EnqueueForOrchestrator implements duroxide.Provider. The message is
// visible at now+delay (a TimerFired's fire_at_ms is ignored on this path,
// as the contract says), and the instance is not created.
func (p *Provider) EnqueueForOrchestrator(ctx context.Context, item duroxide.WorkItem, delay time.Duration) error {
	const op = "enqueue_for_orchestrator"
	if item == nil {
		return duroxide.Kinded(duroxide.ErrInvalidInput, op, "the work item is nil")
	}
	if item.Queue() != duroxide.OrchestratorQueue {
		return duroxide.Kinded(duroxide.ErrInvalidInput, op, "%s belongs on the worker queue, not the orchestrator queue", variantOf(item))
	}
	now := p.now()
	return p.enqueue(ctx, op, item, docOrchQueue, now.Add(max(delay, 0)), now)
}

// EnqueueForWorker implements duroxide.Provider.
func (p *Provider) EnqueueForWorker(ctx context.Context, item duroxide.WorkItem) error {
	const op = "enqueue_for_worker"
	if item == nil {
		return duroxide.Kinded(duroxide.ErrInvalidInput, op, "the work item is nil")
	}
	if item.Queue() != duroxide.WorkerQueue {
		return duroxide.Kinded(duroxide.ErrInvalidInput, op, "%s belongs on the orchestrator queue, not the worker queue", variantOf(item))
	}
	now := p.now()
	return p.enqueue(ctx, op, item, docWorkerQueue, now, now)
}

// enqueue writes one queue document: one request. The id is generated
// once, so an internal retry of the same call cannot duplicate it.
func (p *Provider) enqueue(ctx context.Context, op string, item duroxide.WorkItem, docType string, visible, now time.Time) error {
	doc, err := p.queueDocument(ctx, op, item, docType, visible, now)
	if err != nil {
		return err
	}
	_, err = p.st.Create(ctx, item.InstanceID(), doc)
	if errors.Is(err, cosmos.ErrConflict) {
		err = nil // our own earlier attempt landed
	}
	if err == nil && !visible.After(now) {
		p.notifyDoc(docType, item.InstanceID())
	}
	return duroxide.Wrap(op, err)
}

// queueDocument encodes item as a new queue document (a fresh id),
// refusing what cannot be stored.
func (p *Provider) queueDocument(ctx context.Context, op string, item duroxide.WorkItem, docType string, visible, now time.Time) ([]byte, error) {
	q, err := p.newQueueDoc(ctx, op, item, docType, visible, now)
	if err != nil {
		return nil, err
	}
	return encodeQueueDoc(op, q)
}

// newQueueDoc builds item's queue document with a fresh id.
func (p *Provider) newQueueDoc(ctx context.Context, op string, item duroxide.WorkItem, docType string, visible, now time.Time) (*queueDoc, error) {
	inst := item.InstanceID()
	if err := validateInstanceID(op, inst); err != nil {
		return nil, err
	}
	data, err := duroxide.MarshalWorkItem(item)
	if err != nil {
		return nil, duroxide.Permanent(op, "work item cannot be encoded: %v", err)
	}
	q := &queueDoc{ID: uuid.NewString(), InstanceID: inst, Type: docType, WorkItem: string(data), DispatchSlot: DispatchSlot(inst),
		VisibleAt: p.visibleAt(visible, now), EnqueuedAt: ms(now), EnqueueOrder: nextOrder(now), TraceParent: traceParent(ctx)}
	if a, ok := item.(duroxide.ActivityExecuteItem); ok {
		q.ExecutionID, q.ActivityID, q.SessionID, q.Tag = ptr(a.ExecutionID), ptr(a.ID), a.SessionID, a.Tag
		if a.SessionID != nil {
			if err := validateUserString(op, "session id", *a.SessionID); err != nil {
				return nil, err
			}
		}
	}
	return q, nil
}

// encodeQueueDoc marshals q, refusing a document Cosmos DB cannot hold.
func encodeQueueDoc(op string, q *queueDoc) ([]byte, error) {
	doc := mustJSON(q)
	if len(doc) > cosmos.MaxDocBytes {
		return nil, limits.DocSize(op, "the work item", len(doc))
	}
	return doc, nil
}
