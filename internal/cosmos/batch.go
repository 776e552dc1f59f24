package cosmos

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/internal/limits"
)

// Service limits of one transactional batch. MaxBatchBytes keeps headroom
// below the 2 MiB request limit for the batch envelope and per-operation
// framing that azcosmos adds around each document.
const (
	// MaxBatchOps is the most operations one batch may hold.
	MaxBatchOps = 100
	// MaxBatchBytes is the most payload bytes one batch may carry.
	MaxBatchBytes = 2*1024*1024 - 64*1024
	// MaxDocBytes is the largest single document we write; Cosmos refuses
	// documents over 2 MiB.
	MaxDocBytes = limits.MaxDocBytes
)

// BatchKind is the kind of one batch operation.
type BatchKind int

// The batch operation kinds.
const (
	BatchCreate BatchKind = iota
	BatchUpsert
	BatchReplace
	BatchDelete
	BatchPatch
	BatchRead
)

// BatchOp is one operation of a Batch.
type BatchOp struct {
	Kind    BatchKind
	ID      string
	Doc     []byte
	Patch   azcosmos.PatchOperations
	IfMatch *azcore.ETag
	// Tolerate lists conditions that mean "already done" for this
	// operation (e.g. ErrNotFound on deleting a cancelled activity). They
	// cannot be tolerated inside the atomic batch itself; ExecuteTolerant
	// removes such an operation and retries the rest.
	Tolerate []error
}

// Batch is a list of operations on one partition, committed atomically.
type Batch struct {
	Partition string
	Ops       []BatchOp
	// Bytes estimates the request size (documents, ids and framing).
	Bytes int
}

// NewBatch starts an empty batch on partition.
func NewBatch(partition string) *Batch { return &Batch{Partition: partition} }

// Add appends op.
func (b *Batch) Add(op BatchOp) {
	b.Ops = append(b.Ops, op)
	b.Bytes += len(op.Doc) + len(op.ID) + 64
}

// Create appends a create of doc.
func (b *Batch) Create(doc []byte) { b.Add(BatchOp{Kind: BatchCreate, Doc: doc}) }

// Upsert appends an upsert of doc.
func (b *Batch) Upsert(doc []byte, ifMatch *azcore.ETag) {
	b.Add(BatchOp{Kind: BatchUpsert, Doc: doc, IfMatch: ifMatch})
}

// Replace appends a replace of id by doc.
func (b *Batch) Replace(id string, doc []byte, ifMatch *azcore.ETag) {
	b.Add(BatchOp{Kind: BatchReplace, ID: id, Doc: doc, IfMatch: ifMatch})
}

// Delete appends a delete of id, tolerating the given conditions.
func (b *Batch) Delete(id string, ifMatch *azcore.ETag, tolerate ...error) {
	b.Add(BatchOp{Kind: BatchDelete, ID: id, IfMatch: ifMatch, Tolerate: tolerate})
}

// Patch appends a patch of id.
func (b *Batch) Patch(id string, ops azcosmos.PatchOperations, ifMatch *azcore.ETag) {
	b.Add(BatchOp{Kind: BatchPatch, ID: id, Patch: ops, IfMatch: ifMatch})
}

// Read appends a read of id.
func (b *Batch) Read(id string) { b.Add(BatchOp{Kind: BatchRead, ID: id}) }

// Len is the number of operations.
func (b *Batch) Len() int { return len(b.Ops) }

// Fits reports whether the batch is within the service limits.
func (b *Batch) Fits() bool { return len(b.Ops) <= MaxBatchOps && b.Bytes <= MaxBatchBytes }

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

// Is reports whether target is the Condition of the failing operation's
// status, so that errors.Is(err, ErrConflict) holds for a batch whose
// operation met an existing document.
func (e *BatchError) Is(target error) bool { return matches(target, e.StatusCode) }

// Error names the partition and the failing operation.
func (e *BatchError) Error() string {
	return fmt.Sprintf("cosmos batch on partition %q rolled back: operation %d (%s) failed with status %d", e.Partition, e.Index, e.ID, e.StatusCode)
}

// BatchResult holds the per-operation results of a committed batch.
type BatchResult struct {
	// IDs are the ids of the operations that committed, in order: those
	// of ExecuteTolerant's batch less the operations it dropped.
	IDs    []string
	ETags  []azcore.ETag
	Bodies [][]byte
}

// Execute commits b atomically. A rolled-back batch returns *BatchError;
// a request that failed as a whole returns *Error.
func (s *Store) Execute(ctx context.Context, b *Batch, wantBodies bool) (*BatchResult, error) {
	if len(b.Ops) == 0 {
		return &BatchResult{}, nil
	}
	if !b.Fits() {
		return nil, fmt.Errorf("cdb: internal error: batch of %d operations / %d bytes exceeds the service limits", len(b.Ops), b.Bytes)
	}
	tb := s.c.NewTransactionalBatch(pk(b.Partition))
	for _, op := range b.Ops {
		o := &azcosmos.TransactionalBatchItemOptions{IfMatchETag: op.IfMatch}
		switch op.Kind {
		case BatchCreate:
			tb.CreateItem(op.Doc, o)
		case BatchUpsert:
			tb.UpsertItem(op.Doc, o)
		case BatchReplace:
			tb.ReplaceItem(op.ID, op.Doc, o)
		case BatchDelete:
			tb.DeleteItem(op.ID, o)
		case BatchPatch:
			tb.PatchItem(op.ID, op.Patch, o)
		case BatchRead:
			tb.ReadItem(op.ID, o)
		}
	}
	var resp azcosmos.TransactionalBatchResponse
	err := s.Do(ctx, Call{Op: OpBatch, PartitionKey: b.Partition, Operations: len(b.Ops)}, func(ctx context.Context) (Result, error) {
		var err error
		resp, err = s.c.ExecuteTransactionalBatch(ctx, tb, &azcosmos.TransactionalBatchOptions{EnableContentResponseOnWrite: wantBodies, PriorityLevel: s.level(ctx)})
		s.observe(b.Partition, &resp.SessionToken, err)
		n := 0
		for _, r := range resp.OperationResults {
			n += len(r.ResourceBody)
		}
		return Result{Bytes: n, Charge: resp.RequestCharge}, err
	})
	if err != nil {
		return nil, err
	}
	if !resp.Success {
		return nil, batchFailure(b, resp)
	}
	out := &BatchResult{IDs: make([]string, len(resp.OperationResults)), ETags: make([]azcore.ETag, len(resp.OperationResults)),
		Bodies: make([][]byte, len(resp.OperationResults))}
	for i, r := range resp.OperationResults {
		out.ETags[i], out.Bodies[i] = r.ETag, r.ResourceBody
		if i < len(b.Ops) {
			out.IDs[i] = b.Ops[i].ID
		}
	}
	return out, nil
}

func batchFailure(b *Batch, resp azcosmos.TransactionalBatchResponse) *BatchError {
	e := &BatchError{Partition: b.Partition, Index: -1}
	for i, r := range resp.OperationResults {
		if r.StatusCode != http.StatusFailedDependency {
			e.Index, e.StatusCode = i, int(r.StatusCode)
			if i < len(b.Ops) {
				e.ID = b.Ops[i].ID
			}
			break
		}
	}
	return e
}

// ExecuteTolerant commits b, dropping operations whose failure is in
// their Tolerate list (e.g. deleting an already-deleted document) and
// retrying the remainder, so "already done" never fails the whole batch.
func (s *Store) ExecuteTolerant(ctx context.Context, b *Batch, wantBodies bool) (*BatchResult, error) {
	for {
		res, err := s.Execute(ctx, b, wantBodies)
		be, ok := err.(*BatchError)
		if !ok || be.Index < 0 || be.Index >= len(b.Ops) || !tolerated(b.Ops[be.Index], be) {
			return res, err
		}
		nb := NewBatch(b.Partition)
		for i, op := range b.Ops {
			if i != be.Index {
				nb.Add(op)
			}
		}
		b = nb
	}
}

func tolerated(op BatchOp, be *BatchError) bool {
	for _, c := range op.Tolerate {
		if errors.Is(be, c) {
			return true
		}
	}
	return false
}
