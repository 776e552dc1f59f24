package cdb

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Confirming a lock whose write was applied but not answered. A fetch
// locks with one write (a patch for a work item, a batch for an
// orchestration) that also counts an attempt on what it locks. When the
// service applies that write but the answer is lost — a 503 or 408 after
// the write, a reset — walking away would leave the work locked under a
// token nobody holds until the lock and the clock-skew margin pass, with
// an attempt counted although nothing ran: under repeated faults a
// healthy message is poisoned. A retried write is never a second write,
// so the fetch does not write again: it reads.

// confirmLock reads ids (in partition instance) at the primary — a
// lagging replica may not have the write yet — after a lock write failed
// with writeErr, and reports whether every one of them holds token, with
// their bodies and ETags in the order of ids. Not ok when writeErr says
// the write was not applied, when any of them holds another token or is
// gone, or when the read itself fails (the outcome stays unknown, and the
// caller reports writeErr).
func (p *Provider) confirmLock(ctx context.Context, instance, token string, ids []string, writeErr error) (*cosmos.BatchResult, bool) {
	if !cosmos.MayHaveApplied(writeErr) || len(ids) == 0 || len(ids) > cosmos.MaxBatchOps {
		return nil, false
	}
	b := cosmos.NewBatch(instance)
	for _, id := range ids {
		b.Read(id)
	}
	var res *cosmos.BatchResult
	err := p.retryIdempotent(ctx, "read", func() error {
		r, err := p.st.Execute(ctx, b, true)
		if err != nil {
			return err
		}
		if len(r.Bodies) != len(ids) || len(r.ETags) != len(ids) {
			return fmt.Errorf("cosmos batch read of %d documents returned %d bodies", len(ids), len(r.Bodies))
		}
		res = r
		return nil
	})
	if err != nil {
		return nil, false
	}
	for _, body := range res.Bodies {
		var head struct {
			LockToken *string `json:"lockToken"`
		}
		if json.Unmarshal(body, &head) != nil || head.LockToken == nil || *head.LockToken != token {
			return nil, false
		}
	}
	return res, true
}

// lockedIDs lists the documents an orchestration lock batch writes: the
// instance document, then each message, in the batch's order (the order
// its result would have had).
func lockedIDs(instance string, lock *cosmos.Batch) []string {
	ids := make([]string, 0, lock.Len())
	ids = append(ids, instanceDocID(instance))
	for _, op := range lock.Ops[1:] {
		ids = append(ids, op.ID)
	}
	return ids
}
