package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Fetching a work item: discovery (discovery.go), then one If-Match patch
// that locks the item; session-bound items are first claimed through
// their session (session.go).

// FetchWorkItem implements duroxide.Provider.
func (p *Provider) FetchWorkItem(ctx context.Context, lockTimeout, _ time.Duration, session *duroxide.SessionFetchConfig, tags duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	const op = "fetch_work_item"
	if err := p.RefuseDispatch(); err != nil {
		return nil, err
	}
	extra, params, ok := tagClause(tags)
	if !ok {
		return nil, nil
	}
	if session == nil {
		extra += " AND (NOT IS_DEFINED(c.sessionId) OR IS_NULL(c.sessionId))"
	}
	kept := p.opts.WorkCandidateTTL > 0 // workcandidates.go
	filter := extra + "\x00" + string(mustJSON(params))
	p.workLocks.prune(func(l *workLock) bool {
		// A lock in use (being acked or renewed) is not stale; TryLock
		// also keeps the lock order (lk.mu is never taken under the map's
		// mutex otherwise).
		if !l.mu.TryLock() {
			return false
		}
		defer l.mu.Unlock()
		return p.now().After(l.lockedUntil.Add(time.Minute))
	})
	if kept {
		item, err := p.lockKeptWorkItem(ctx, filter, lockTimeout)
		if err != nil || item != nil {
			return item, duroxide.Wrap(op, err)
		}
	}
	found := p.now()
	var pinned func([]uint8) []string
	if session != nil {
		pinned = func(slots []uint8) []string { return p.owned.outside(session.OwnerID, slots, p.now()) }
	}
	cands, err := p.discover(ctx, docWorkerQueue, extra, params, false, nil, pinned)
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	for i, c := range cands {
		if c.session != nil {
			ok, err := p.claimSession(ctx, c.instance, *c.session, session)
			if err != nil {
				return nil, duroxide.Wrap(op, err)
			}
			if !ok {
				continue
			}
		}
		key := "w\x00" + c.instance + "\x00" + c.ids[0]
		if !p.claims.take(key) {
			continue // a sibling slot is locking it
		}
		item, err := p.tryLockWorkItem(ctx, c, lockTimeout)
		p.claims.drop(key)
		if err != nil {
			return nil, duroxide.Wrap(op, err)
		}
		if item != nil {
			if kept {
				p.kept.forget(c.instance, c.ids[0])
				p.kept.keep(filter, beforeSessions(cands[i+1:]), found, p.opts.WorkCandidateTTL)
			}
			return item, nil
		}
	}
	if kept {
		p.kept.drop(filter)
	}
	return nil, nil
}

// lockKeptWorkItem locks the oldest kept candidate for filter; nil when
// there is none or the lock missed (the fetch then queries).
func (p *Provider) lockKeptWorkItem(ctx context.Context, filter string, lockTimeout time.Duration) (*duroxide.LockedWorkItem, error) {
	slots, err := p.dispatcherSlots(ctx)
	if err != nil {
		return nil, err
	}
	inSlots := inSlotsFunc(slots)
	for {
		c, ok := p.kept.pop(filter, p.now(), inSlots)
		if !ok {
			return nil, nil
		}
		key := "w\x00" + c.instance + "\x00" + c.ids[0]
		if !p.claims.take(key) {
			continue // a sibling slot is locking it from its own discovery
		}
		item, err := p.tryLockWorkItem(ctx, c, lockTimeout)
		p.claims.drop(key)
		if err != nil {
			return nil, err
		}
		if item == nil {
			// Taken, changed or deleted since the query: the rest of the
			// page is likely stale too, so the fetch queries afresh.
			p.kept.drop(filter)
		}
		return item, nil
	}
}

// tagClause turns a TagFilter into a query predicate; ok is false for a
// filter that matches nothing.
func tagClause(f duroxide.TagFilter) (clause string, params cosmos.QueryParams, ok bool) {
	const untagged = "NOT IS_DEFINED(c.tag) OR IS_NULL(c.tag)"
	switch f.Mode {
	case duroxide.TagNone:
		return "", nil, false
	case duroxide.TagAny:
		return "", nil, true
	case duroxide.TagDefaultOnly:
		return " AND (" + untagged + ")", nil, true
	case duroxide.TagTags:
		return " AND ARRAY_CONTAINS(@tags, c.tag)", cosmos.QueryParams{}.Add("@tags", f.TagList()), true
	case duroxide.TagDefaultAnd:
		return " AND (" + untagged + " OR ARRAY_CONTAINS(@tags, c.tag))", cosmos.QueryParams{}.Add("@tags", f.TagList()), true
	}
	return "", nil, false
}

func (p *Provider) tryLockWorkItem(ctx context.Context, c candidate, lockTimeout time.Duration) (*duroxide.LockedWorkItem, error) {
	now := p.now()
	until := now.Add(lockTimeout)
	id := c.ids[0]
	token := newWorkToken(c.instance, id)
	var ops azcosmos.PatchOperations
	ops.AppendSet("/lockToken", token)
	ops.AppendSet("/lockedUntil", ms(until))
	ops.AppendIncrement("/attemptCount", 1)
	etag := azcore.ETag(c.etag)
	body, newEtag, err := p.st.Patch(ctx, c.instance, id, ops, &etag, true)
	if errors.Is(err, cosmos.ErrPreconditionFailed) || errors.Is(err, cosmos.ErrNotFound) {
		return nil, nil // another worker got it first
	}
	if err != nil {
		// Applied but unanswered, the lock is ours: confirm it rather than
		// leave the item locked, its attempt counted, under a token nobody
		// holds (lockconfirm.go).
		res, state := p.confirmLock(ctx, c.instance, token, []string{id}, until, err)
		if state != lockHeld {
			return nil, err
		}
		body, newEtag = res.Bodies[0], res.ETags[0]
	}
	return p.lockedWorkItem(ctx, c, token, body, newEtag, now, until)
}

// lockedWorkItem decodes the item a lock write returned (body, with its
// new ETag) and records the lock. An item this build cannot decode is
// put back and nil returned.
func (p *Provider) lockedWorkItem(ctx context.Context, c candidate, token string, body []byte, newEtag azcore.ETag, now, until time.Time) (*duroxide.LockedWorkItem, error) {
	id := c.ids[0]
	var doc queueDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("decode work item document: %w", err)
	}
	wi, err := duroxide.UnmarshalWorkItem([]byte(doc.WorkItem))
	if err != nil {
		// A work item this build cannot decode (e.g. written by a newer
		// writer) is never deleted: it is put back, invisible for a while
		// so it does not block the queue, and reported.
		p.opts.Logger.Error("work item cannot be decoded; left in the queue", "instance_id", c.instance, "item", id, "error", err)
		etag := newEtag
		if _, _, perr := p.st.Patch(ctx, c.instance, id, unlockMessageOps(doc.AttemptCount, ptr(ms(now.Add(undecodableBackoff)))), &etag, false); perr != nil {
			p.opts.Logger.Warn("releasing an undecodable work item", "item", id, "error", perr)
		}
		return nil, nil
	}
	doc.ETag = string(newEtag)
	p.workLocks.put(token, &workLock{instance: c.instance, itemID: id, token: token, etag: newEtag, lockedUntil: until, doc: doc})
	return &duroxide.LockedWorkItem{Item: wi, LockToken: token, AttemptCount: doc.AttemptCount, TraceParent: doc.TraceParent,
		Heartbeat: lockedHeartbeat(&doc), EnqueuedAt: time.UnixMilli(doc.EnqueuedAt)}, nil
}
