package cdb

import (
	"context"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// Service limits of one transactional batch. maxBatchBytes keeps headroom
// below the 2 MiB request limit for the batch envelope and per-operation
// framing that azcosmos adds around each document.
const (
	maxBatchOps   = 100
	maxBatchBytes = 2*1024*1024 - 64*1024
	// maxDocBytes is the largest single document we write; Cosmos refuses
	// documents over 2 MiB.
	maxDocBytes = 2 * 1024 * 1024
)

type batchKind int

const (
	bCreate batchKind = iota
	bUpsert
	bReplace
	bDelete
	bPatch
	bRead
)

type batchOp struct {
	kind    batchKind
	id      string
	doc     []byte
	patch   azcosmos.PatchOperations
	ifMatch *azcore.ETag
	// tolerate lists statuses that mean "already done" for this operation
	// (e.g. 404 on deleting a cancelled activity). They cannot be tolerated
	// inside the atomic batch itself; executeTolerant removes such an
	// operation and retries the rest.
	tolerate []int
}

// batch is a list of operations on one partition, committed atomically.
type batch struct {
	partition string
	ops       []batchOp
	bytes     int
}

func newBatch(partition string) *batch { return &batch{partition: partition} }

func (b *batch) add(op batchOp) {
	b.ops = append(b.ops, op)
	b.bytes += len(op.doc) + len(op.id) + 64
}

func (b *batch) create(doc []byte) { b.add(batchOp{kind: bCreate, doc: doc}) }
func (b *batch) upsert(doc []byte, ifMatch *azcore.ETag) {
	b.add(batchOp{kind: bUpsert, doc: doc, ifMatch: ifMatch})
}
func (b *batch) replace(id string, doc []byte, ifMatch *azcore.ETag) {
	b.add(batchOp{kind: bReplace, id: id, doc: doc, ifMatch: ifMatch})
}
func (b *batch) delete(id string, ifMatch *azcore.ETag, tolerate ...int) {
	b.add(batchOp{kind: bDelete, id: id, ifMatch: ifMatch, tolerate: tolerate})
}
func (b *batch) patch(id string, ops azcosmos.PatchOperations, ifMatch *azcore.ETag) {
	b.add(batchOp{kind: bPatch, id: id, patch: ops, ifMatch: ifMatch})
}
func (b *batch) read(id string) { b.add(batchOp{kind: bRead, id: id}) }

func (b *batch) len() int { return len(b.ops) }

// fits reports whether the batch is within the service limits.
func (b *batch) fits() bool { return len(b.ops) <= maxBatchOps && b.bytes <= maxBatchBytes }

// BatchError is a transactional batch the service rolled back (HTTP 207).
// Index is the operation that failed with StatusCode; every other
// operation reported 424 Failed Dependency.
type BatchError struct {
	Partition  string
	Index      int
	StatusCode int
	ID         string
}

// Retryable reports whether re-running the batch can succeed: the
// failing operation was throttled or timed out, not refused.
func (e *BatchError) Retryable() bool {
	switch e.StatusCode {
	case http.StatusTooManyRequests, http.StatusRequestTimeout, 449, http.StatusServiceUnavailable, http.StatusInternalServerError:
		return true
	}
	return false
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("cosmos batch on partition %q rolled back: operation %d (%s) failed with status %d", e.Partition, e.Index, e.ID, e.StatusCode)
}

// batchResult holds the per-operation results of a committed batch.
type batchResult struct {
	etags  []azcore.ETag
	bodies [][]byte
}

// execute commits b atomically. A rolled-back batch returns *BatchError;
// a request that failed as a whole returns *CosmosError.
func (s *store) execute(ctx context.Context, b *batch, wantBodies bool) (*batchResult, error) {
	if len(b.ops) == 0 {
		return &batchResult{}, nil
	}
	if !b.fits() {
		return nil, fmt.Errorf("cdb: internal error: batch of %d operations / %d bytes exceeds the service limits", len(b.ops), b.bytes)
	}
	tb := s.c.NewTransactionalBatch(pk(b.partition))
	for _, op := range b.ops {
		o := &azcosmos.TransactionalBatchItemOptions{IfMatchETag: op.ifMatch}
		switch op.kind {
		case bCreate:
			tb.CreateItem(op.doc, o)
		case bUpsert:
			tb.UpsertItem(op.doc, o)
		case bReplace:
			tb.ReplaceItem(op.id, op.doc, o)
		case bDelete:
			tb.DeleteItem(op.id, o)
		case bPatch:
			tb.PatchItem(op.id, op.patch, o)
		case bRead:
			tb.ReadItem(op.id, o)
		}
	}
	var resp azcosmos.TransactionalBatchResponse
	err := s.do(ctx, Call{Op: OpBatch, PartitionKey: b.partition, Operations: len(b.ops)}, func(ctx context.Context) (result, error) {
		var err error
		resp, err = s.c.ExecuteTransactionalBatch(ctx, tb, &azcosmos.TransactionalBatchOptions{EnableContentResponseOnWrite: wantBodies})
		s.observe(b.partition, &resp.SessionToken, err)
		n := 0
		for _, r := range resp.OperationResults {
			n += len(r.ResourceBody)
		}
		return result{bytes: n, charge: resp.RequestCharge}, err
	})
	if err != nil {
		return nil, err
	}
	if !resp.Success {
		return nil, batchFailure(b, resp)
	}
	out := &batchResult{etags: make([]azcore.ETag, len(resp.OperationResults)), bodies: make([][]byte, len(resp.OperationResults))}
	for i, r := range resp.OperationResults {
		out.etags[i], out.bodies[i] = r.ETag, r.ResourceBody
	}
	return out, nil
}

func batchFailure(b *batch, resp azcosmos.TransactionalBatchResponse) *BatchError {
	e := &BatchError{Partition: b.partition, Index: -1}
	for i, r := range resp.OperationResults {
		if r.StatusCode != http.StatusFailedDependency {
			e.Index, e.StatusCode = i, int(r.StatusCode)
			if i < len(b.ops) {
				e.ID = b.ops[i].id
			}
			break
		}
	}
	return e
}

// executeTolerant commits b, dropping operations whose failure status is
// in their tolerate list (e.g. deleting an already-deleted document) and
// retrying the remainder, so "already done" never fails the whole batch.
func (s *store) executeTolerant(ctx context.Context, b *batch, wantBodies bool) (*batchResult, error) {
	for {
		res, err := s.execute(ctx, b, wantBodies)
		be, ok := err.(*BatchError)
		if !ok || be.Index < 0 || be.Index >= len(b.ops) || !tolerated(b.ops[be.Index], be.StatusCode) {
			return res, err
		}
		nb := newBatch(b.partition)
		for i, op := range b.ops {
			if i != be.Index {
				nb.add(op)
			}
		}
		b = nb
	}
}

func tolerated(op batchOp, status int) bool {
	for _, s := range op.tolerate {
		if s == status {
			return true
		}
	}
	return false
}
