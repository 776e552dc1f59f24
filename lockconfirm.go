package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

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
// so the fetch does not write again: it reads, until the answer is known
// or the lock it may hold expires (the faults that lost the answer often
// last a while).

// errLockUnsettled marks a fetch that failed holding locks whose state it
// could not learn: it leaves them to expire instead of giving them back.
var errLockUnsettled = errors.New("a lock write's outcome is unknown; its locks are left to expire")

// lockState is what confirming a lock write found.
type lockState int

const (
	// lockNotHeld: the write was not applied (its error says so, or the
	// documents do not hold the token, or one is gone).
	lockNotHeld lockState = iota
	// lockHeld: every document holds the token.
	lockHeld
	// lockUnknown: no read answered before the lock's expiry. The
	// documents may hold the token: only their expiry frees them.
	lockUnknown
)

// confirmLock reports whether every one of ids (in partition instance)
// holds token after a lock write failed with writeErr, with their bodies
// and ETags in the order of ids when they do (lockHeld).
func (p *Provider) confirmLock(ctx context.Context, instance, token string, ids []string, until time.Time, writeErr error) (*cosmos.BatchResult, lockState) {
	if !cosmos.MayHaveApplied(writeErr) {
		return nil, lockNotHeld
	}
	if len(ids) == 0 || len(ids) > cosmos.MaxBatchOps {
		return nil, lockUnknown
	}
	for attempt := 0; ; attempt++ {
		res, err := p.readLockedPrimary(ctx, instance, ids)
		if err == nil {
			if holdToken(res.Bodies, token) {
				return res, lockHeld
			}
			return nil, lockNotHeld
		}
		if !transientRead(err) {
			return nil, lockNotHeld
		}
		// The primary did not answer: a replica that shows the lock is
		// proof enough (none can show a write that did not happen); one
		// that does not may lag, so it proves nothing.
		if res, ok := p.readLockedReplica(ctx, instance, ids, token); ok {
			return res, lockHeld
		}
		d := min(10*time.Millisecond<<min(attempt, 5), 200*time.Millisecond)
		if !p.now().Add(d).Before(until) {
			return nil, lockUnknown
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, lockUnknown
		case <-t.C:
		}
	}
}

// readLockedPrimary reads ids through one transactional batch, which the
// partition's primary serves (a lagging replica may not have the lock
// write yet).
func (p *Provider) readLockedPrimary(ctx context.Context, instance string, ids []string) (*cosmos.BatchResult, error) {
	b := cosmos.NewBatch(instance)
	for _, id := range ids {
		b.Read(id)
	}
	res, err := p.st.Execute(ctx, b, true)
	if err != nil {
		return nil, err
	}
	if len(res.Bodies) != len(ids) || len(res.ETags) != len(ids) {
		return nil, fmt.Errorf("cosmos batch read of %d documents returned %d bodies", len(ids), len(res.Bodies))
	}
	return res, nil
}

// readLockedReplica reads ids one by one; ok only if each holds token.
func (p *Provider) readLockedReplica(ctx context.Context, instance string, ids []string, token string) (*cosmos.BatchResult, bool) {
	res := &cosmos.BatchResult{Bodies: make([][]byte, 0, len(ids)), ETags: make([]azcore.ETag, 0, len(ids))}
	for _, id := range ids {
		body, etag, err := p.st.Read(ctx, instance, id)
		if err != nil || !holdToken([][]byte{body}, token) {
			return nil, false
		}
		res.Bodies, res.ETags = append(res.Bodies, body), append(res.ETags, etag)
	}
	return res, true
}

// holdToken reports whether every document of bodies is locked with token.
func holdToken(bodies [][]byte, token string) bool {
	for _, body := range bodies {
		var head struct {
			LockToken *string `json:"lockToken"`
		}
		if json.Unmarshal(body, &head) != nil || head.LockToken == nil || *head.LockToken != token {
			return false
		}
	}
	return true
}

// transientRead reports whether a failed read may succeed if repeated (a
// throttle, a timeout, a reset, a 503), not a missing document.
func transientRead(err error) bool {
	var be *cosmos.BatchError
	if errors.As(err, &be) {
		return be.Retryable()
	}
	return cosmos.IsRetryable(err)
}

// lockedIDs lists the documents an orchestration lock batch writes: the
// instance document, then each message, in the batch's order (the order
// its result would have had).
func lockedIDs(instance string, lock *cosmos.Batch) []string {
	ids := make([]string, 0, lock.Len())
	ids = append(ids, instanceDocID(instance))
	for _, op := range lock.Ops {
		if op.ID != "" && op.ID != ids[0] { // skip the instance's read (the takeover check) and its lock (a create has no op id)
			ids = append(ids, op.ID)
		}
	}
	return ids
}
