package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Deleting an instance that has not run yet: a client start accepted
// (its start record stands) whose first turn has not committed (no
// instance document), such as a delayed start (StartInstanceAt) before
// its time. Such an instance has nothing but its queue messages and the
// record, all in its partition, so one transactional batch deletes the
// messages and retires the record, as a deletion's sweep would: the next
// start of the id begins at the execution after the deleted start's, so
// nothing the deleted start left can pass for the new life's. Each
// delete is conditioned on the ETag read, so a fetch that locks the
// start meanwhile, or a concurrent start or claim, fails the batch, and
// the deletion looks again; a start whose first turn is running (its
// message locked) is refused as running.

// errHasInstance: the instance has its document (it ran, or is being
// deleted): the ordinary deletion applies.
var errHasInstance = errors.New("the instance has a document")

// errLookedAt: a message of the instance other than its start is locked.
var errLookedAt = errors.New("a message queued behind the start is locked")

// unstartedMessage is one queue message of an instance that has not run.
type unstartedMessage struct {
	ID          string `json:"id"`
	WorkItem    string `json:"workItem"`
	LockedUntil *int64 `json:"lockedUntil"`
	ETag        string `json:"_etag"`
}

// deleteUnstarted deletes inst if it is a client start that has not run
// yet; ok is false (and nothing done) for any other instance, which the
// ordinary deletion handles.
func (p *Provider) deleteUnstarted(ctx context.Context, op, inst string) (res *duroxide.DeleteInstanceResult, ok bool, err error) {
	if err := validateInstanceID(op, inst); err != nil {
		return nil, false, err
	}
	for attempt, looks := 0, 0; ; attempt++ {
		res, ok, err = p.deleteUnstartedOnce(ctx, op, inst)
		if (errors.Is(err, cosmos.ErrPreconditionFailed) || errors.Is(err, cosmos.ErrNotFound)) && attempt < 3 {
			continue // the start or its messages changed under us: look again
		}
		if errors.Is(err, errLookedAt) && looks < 40 {
			// A fetch locked a message queued behind the start while it
			// looked at the instance; it lets go at once (the start is
			// not visible), so wait for that rather than fail.
			looks++
			attempt = 0
			select {
			case <-ctx.Done():
				return nil, true, duroxide.Wrap(op, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		if errors.Is(err, errLookedAt) {
			err = duroxide.Kinded(duroxide.ErrInstanceStillRunning, op, "instance %q: its messages stay locked; retry the deletion", inst)
		}
		if errors.Is(err, errHasInstance) {
			return nil, false, err
		}
		if err != nil {
			return nil, ok, duroxide.Wrap(op, err)
		}
		return res, ok, nil
	}
}

func (p *Provider) deleteUnstartedOnce(ctx context.Context, op, inst string) (*duroxide.DeleteInstanceResult, bool, error) {
	doc, docETag, err := p.provisionalInstance(ctx, inst)
	if err != nil {
		return nil, false, err
	}
	rec, etag, err := p.readStartRecord(ctx, inst)
	if err != nil || rec == nil || rec.Retired {
		return nil, false, err
	}
	var msgs []unstartedMessage
	_, err = p.st.Query(ctx, "SELECT c.id, c.workItem, c.lockedUntil, c._etag FROM c WHERE c.type = @type", cosmos.QueryParams{{Name: "@type", Value: docOrchQueue}},
		cosmos.QueryOptions{Partition: &inst, PageSize: cosmos.MaxBatchOps}, func(raw []byte) bool {
			var m unstartedMessage
			if json.Unmarshal(raw, &m) == nil {
				msgs = append(msgs, m)
			}
			return true
		})
	if err != nil {
		return nil, true, err
	}
	last := rec.LastExecution
	held := ms(p.lapsedBefore())
	b := cosmos.NewBatch(inst)
	looked := false
	if doc != nil {
		// A fetch's lock holder: deleted with the rest, unless it holds.
		looked = doc.LockedUntil != nil && *doc.LockedUntil >= held
		b.Delete(doc.ID, &docETag)
	}
	for _, m := range msgs {
		w, _ := duroxide.UnmarshalWorkItem([]byte(m.WorkItem))
		s, start := w.(duroxide.StartOrchestrationItem)
		if m.LockedUntil != nil && *m.LockedUntil >= held {
			if start {
				return nil, true, duroxide.Kinded(duroxide.ErrInstanceStillRunning, op, "instance %q is running its first turn; retry the deletion", inst)
			}
			looked = true
		}
		if start {
			last = max(last, s.ExecutionID)
		}
		e := azcore.ETag(m.ETag)
		b.Delete(m.ID, &e)
	}
	if looked {
		return nil, true, errLookedAt
	}
	b.Replace(rec.ID, retiredRecord(inst, last), &etag)
	if !b.Fits() {
		return nil, true, duroxide.Permanent(op, "instance %q has %d queued messages, more than one batch deletes before its first turn; retry once it has run", inst, len(msgs))
	}
	if _, err := p.st.Execute(ctx, b, false); err != nil {
		return nil, true, err
	}
	// The note is a hint beside the instance: a leftover one is replaced
	// by the id's next start.
	_ = p.st.Delete(ctx, inst, pendingNoteDocID(inst), nil)
	return &duroxide.DeleteInstanceResult{InstancesDeleted: 1, QueueMessagesDeleted: uint64(len(msgs))}, true, nil
}

// provisionalInstance reads inst's instance document at the primary: nil
// when there is none, the document when it is a fetch's provisional one
// (a lock holder for an instance whose first turn has not committed), and
// errHasInstance for any other (an instance that ran, or a deletion's
// tombstone).
func (p *Provider) provisionalInstance(ctx context.Context, inst string) (*instanceDoc, azcore.ETag, error) {
	body, etag, err := p.readPrimaryTagged(ctx, inst, instanceDocID(inst))
	if errors.Is(err, cosmos.ErrNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	var doc instanceDoc
	if err := json.Unmarshal(body, &doc); err != nil || !doc.Provisional || doc.Deleted != nil {
		return nil, "", errHasInstance
	}
	return &doc, etag, nil
}
