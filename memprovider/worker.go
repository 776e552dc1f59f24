package memprovider

import (
	"context"
	"slices"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// EnqueueForWorker implements duroxide.Provider.
func (p *Provider) EnqueueForWorker(ctx context.Context, item duroxide.WorkItem) error {
	const op = "enqueue_for_worker"
	if err := ctx.Err(); err != nil {
		return duroxide.Wrap(op, err)
	}
	a, ok := item.(duroxide.ActivityExecuteItem)
	if !ok {
		return duroxide.Kinded(duroxide.ErrInvalidInput, op, "work item %T does not belong on the worker queue", item)
	}
	if err := p.checkItem(op, a, ""); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.workQueue = append(p.workQueue, &workMessage{seq: p.nextSeq(), item: a, visibleAt: now, enqueuedAt: now})
	p.notify()
	p.enqueues.Notify(duroxide.WorkerQueue, a.InstanceID())
	return nil
}

// FetchWorkItem implements duroxide.Provider.
func (p *Provider) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *duroxide.SessionFetchConfig, tags duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	return pollFor(ctx, p, pollTimeout, func() *duroxide.LockedWorkItem {
		return p.tryFetchWorkItem(lockTimeout, session, tags)
	})
}

func (p *Provider) tryFetchWorkItem(lockTimeout time.Duration, session *duroxide.SessionFetchConfig, tags duroxide.TagFilter) *duroxide.LockedWorkItem {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for _, m := range p.workQueue {
		if m.visibleAt.After(now) || lockedAt(m.lockToken, m.lockedUntil, now) || !tags.Matches(m.item.Tag) {
			continue
		}
		if sid := m.item.SessionID; sid != nil {
			if session == nil {
				continue
			}
			// A session item goes to the session's owner, or to anyone
			// when the session is unowned or its lock expired.
			if s := p.sessions[*sid]; s != nil && s.owner != session.OwnerID && s.lockedUntil.After(now) {
				continue
			}
			p.sessions[*sid] = &sessionState{
				id:           *sid,
				owner:        session.OwnerID,
				lockedUntil:  now.Add(session.LockTimeout),
				lastActivity: now,
			}
		}
		m.lockToken, m.lockedUntil = newToken(), now.Add(lockTimeout)
		m.attempts++
		return &duroxide.LockedWorkItem{Item: m.item, LockToken: m.lockToken, AttemptCount: m.attempts, Heartbeat: copyHeartbeat(m.heartbeat),
			EnqueuedAt: m.enqueuedAt}
	}
	return nil
}

// workByToken returns the worker message locked with token (live or
// expired), or nil. Callers hold p.mu.
func (p *Provider) workByToken(token string) *workMessage {
	if token == "" {
		return nil
	}
	for _, m := range p.workQueue {
		if m.lockToken == token {
			return m
		}
	}
	return nil
}

// touchSession records activity on m's session if its lock is live.
// Callers hold p.mu.
func (p *Provider) touchSession(m *workMessage, now time.Time) {
	if m.item.SessionID == nil {
		return
	}
	if s := p.sessions[*m.item.SessionID]; s != nil && s.lockedUntil.After(now) {
		s.lastActivity = now
	}
}

// AckWorkItem implements duroxide.Provider.
func (p *Provider) AckWorkItem(ctx context.Context, lockToken string, completion duroxide.WorkItem) error {
	const op = "ack_work_item"
	if err := ctx.Err(); err != nil {
		return duroxide.Wrap(op, err)
	}
	if completion != nil && completion.Queue() != duroxide.OrchestratorQueue {
		return duroxide.Permanent(op, "completion %s does not belong on the orchestrator queue", completion.Variant())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	m := p.workByToken(lockToken)
	if m == nil || !m.lockedUntil.After(now) {
		return duroxide.Kinded(duroxide.ErrLockLost, op, "lock token not found: the activity was cancelled or its lock expired")
	}
	if completion != nil {
		if err := p.checkItem(op, completion, m.item.Instance); err != nil {
			return err
		}
	}
	p.workQueue = slices.DeleteFunc(p.workQueue, func(w *workMessage) bool { return w == m })
	if completion != nil {
		p.orchQueue = append(p.orchQueue, &orchMessage{seq: p.nextSeq(), instance: completion.InstanceID(), item: completion, visibleAt: now})
	}
	p.touchSession(m, now)
	p.notify()
	if completion != nil {
		p.enqueues.Notify(duroxide.OrchestratorQueue, completion.InstanceID())
	}
	return nil
}

// AbandonWorkItem implements duroxide.Provider.
func (p *Provider) AbandonWorkItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	const op = "abandon_work_item"
	if err := ctx.Err(); err != nil {
		return duroxide.Wrap(op, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.workByToken(lockToken)
	if m == nil {
		return duroxide.Kinded(duroxide.ErrLockLost, op, "Invalid lock token: %q is not held", lockToken)
	}
	m.lockToken, m.lockedUntil = "", time.Time{}
	m.visibleAt = p.now().Add(max(delay, 0))
	if ignoreAttempt && m.attempts > 0 {
		m.attempts--
	}
	p.notify()
	return nil
}

// RenewWorkItemLock implements duroxide.Provider.
func (p *Provider) RenewWorkItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	return p.renewWorkItemLock(ctx, "renew_work_item_lock", lockToken, extendFor, nil)
}

// RenewWorkItemLockWithDetails implements duroxide.HeartbeatRecorder.
func (p *Provider) RenewWorkItemLockWithDetails(ctx context.Context, lockToken string, extendFor time.Duration, details string) error {
	return p.renewWorkItemLock(ctx, "renew_work_item_lock_with_details", lockToken, extendFor, &details)
}

// renewWorkItemLock extends the lock and, when details is set, records
// them as the item's heartbeat.
func (p *Provider) renewWorkItemLock(ctx context.Context, op, lockToken string, extendFor time.Duration, details *string) error {
	if err := ctx.Err(); err != nil {
		return duroxide.Wrap(op, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	m := p.workByToken(lockToken)
	if m == nil || !m.lockedUntil.After(now) {
		return duroxide.Kinded(duroxide.ErrLockLost, op, "lock not found or expired: the activity was cancelled")
	}
	if details != nil {
		if err := p.checkHeartbeat(op, m.item, *details); err != nil {
			return err
		}
		m.heartbeat = &duroxide.Heartbeat{Details: *details, AtMs: now.UnixMilli()}
	}
	m.lockedUntil = now.Add(extendFor)
	p.touchSession(m, now)
	return nil
}

func copyHeartbeat(h *duroxide.Heartbeat) *duroxide.Heartbeat {
	if h == nil {
		return nil
	}
	c := *h
	return &c
}

// RenewSessionLock implements duroxide.Provider.
func (p *Provider) RenewSessionLock(ctx context.Context, ownerIDs []string, extendFor, idleTimeout time.Duration) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, duroxide.Wrap("renew_session_lock", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	n := 0
	for _, s := range p.sessions {
		if slices.Contains(ownerIDs, s.owner) && s.lockedUntil.After(now) && s.lastActivity.Add(idleTimeout).After(now) {
			s.lockedUntil = now.Add(extendFor)
			n++
		}
	}
	return n, nil
}

// CleanupOrphanedSessions implements duroxide.Provider.
func (p *Provider) CleanupOrphanedSessions(ctx context.Context, _ time.Duration) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, duroxide.Wrap("cleanup_orphaned_sessions", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	n := 0
	for id, s := range p.sessions {
		if s.lockedUntil.After(now) {
			continue
		}
		if slices.ContainsFunc(p.workQueue, func(m *workMessage) bool { return m.item.SessionID != nil && *m.item.SessionID == id }) {
			continue
		}
		delete(p.sessions, id)
		n++
	}
	return n, nil
}
