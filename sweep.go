package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Sweeping a tombstoned instance's partition (delete.go tombstones it).

// sweep removes every document of a tombstoned instance, in as many
// batches as needed, the instance document last, and retires its start
// record (recreate.go). What was written after the tombstone and can be
// addressed to a new instance with the same id stays (keptBySweep); the
// rest is the deleted instance's own, however late it was written: a
// worker may ack an activity of the deleted instance after its tombstone
// (the ack does not read the instance), a child swept after its parent
// may report to it, and a new instance cannot begin before the sweep
// ends (a start of a tombstoned id is refused, settleDeletion). A work
// item and the completion its ack would create (deterministic id) is
// deleted once all work items are gone, so an ack racing the sweep either
// landed before (its completion goes too) or fails.
//
// Two sweeps of one tombstone can overlap (a maintenance loop finishing
// an interrupted deletion, a start finishing it itself), and once the
// faster one ends the id may live again. So the slower one must not
// remove the next life's documents: it only deletes what it read while
// the tombstone stood (checked at the primary after its query), and its
// last batch is conditioned on the tombstone's ETag, so it cannot delete
// a new instance document or retire a new life's start record.
func (p *Provider) sweep(ctx context.Context, doc *instanceDoc) (duroxide.DeleteInstanceResult, error) {
	inst := doc.InstanceID
	var res duroxide.DeleteInstanceResult
	found, err := p.sweepRows(ctx, doc)
	if err != nil {
		return res, err
	}
	etag, standing, err := p.standingTombstone(ctx, doc)
	if err != nil || !standing {
		return res, err // !standing: another sweep finished it
	}
	tail, err := p.sweepDelete(ctx, inst, found, &res)
	if err != nil {
		return res, err
	}
	if err := p.sweepLast(ctx, doc, tail, etag, found); err != nil {
		return res, err
	}
	found.execs[doc.CurrentExecutionID] = true
	res.InstancesDeleted = 1
	res.ExecutionsDeleted = uint64(len(found.execs))
	p.busy.clear(inst)
	return res, nil
}

// sweepFound is what a sweep's query found in the partition.
type sweepFound struct {
	rows       []sweepRow
	record     *startRecordDoc // the start record the sweep retires
	keptRecord bool            // a record written after the tombstone
	execs      map[uint64]bool
}

type sweepRow struct {
	ID            string `json:"id"`
	Type          string `json:"type"`
	ExecutionID   uint64 `json:"executionId"`
	EnqueuedAt    int64  `json:"enqueuedAt"`
	WorkItem      string `json:"workItem"`
	LastExecution uint64 `json:"lastExecution"`
}

// sweepRows reads the partition of a tombstoned instance: what the sweep
// deletes, and what it keeps for the id's next life.
func (p *Provider) sweepRows(ctx context.Context, doc *instanceDoc) (*sweepFound, error) {
	inst := doc.InstanceID
	f := &sweepFound{execs: map[uint64]bool{}}
	_, err := p.st.Query(ctx, "SELECT c.id, c.type, c.executionId, c.enqueuedAt, c.workItem, c.lastExecution FROM c", nil, cosmos.QueryOptions{Partition: &inst, PageSize: 1000}, func(raw []byte) bool {
		var r sweepRow
		if json.Unmarshal(raw, &r) != nil || r.ID == doc.ID {
			return true
		}
		switch {
		case r.EnqueuedAt > *doc.Deleted && keptBySweep(r.Type, r.WorkItem):
			f.keptRecord = f.keptRecord || r.Type == docStartRecord
		case r.Type == docStartRecord:
			f.record = &startRecordDoc{LastExecution: r.LastExecution} // retired in the last batch
		default:
			f.rows = append(f.rows, r)
		}
		return true
	})
	return f, err
}

// standingTombstone reads the instance document at the primary: whether
// doc's tombstone still stands (the same deletion: its time and mark),
// and its ETag.
func (p *Provider) standingTombstone(ctx context.Context, doc *instanceDoc) (azcore.ETag, bool, error) {
	res, err := p.readLockedPrimary(ctx, doc.InstanceID, []string{doc.ID})
	if errors.Is(err, cosmos.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	var cur instanceDoc
	if json.Unmarshal(res.Bodies[0], &cur) != nil || cur.Deleted == nil || *cur.Deleted != *doc.Deleted || cur.DeletedBy != doc.DeletedBy {
		return "", false, nil
	}
	return res.ETags[0], true, nil
}

// sweepDelete deletes the rows found in full batches, counting them in
// res, and returns the last, partial batch's operations for sweepLast.
func (p *Provider) sweepDelete(ctx context.Context, inst string, f *sweepFound, res *duroxide.DeleteInstanceResult) ([]cosmos.BatchOp, error) {
	b := cosmos.NewBatch(inst)
	flush := func() error {
		if b.Len() == 0 {
			return nil
		}
		_, err := p.st.ExecuteTolerant(ctx, b, false)
		b = cosmos.NewBatch(inst)
		return err
	}
	add := func(id string) error {
		if b.Len() >= cosmos.MaxBatchOps {
			if err := flush(); err != nil {
				return err
			}
		}
		b.Delete(id, nil, cosmos.ErrNotFound)
		return nil
	}
	var completions []string
	for _, r := range f.rows {
		switch r.Type {
		case docHistory:
			res.EventsDeleted++
			f.execs[r.ExecutionID] = true
		case docOrchQueue, docWorkerQueue:
			res.QueueMessagesDeleted++
		}
		if r.Type == docWorkerQueue {
			completions = append(completions, completionDocID(inst, r.ID))
		}
		if err := add(r.ID); err != nil {
			return nil, err
		}
	}
	if len(completions) > 0 {
		// An extra batch only when work items were outstanding.
		if err := flush(); err != nil {
			return nil, err
		}
	}
	// Every work item is gone now, so no ack can enqueue a completion any
	// more; remove those acked since the query.
	for _, id := range completions {
		if err := add(id); err != nil {
			return nil, err
		}
	}
	if b.Len()+2 > cosmos.MaxBatchOps {
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return b.Ops, nil
}

// sweepLast runs the last batch: tail, the instance document (until
// then the tombstone keeps the instance dead for readers and for the
// maintenance loop) and the start record's retirement, so that the id's
// next life continues the execution ids (recreate.go). It is conditioned
// on the tombstone's ETag; when that moved (another sweep confirmed the
// tombstone, or finished the deletion), the tombstone is read again.
func (p *Provider) sweepLast(ctx context.Context, doc *instanceDoc, tail []cosmos.BatchOp, etag azcore.ETag, f *sweepFound) error {
	for attempt := 0; ; attempt++ {
		b := cosmos.NewBatch(doc.InstanceID)
		for _, op := range tail {
			b.Add(op)
		}
		b.Delete(doc.ID, &etag)
		if !f.keptRecord {
			b.Upsert(retiredRecord(doc.InstanceID, lastExecution(doc, f.execs, f.record)), nil)
		}
		_, err := p.st.ExecuteTolerant(ctx, b, false)
		if err == nil || attempt == 2 || !(errors.Is(err, cosmos.ErrPreconditionFailed) || errors.Is(err, cosmos.ErrNotFound)) {
			return err
		}
		var standing bool
		etag, standing, err = p.standingTombstone(ctx, doc)
		if err != nil || !standing {
			return err
		}
	}
}

// sweepSet counts the sweeps running in this process per instance, so
// that the maintenance loop leaves a deletion this process is sweeping
// to it: two sweeps are safe (sweep), but the caller of DeleteInstance
// would be told fewer documents were deleted than were.
type sweepSet struct {
	mu sync.Mutex
	n  map[string]int
}

// enter records a sweep of inst and returns the function that ends it.
func (s *sweepSet) enter(inst string) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int{}
	}
	s.n[inst]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.n[inst]--; s.n[inst] == 0 {
			delete(s.n, inst)
		}
	}
}

func (s *sweepSet) active(inst string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[inst] > 0
}
