package cdb

import (
	"context"
	"errors"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// An activity's ack that locks the worker's next item. A fan-out's
// activities live in their instance's partition, and the ack of one is a
// batch there; when a kept candidate (workcandidates.go) of the same
// partition waits, the batch also carries that candidate's lock patch,
// so the next activity costs no request of its own. The patch is
// conditioned on the ETag its discovery read, as a fetch's is; a
// candidate that changed since fails the batch at its own operation, and
// the ack is sent again without it (one request more than a plain ack,
// and the kept queue dropped, as a fetch's miss drops it). The batch is
// atomic, so when its answer is lost the next item's lock tells whether
// it applied (confirmNext).

var _ duroxide.WorkAckFetcher = (*Provider)(nil)

// nextWork is what the caller of an ack asks to lock next.
type nextWork struct {
	lockTimeout time.Duration
	tags        duroxide.TagFilter
}

// nextLock is the candidate an ack batch locks, under token until until.
type nextLock struct {
	c     candidate
	token string
	until time.Time
	claim string // the claims key held while the batch runs
}

// AckWorkItemAndFetch implements duroxide.WorkAckFetcher.
func (p *Provider) AckWorkItemAndFetch(ctx context.Context, lockToken string, completion duroxide.WorkItem, lockTimeout time.Duration, tags duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	if err := p.RefuseDispatch(); err != nil {
		return nil, p.AckWorkItem(ctx, lockToken, completion)
	}
	return p.ackWork(ctx, lockToken, completion, &nextWork{lockTimeout: lockTimeout, tags: tags})
}

// addNextLock appends to b the lock of a kept candidate in lk's
// partition, of no session, that want's tags allow; nil when there is
// none (or want is nil, or kept candidates are off).
func (p *Provider) addNextLock(ctx context.Context, b *cosmos.Batch, lk *workLock, want *nextWork, now time.Time) *nextLock {
	if want == nil || p.opts.WorkCandidateTTL <= 0 || lk.triedNext {
		return nil
	}
	lk.triedNext = true // one try per lock: a retried ack goes alone
	extra, params, ok := tagClause(want.tags)
	if !ok {
		return nil
	}
	slots, err := p.dispatcherSlots(ctx)
	if err != nil {
		return nil
	}
	inSlots := inSlotsFunc(slots)
	mine := func(c candidate) bool { return c.instance == lk.instance && c.session == nil && inSlots(c) }
	// The runtime fetches with a session configuration while it has room
	// for sessions, and without one otherwise: either page may hold it.
	for _, filter := range []string{extra + "\x00" + string(mustJSON(params)),
		extra + " AND (NOT IS_DEFINED(c.sessionId) OR IS_NULL(c.sessionId))" + "\x00" + string(mustJSON(params))} {
		c, ok := p.kept.pop(filter, now, mine)
		if !ok {
			continue
		}
		key := "w\x00" + c.instance + "\x00" + c.ids[0]
		if !p.claims.take(key) {
			continue // a sibling fetch is locking it
		}
		n := &nextLock{c: c, token: newWorkToken(c.instance, c.ids[0]), until: now.Add(want.lockTimeout), claim: key}
		var ops azcosmos.PatchOperations
		ops.AppendSet("/lockToken", n.token)
		ops.AppendSet("/lockedUntil", ms(n.until))
		ops.AppendIncrement("/attemptCount", 1)
		etag := azcore.ETag(c.etag)
		b.Patch(c.ids[0], ops, &etag)
		return n
	}
	return nil
}

// release gives back the claim n holds, if any.
func (n *nextLock) release(p *Provider) {
	if n != nil {
		p.claims.drop(n.claim)
	}
}

// refused reports that the batch failed at n's own operation: the
// candidate changed since its discovery (taken, deleted, relocked).
func (n *nextLock) refused(be *BatchError, err error) bool {
	if n == nil || !errors.As(err, &be) || be.ID != n.c.ids[0] {
		return false
	}
	return errors.Is(be, cosmos.ErrPreconditionFailed) || errors.Is(be, cosmos.ErrNotFound)
}

// drop removes n's operation from b (the ack goes alone) and forgets the
// rest of the kept page, as a fetch's miss does; it returns nil.
func (n *nextLock) drop(p *Provider, b *cosmos.Batch) *nextLock {
	if n == nil {
		return nil
	}
	nb := cosmos.NewBatch(b.Partition)
	for _, op := range b.Ops {
		if !(op.Kind == cosmos.BatchPatch && op.ID == n.c.ids[0]) {
			nb.Add(op)
		}
	}
	*b = *nb
	p.kept.forget(n.c.instance, n.c.ids[0])
	n.release(p)
	return nil
}

// locked turns a committed batch's last result, n's lock, into the item
// it locked (nil without n).
func (n *nextLock) locked(ctx context.Context, p *Provider, res *cosmos.BatchResult, now time.Time) (*duroxide.LockedWorkItem, error) {
	if n == nil || res == nil || len(res.Bodies) == 0 {
		return nil, nil
	}
	last := len(res.Bodies) - 1
	item, err := p.lockedWorkItem(ctx, n.c, n.token, res.Bodies[last], res.ETags[last], now, n.until)
	if err != nil {
		// The ack committed; the next item is locked to a token nobody
		// holds and comes back when its lock expires.
		p.opts.Logger.Warn("decoding the work item an ack locked", "instance_id", n.c.instance, "error", err)
		return nil, nil
	}
	return item, nil
}

// confirmNext reads whether an unanswered batch applied, by the lock it
// wrote on n's item; ok with the item when it did.
func (p *Provider) confirmNext(ctx context.Context, n *nextLock, writeErr error) (*duroxide.LockedWorkItem, bool) {
	res, state := p.confirmLock(ctx, n.c.instance, n.token, []string{n.c.ids[0]}, n.until, writeErr)
	if state != lockHeld {
		return nil, false
	}
	item, err := n.locked(ctx, p, res, p.now())
	return item, err == nil
}
