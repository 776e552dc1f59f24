package cdb

import (
	"context"
	"errors"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Re-creating a deleted id. Cosmos cannot delete a tree in one
// transaction, so a deleted life can still speak after its sweep: a
// child's completion already on its way through the outbox relay, a
// child's start relayed late. Were the next life of the id to begin at
// execution 1 again, such a message would be indistinguishable from its
// own: a stray child result names the same parent execution and event id
// (taken, or failed as nondeterministic), and a stray child started under
// the auto-generated id "{parent}::sub::{event id}" would be taken for the
// new run's own child (which then waits for ever). So the sweep leaves
// the instance's start record in place, retired, with the last execution
// id the deleted life reached, and the next client start of the id
// begins at the execution after it. The runtime already drops every
// result addressed to another execution of its parent, and children of a
// later execution have their own ids, so nothing of the deleted life can
// reach the new one. The record holds no input or name; it is the one
// document a deletion leaves, and it costs nothing on the start of an id
// that was never deleted (the start's batch meets it only on a 409).

// retiredRecord is the start record a sweep leaves for an instance whose
// executions reached last.
func retiredRecord(inst string, last uint64) []byte {
	return mustJSON(struct {
		ID            string `json:"id"`
		InstanceID    string `json:"instanceId"`
		Type          string `json:"type"`
		Retired       bool   `json:"retired"`
		LastExecution uint64 `json:"lastExecution"`
	}{startRecordDocID(inst), inst, docStartRecord, true, last})
}

// startRecreated takes over old, a deleted life's retired record (read
// with etag), for item: the new record keeps the deleted lives' last
// execution, and item's start message asks for the execution after it.
// The record's ETag makes the take-over one atomic step against a
// concurrent start, whose record then stands (existing judges).
func (p *Provider) startRecreated(ctx context.Context, op string, item duroxide.StartOrchestrationItem, rec, old *startRecordDoc, etag azcore.ETag, extra func() ([]byte, error), visible, now time.Time, existing func(rec *startRecordDoc) error) (bool, error) {
	item.ExecutionID = max(item.ExecutionID, old.LastExecution+1)
	msg, err := p.queueDocument(ctx, op, item, docOrchQueue, visible, now)
	if err != nil {
		return false, err
	}
	rec.LastExecution = old.LastExecution
	b := cosmos.NewBatch(item.Instance)
	b.Replace(rec.ID, mustJSON(rec), &etag)
	b.Create(msg)
	if extra != nil {
		doc, err := extra()
		if err != nil {
			return false, err
		}
		b.Create(doc)
	}
	_, err = p.st.Execute(ctx, b, false)
	var be *cosmos.BatchError
	if errors.As(err, &be) && be.Index == 0 && errors.Is(err, cosmos.ErrPreconditionFailed) {
		// Another start took the record first (or our own earlier
		// attempt, whose outcome we did not learn): read it again.
		return false, existing(nil)
	}
	return err == nil, err
}

// lastExecution is the highest execution id of a deleted instance: its
// current one, any its history holds, and any an earlier deleted life
// reached (its retired start record, carried into the record of the
// life that followed).
func lastExecution(doc *instanceDoc, execs map[uint64]bool, rec *startRecordDoc) uint64 {
	last := doc.CurrentExecutionID
	for e := range execs {
		last = max(last, e)
	}
	if rec != nil {
		last = max(last, rec.LastExecution)
	}
	return last
}
