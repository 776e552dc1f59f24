package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Held locks: finding the lock a token names (in memory, or rebuilt from
// the documents for a lock taken by another process), checking it is
// still live, and the patches that release a lock or a message. Fetch,
// ack, renew and abandon all need them, so none of those files owns them.

// orchLockFor returns the lock for token: from memory, or — for a lock
// fetched by another process — rebuilt from the instance document and a
// query for the messages tagged with it.
func (p *Provider) orchLockFor(ctx context.Context, op, token string) (*orchLock, error) {
	if lk, ok := p.orchLocks.get(token); ok {
		return lk, nil
	}
	inst, err := parseOrchToken(op, token)
	if err != nil {
		return nil, err
	}
	doc, etag, err := p.readInstance(ctx, inst)
	if err != nil {
		return nil, err
	}
	if doc == nil || doc.LockToken == nil || *doc.LockToken != token {
		return nil, errInvalidToken(op)
	}
	lk := &orchLock{instance: inst, token: token, doc: *doc, etag: etag, lockedUntil: time.UnixMilli(deref(doc.LockedUntil))}
	q := "SELECT * FROM c WHERE (c.type = 'orch_queue' AND c.lockToken = @token) OR c.type = 'kv' OR c.type = 'kv_delta' OR c.type = 'kv_undo'"
	_, err = p.st.Query(ctx, q, cosmos.QueryParams{}.Add("@token", token), cosmos.QueryOptions{Partition: &inst, PageSize: -1}, func(raw []byte) bool {
		var head struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(raw, &head)
		switch head.Type {
		case docOrchQueue:
			var m queueDoc
			if json.Unmarshal(raw, &m) == nil {
				lk.messages = append(lk.messages, &m)
			}
		case docKV, docKVDelta, docKVUndo:
			var d kvDoc
			if json.Unmarshal(raw, &d) == nil {
				switch head.Type {
				case docKV:
					lk.storeKV(d)
				case docKVUndo:
					lk.undo = append(lk.undo, d)
				default:
					lk.deltaKeys = append(lk.deltaKeys, d.Key)
					lk.delta = append(lk.delta, d)
				}
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return lk, nil
}

// holdOrchLock finds the lock for token and serialises its use in this
// process; with live it also refuses an expired lock. Call unlock when
// done.
func (p *Provider) holdOrchLock(ctx context.Context, op, token string, live bool) (*orchLock, func(), error) {
	lk, err := p.orchLockFor(ctx, op, token)
	if err != nil {
		return nil, nil, duroxide.Wrap(op, err)
	}
	lk.mu.Lock()
	if lk.finished {
		lk.mu.Unlock()
		return nil, nil, errInvalidToken(op)
	}
	if live {
		if err := p.checkLive(op, lk); err != nil {
			lk.mu.Unlock()
			return nil, nil, err
		}
	}
	return lk, lk.mu.Unlock, nil
}

func (p *Provider) checkLive(op string, lk *orchLock) error {
	if !p.now().Before(lk.lockedUntil) {
		return errLockExpired(op)
	}
	return nil
}

// workLockFor returns the lock for a work item token, from memory or by
// reading the item.
func (p *Provider) workLockFor(ctx context.Context, op, token string) (*workLock, error) {
	if lk, ok := p.workLocks.get(token); ok {
		return lk, nil
	}
	inst, id, err := parseWorkToken(op, token)
	if err != nil {
		return nil, err
	}
	body, etag, err := p.st.Read(ctx, inst, id)
	if errors.Is(err, cosmos.ErrNotFound) {
		return nil, duroxide.Kinded(duroxide.ErrLockLost, op, "Invalid lock token: the work item no longer exists (acked, cancelled or deleted)")
	}
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	var doc queueDoc
	if err := json.Unmarshal(body, &doc); err != nil || doc.LockToken == nil || *doc.LockToken != token {
		return nil, errInvalidToken(op)
	}
	doc.ETag = string(etag)
	return &workLock{instance: inst, itemID: id, token: token, etag: etag, lockedUntil: time.UnixMilli(deref(doc.LockedUntil)), doc: doc}, nil
}

func (p *Provider) checkWorkLive(op string, lk *workLock) error {
	if !p.now().Before(lk.lockedUntil) {
		return errLockExpired(op)
	}
	return nil
}

// refreshWorkLock re-reads a locked work item after an ETag mismatch and
// reports whether it is still locked with lk's token and not expired; if
// so lk takes its current ETag and expiry. A read that fails for any
// reason but a missing item returns its error: a transient failure says
// nothing about the lock. The caller holds lk.mu.
func (p *Provider) refreshWorkLock(ctx context.Context, lk *workLock) (bool, error) {
	body, etag, err := p.st.Read(ctx, lk.instance, lk.itemID)
	if errors.Is(err, cosmos.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var doc queueDoc
	if json.Unmarshal(body, &doc) != nil || doc.LockToken == nil || *doc.LockToken != lk.token {
		return false, nil
	}
	until := time.UnixMilli(deref(doc.LockedUntil))
	if !p.now().Before(until) {
		return false, nil
	}
	lk.etag, lk.lockedUntil = etag, until
	return true, nil
}

// undecodableBackoff is how long an undecodable work item stays invisible
// after each attempt.
const undecodableBackoff = time.Minute

func releaseOps() azcosmos.PatchOperations {
	var ops azcosmos.PatchOperations
	ops.AppendSet("/lockToken", jsonNull)
	ops.AppendSet("/lockedUntil", jsonNull)
	return ops
}

// unlockMessage adds to b the release of one locked orchestrator message.
// A message that is gone is no longer anyone's to release, so its 404 is
// tolerated (run b with ExecuteTolerant): the instance and the other
// messages are still given back, instead of the whole release failing and
// everything staying locked until the lock and the skew margin pass.
func unlockMessage(b *cosmos.Batch, id string, attempts uint32, visibleAt *int64) {
	b.Add(cosmos.BatchOp{Kind: cosmos.BatchPatch, ID: id, Patch: unlockMessageOps(attempts, visibleAt), Tolerate: []error{cosmos.ErrNotFound}})
}

func unlockMessageOps(attempts uint32, visibleAt *int64) azcosmos.PatchOperations {
	var ops azcosmos.PatchOperations
	ops.AppendSet("/lockToken", jsonNull)
	ops.AppendSet("/lockedUntil", jsonNull)
	if visibleAt != nil {
		ops.AppendSet("/visibleAt", *visibleAt)
	}
	ops.AppendSet("/attemptCount", attempts)
	return ops
}

// releaseVisibleAt is when released messages become visible again: a
// delay moves them to now+delay; without one they keep their visibleAt,
// already past when they were fetched. Writing now instead would move
// them into this process's future, which a process whose clock runs
// behind does not reach while it sees messages enqueued later: they would
// overtake the released ones (and a queue is FIFO).
func (p *Provider) releaseVisibleAt(delay time.Duration) *int64 {
	if delay <= 0 {
		return nil
	}
	return ptr(ms(p.now().Add(delay)))
}

// visibleAt is the visibleAt a new message gets: visible (now plus its
// delay, or a timer's fire time) — but a message without a delay is
// written MaxClockSkew in the past, so that every process whose clock is
// within the tolerated skew of ours sees it at once. Written at our "now",
// a message from a process whose clock runs ahead stayed invisible to the
// others, its instance's owner included, until their clocks caught up.
// Delays and timers are still judged by the fetching process's clock.
func (p *Provider) visibleAt(visible, now time.Time) int64 {
	if visible.After(now) {
		return ms(visible)
	}
	return ms(visible.Add(-p.skew()))
}

// workLock is what this process remembers about a work item lock.
type workLock struct {
	instance string
	itemID   string
	token    string
	doc      queueDoc

	// mu serialises ack, abandon and renewal of this lock in this process
	// and guards etag and lockedUntil: a renewal changes the item's ETag,
	// which the ack must then use.
	mu          sync.Mutex
	etag        azcore.ETag
	lockedUntil time.Time
	// triedNext: an ack of this lock already carried a next item's lock
	// (workackfetch.go); a retried ack goes alone.
	triedNext bool
}
