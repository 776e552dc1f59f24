package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/google/uuid"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

var _ duroxide.NextExecutionWriter = (*Provider)(nil)

// EnqueueNextExecution implements duroxide.NextExecutionWriter. The claim
// lives in the instance's start record (claimedAfter, claimKey; a record
// is created for an instance a runtime started) and is written in one
// transactional batch with the queue message, conditioned on the ETag
// the check read (or on the record's absence), so of two requests for
// the successor of one execution exactly one batch commits; the other
// meets 412 (or 409), reads the claim again and is refused. A call
// without a key claims under a token of its own, so that its retry after
// an ambiguous outcome recognises its own claim.
func (p *Provider) EnqueueNextExecution(ctx context.Context, item duroxide.WorkItem, after uint64, key string) error {
	const op = "enqueue_next_execution"
	if !duroxide.StartsNextExecution(item) {
		return duroxide.Kinded(duroxide.ErrInvalidInput, op, "%s does not start a new execution", variantOf(item))
	}
	inst := item.InstanceID()
	if key != "" {
		if err := validateUserString(op, "idempotency key", key); err != nil {
			return err
		}
	}
	token := key
	if token == "" {
		token = uuid.NewString()
	}
	now := p.now()
	msg, err := p.queueDocument(ctx, op, item, docOrchQueue, now, now)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		err := p.claimNextExecution(ctx, op, inst, after, token, msg, now)
		if err == nil {
			p.notifyDoc(docOrchQueue, inst)
		}
		if !errors.Is(err, errClaimRaced) && !duroxide.IsRetryable(err) || attempt+1 >= clientWriteAttempts {
			if errors.Is(err, errClaimRaced) {
				return duroxide.Retryable(op, "the start record of %q kept changing", inst)
			}
			return err
		}
		if err := p.st.Sleep(ctx, 10*time.Millisecond<<attempt); err != nil {
			return duroxide.Wrap(op, err)
		}
	}
}

// errClaimRaced: another write changed the start record between the
// check and the claim; the claim is judged again.
var errClaimRaced = errors.New("the start record changed under the claim")

// claimNextExecution makes one attempt: read the start record at the
// primary, judge the claim, write record and message in one batch.
func (p *Provider) claimNextExecution(ctx context.Context, op, inst string, after uint64, token string, msg []byte, now time.Time) error {
	rec, etag, err := p.readStartRecord(ctx, inst)
	if err != nil {
		return duroxide.Wrap(op, err)
	}
	if rec == nil || rec.Retired {
		// No client start: a runtime started the instance (a child), or a
		// deleted life's retired record stands for an id a runtime started
		// again. The claim starts the record, keeping the deleted lives'
		// last execution.
		found, err := p.committedInstance(ctx, inst)
		if err != nil {
			return duroxide.Wrap(op, err)
		}
		if !found {
			return duroxide.Kinded(duroxide.ErrInstanceNotFound, op, "instance %q not found", inst)
		}
		var last uint64
		if rec != nil {
			last = rec.LastExecution
		}
		rec = &startRecordDoc{ID: startRecordDocID(inst), InstanceID: inst, Type: docStartRecord, EnqueuedAt: ms(now), LastExecution: last}
	}
	if c := rec.ClaimedAfter; c != nil && *c >= after {
		if *c == after && rec.ClaimKey == token {
			return nil // our own claim (a retry, or an ambiguous earlier attempt)
		}
		return duroxide.Kinded(duroxide.ErrStaleExecution, op, "a request already started the execution after %d of %q", *c, inst)
	}
	rec.ClaimedAfter, rec.ClaimKey, rec.ETag = &after, token, ""
	b := cosmos.NewBatch(inst)
	if etag == "" {
		b.Create(mustJSON(rec))
	} else {
		b.Replace(rec.ID, mustJSON(rec), &etag)
	}
	b.Create(msg)
	_, err = p.st.Execute(ctx, b, false)
	var be *cosmos.BatchError
	if errors.As(err, &be) && be.Index == 0 && (errors.Is(err, cosmos.ErrConflict) || errors.Is(err, cosmos.ErrPreconditionFailed)) {
		return errClaimRaced
	}
	return duroxide.Wrap(op, err)
}

// readStartRecord reads inst's start record and its ETag at the primary
// (nil when there is none).
func (p *Provider) readStartRecord(ctx context.Context, inst string) (*startRecordDoc, azcore.ETag, error) {
	body, etag, err := p.readPrimaryTagged(ctx, inst, startRecordDocID(inst))
	if errors.Is(err, cosmos.ErrNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	var rec startRecordDoc
	if err := json.Unmarshal(body, &rec); err != nil {
		return nil, "", duroxide.Permanent("read_start_record", "start record of %q cannot be decoded: %v", inst, err)
	}
	return &rec, etag, nil
}
