package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Session affinity. A session document in the instance's partition
// records which worker owns a session and until when. A worker may fetch
// an item of a session it owns, or of a session nobody holds (claiming it
// with an ETag-conditioned write, so two workers never both own it).
// Session locks and item locks are independent: an expired session never
// invalidates a held item lock, and the reverse.

type sessionDoc struct {
	ID           string `json:"id"`
	InstanceID   string `json:"instanceId"`
	Type         string `json:"type"`
	SessionID    string `json:"sessionId"`
	OwnerID      string `json:"ownerId"`
	LockedUntil  int64  `json:"lockedUntil"`
	LastActivity int64  `json:"lastActivity"`
	CreatedAt    int64  `json:"createdAt"`
	ETag         string `json:"_etag,omitempty"`
}

// claimSession reports whether the item of session sid may be fetched by
// cfg's owner, claiming the session if it is free.
func (p *Provider) claimSession(ctx context.Context, inst, sid string, cfg *duroxide.SessionFetchConfig) (bool, error) {
	if cfg == nil {
		return false, nil
	}
	now := p.now()
	id := sessionDocID(inst, sid)
	key := cfg.OwnerID + "\x00" + id
	if p.sessions.isBusy(key, now) {
		// This owner claimed it and the claim has not expired yet: the
		// session cannot have changed hands, so no read is needed.
		return true, nil
	}
	if p.foreignSessions.isBusy(key, now) {
		return false, nil
	}
	fresh := sessionDoc{ID: id, InstanceID: inst, Type: docSession, SessionID: sid, OwnerID: cfg.OwnerID,
		LockedUntil: ms(now.Add(cfg.LockTimeout)), LastActivity: ms(now), CreatedAt: ms(now)}
	// Try to create the session first: a session item seen for the first
	// time usually has no session document yet. A 409 means it exists.
	_, err := p.st.Create(ctx, inst, mustJSON(fresh))
	if err == nil {
		p.held(cfg.OwnerID, inst, id, fresh.LockedUntil)
		return true, nil
	}
	if !errors.Is(err, cosmos.ErrConflict) {
		return false, err
	}
	body, etag, err := p.st.Read(ctx, inst, id)
	if errors.Is(err, cosmos.ErrNotFound) {
		return false, nil // cleaned up in between; the next fetch retries
	}
	if err != nil {
		return false, err
	}
	var cur sessionDoc
	if err := json.Unmarshal(body, &cur); err != nil {
		return false, duroxide.Permanent("claim_session", "session document %s cannot be decoded: %v", id, err)
	}
	if cur.OwnerID != cfg.OwnerID && cur.LockedUntil > ms(now.Add(-p.skew())) {
		// Another owner's session, written with its clock: it counts
		// until MaxClockSkew after its expiry by ours (lapsedBefore).
		// Sessions are never released early (only by expiry), so it stays
		// someone else's at least until then: skip it without reading.
		p.foreignSessions.mark(key, time.UnixMilli(cur.LockedUntil).Add(p.skew()))
		p.owned.release(cfg.OwnerID, id)
		return false, nil
	}
	if cur.OwnerID == cfg.OwnerID && cur.LockedUntil > ms(now) {
		p.held(cfg.OwnerID, inst, id, cur.LockedUntil)
		return true, nil // ours, and still locked: nothing to write
	}
	fresh.CreatedAt = cur.CreatedAt
	_, err = p.st.Replace(ctx, inst, id, mustJSON(fresh), &etag)
	if errors.Is(err, cosmos.ErrPreconditionFailed) || errors.Is(err, cosmos.ErrNotFound) {
		return false, nil
	}
	if err == nil {
		p.held(cfg.OwnerID, inst, id, fresh.LockedUntil)
	}
	return err == nil, err
}

// held records that owner holds session document id of inst until the
// lockedUntil value until (ms), for its fetches (p.sessions) and for
// discovery outside this process's slots (p.owned).
func (p *Provider) held(owner, inst, id string, until int64) {
	p.sessions.mark(owner+"\x00"+id, time.UnixMilli(until))
	p.owned.hold(owner, inst, id, time.UnixMilli(until))
}

// touchSessionOps adds the advisory lastActivity bump of an ack to its
// batch; a missing session document is tolerated.
func (p *Provider) touchSessionOps(b *cosmos.Batch, lk *workLock, now time.Time) {
	if lk.doc.SessionID == nil {
		return
	}
	var ops azcosmos.PatchOperations
	ops.AppendSet("/lastActivity", ms(now))
	b.Add(cosmos.BatchOp{Kind: cosmos.BatchPatch, ID: sessionDocID(lk.instance, *lk.doc.SessionID), Patch: ops, Tolerate: []error{cosmos.ErrNotFound}})
}

// touchSession bumps lastActivity after a renewal, best effort: it is
// advisory, so a lost race or a missing document is ignored.
func (p *Provider) touchSession(ctx context.Context, lk *workLock, now time.Time) {
	if lk.doc.SessionID == nil {
		return
	}
	var ops azcosmos.PatchOperations
	ops.AppendSet("/lastActivity", ms(now))
	if _, _, err := p.st.Patch(ctx, lk.instance, sessionDocID(lk.instance, *lk.doc.SessionID), ops, nil, false); err != nil && !errors.Is(err, cosmos.ErrNotFound) {
		p.opts.Logger.Debug("touching a session", "error", err)
	}
}

// RenewSessionLock implements duroxide.Provider: one filter-only
// cross-partition query for the owners' live, non-idle sessions, then one
// conditional patch per session. Renewal is conditioned on ownership, not
// on the ETag the query returned: the owner's own acks and work-item
// renewals bump lastActivity (and so the ETag) all the time, and a session
// that is still the owner's must not miss its renewal because of them. The
// ETag only makes "still ours, then extend" atomic: on a mismatch the
// session is read again and renewed if the owner still holds it.
func (p *Provider) RenewSessionLock(ctx context.Context, ownerIDs []string, extendFor, idleTimeout time.Duration) (int, error) {
	const op = "renew_session_lock"
	if len(ownerIDs) == 0 {
		return 0, nil
	}
	now := p.now()
	q := "SELECT c.id, c.instanceId, c.ownerId, c.lockedUntil, c.lastActivity, c._etag FROM c WHERE c.type = 'session' AND ARRAY_CONTAINS(@owners, c.ownerId) AND c.lockedUntil > @now AND c.lastActivity > @idle"
	params := cosmos.QueryParams{}.Add("@owners", ownerIDs).Add("@now", ms(now)).Add("@idle", ms(now.Add(-idleTimeout)))
	var sessions []sessionDoc
	if _, err := p.st.Query(ctx, q, params, cosmos.QueryOptions{PageSize: 100}, func(raw []byte) bool {
		var s sessionDoc
		if json.Unmarshal(raw, &s) == nil {
			sessions = append(sessions, s)
		}
		return true
	}); err != nil {
		return 0, duroxide.Wrap(op, err)
	}
	owners := map[string]bool{}
	for _, o := range ownerIDs {
		owners[o] = true
	}
	renewable := func(s *sessionDoc) bool {
		return owners[s.OwnerID] && s.LockedUntil > ms(now) && s.LastActivity > ms(now.Add(-idleTimeout))
	}
	n := 0
	for i := range sessions {
		s := &sessions[i]
		until := ms(now.Add(extendFor))
		ok, err := p.renewSession(ctx, s, until, renewable)
		if err != nil {
			return n, duroxide.Wrap(op, err)
		}
		if ok {
			// A restarted owner learns here the sessions its previous run
			// held, and polls their items wherever their slots are.
			p.owned.hold(s.OwnerID, s.InstanceID, s.ID, time.UnixMilli(until))
			n++
		}
	}
	return n, nil
}

// sessionRenewTries bounds the re-reads of one session whose ETag keeps
// changing under the renewal (its owner acking in a tight loop).
const sessionRenewTries = 5

// renewSession extends s to until while renewable holds for its current
// state; false when it is no longer renewable (taken over, expired,
// idle or deleted).
func (p *Provider) renewSession(ctx context.Context, s *sessionDoc, until int64, renewable func(*sessionDoc) bool) (bool, error) {
	var ops azcosmos.PatchOperations
	ops.AppendSet("/lockedUntil", until)
	for try := 0; ; try++ {
		etag := azcore.ETag(s.ETag)
		_, _, err := p.st.Patch(ctx, s.InstanceID, s.ID, ops, &etag, false)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, cosmos.ErrNotFound):
			return false, nil
		case !errors.Is(err, cosmos.ErrPreconditionFailed):
			return false, err
		case try+1 >= sessionRenewTries:
			return false, nil
		}
		body, etagNow, err := p.st.Read(ctx, s.InstanceID, s.ID)
		if errors.Is(err, cosmos.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		var cur sessionDoc
		if err := json.Unmarshal(body, &cur); err != nil {
			return false, nil
		}
		cur.ETag = string(etagNow)
		if !renewable(&cur) {
			return false, nil
		}
		*s = cur
	}
}

// CleanupOrphanedSessions implements duroxide.Provider: expired sessions
// with no pending items are deleted (ETag-conditioned, so a session
// claimed meanwhile survives).
func (p *Provider) CleanupOrphanedSessions(ctx context.Context, _ time.Duration) (int, error) {
	const op = "cleanup_orphaned_sessions"
	ctx = background(ctx) // a sweep (priority.go)
	q := "SELECT c.id, c.instanceId, c.sessionId, c._etag FROM c WHERE c.type = 'session' AND c.lockedUntil <= @lapsed"
	var sessions []sessionDoc
	if _, err := p.st.Query(ctx, q, cosmos.QueryParams{}.Add("@lapsed", ms(p.lapsedBefore())), cosmos.QueryOptions{PageSize: 100}, func(raw []byte) bool {
		var s sessionDoc
		if json.Unmarshal(raw, &s) == nil {
			sessions = append(sessions, s)
		}
		return true
	}); err != nil {
		return 0, duroxide.Wrap(op, err)
	}
	n := 0
	for _, s := range sessions {
		pending := false
		inst := s.InstanceID
		_, err := p.st.Query(ctx, "SELECT VALUE COUNT(1) FROM c WHERE c.type = 'worker_queue' AND c.sessionId = @sid",
			cosmos.QueryParams{}.Add("@sid", s.SessionID), cosmos.QueryOptions{Partition: &inst}, func(raw []byte) bool {
				var count int
				_ = json.Unmarshal(raw, &count)
				pending = count > 0
				return false
			})
		if err != nil {
			return n, duroxide.Wrap(op, err)
		}
		if pending {
			continue
		}
		etag := azcore.ETag(s.ETag)
		err = p.st.Delete(ctx, inst, s.ID, &etag)
		switch {
		case err == nil:
			n++
		case errors.Is(err, cosmos.ErrPreconditionFailed) || errors.Is(err, cosmos.ErrNotFound):
		default:
			return n, duroxide.Wrap(op, err)
		}
	}
	return n, nil
}
