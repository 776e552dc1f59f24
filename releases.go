package cdb

import (
	"context"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Giving a lock back without handing the item out. A fetch that locked an
// instance may find it must not run a turn: older messages are held back
// by an abandon, the instance never started (the orphan rule), or loading
// it failed. Each release is one batch that unlocks the instance and its
// messages and gives back the attempt the lock counted; the ack uses the
// same release for a turn it drops as stale.

// startOnItsWay reports whether an instance without a committed
// document, whose locked batch holds no start, was started all the same
// (duroxide.ClientWriter's existence: a start record, a queued start not
// visible yet — delayed, or held back by an abandon — or an outbox intent
// that will deliver one). It is asked only when the orphan rule would
// drop a queue message: an instance exists from the moment its start is
// accepted, and its messages wait for the start.
func (p *Provider) startOnItsWay(ctx context.Context, lk *orchLock, items []duroxide.WorkItem) (bool, error) {
	drops := false
	for i, m := range lk.messages {
		if i < len(items) && p.orphanExpired(items[i], m) {
			drops = true
		}
	}
	if !drops {
		return false, nil
	}
	return p.InstanceExists(ctx, lk.instance)
}

// startWait is how long a process leaves alone an instance whose
// messages wait for a start or a held batch that it cannot see yet.
const startWait = time.Second

// heldGrace is how long after held messages became visible a fetch that
// did not lock them still gives the instance back: its discovery may
// have read them before they were given back (still locked), or from a
// replica that had not seen the release yet.
const heldGrace = 5 * time.Second

// heldBack reports whether lk's instance has messages the last abandon
// gave back (instanceDoc.Held) that this lock did not take: not visible
// yet (a delay), or missed by a discovery that read them while they were
// still locked. Delivering the newer ones first would reorder the
// instance's queue. The hold is honoured until MaxClockSkew plus
// heldGrace after the held messages became visible (by the abandoner's
// clock), past which every process sees them (or they are gone).
func (p *Provider) heldBack(lk *orchLock, now time.Time) bool {
	h := lk.doc.Held
	if h == nil || h.Until <= ms(now.Add(-p.skew()-heldGrace)) {
		return false
	}
	taken := make(map[string]bool, len(lk.messages))
	for _, m := range lk.messages {
		taken[m.ID] = true
	}
	for _, id := range h.IDs {
		if !taken[id] {
			return true
		}
	}
	return false
}

// releaseHeld gives back a lock taken while older messages are held back
// (heldBack): the messages are unlocked without counting the attempt and
// keep their visibility, the instance keeps its hold, and this process
// leaves the instance alone for a while.
func (p *Provider) releaseHeld(ctx context.Context, lk *orchLock, now time.Time) error {
	p.trail("lock given back: older messages are held", lk, "held", lk.doc.Held.IDs)
	b := cosmos.NewBatch(lk.instance)
	b.Patch(instanceDocID(lk.instance), releaseOps(), &lk.etag)
	for _, m := range lk.messages {
		unlockMessage(b, m.ID, m.AttemptCount-1, nil)
	}
	_, err := p.st.ExecuteTolerant(ctx, b, false)
	wait := time.UnixMilli(lk.doc.Held.Until).Sub(now)
	p.busy.mark(lk.instance, now.Add(min(max(wait, busyRetry), startWait)))
	return err
}

// releaseOrphan applies the orphan rule to an instance that does not
// exist and whose batch cannot create it: queue messages (events for an
// instance that never started) are deleted; anything else is unlocked
// and left for the start that will come. With keep (the instance's
// start is on its way: startOnItsWay) nothing is deleted.
func (p *Provider) releaseOrphan(ctx context.Context, lk *orchLock, created bool, items []duroxide.WorkItem, keep bool) error {
	b := cosmos.NewBatch(lk.instance)
	var dropped []string
	for i, m := range lk.messages {
		if !keep && p.orphanExpired(items[i], m) {
			b.Delete(m.ID, nil, cosmos.ErrNotFound)
			dropped = append(dropped, m.ID)
		} else {
			unlockMessage(b, m.ID, m.AttemptCount-1, nil)
		}
	}
	if created {
		// Nobody else can have touched the provisional document: we
		// hold its lock.
		e := lk.etag
		b.Delete(instanceDocID(lk.instance), &e, cosmos.ErrNotFound, cosmos.ErrPreconditionFailed)
	} else {
		b.Patch(instanceDocID(lk.instance), releaseOps(), &lk.etag)
	}
	_, err := p.st.ExecuteTolerant(ctx, b, false)
	if err == nil {
		p.orphansDropped.Add(int64(len(dropped)))
	}
	p.logOrphans(lk, keep, dropped, err)
	if keep {
		p.busy.mark(lk.instance, p.now().Add(startWait))
	} else {
		p.busy.clear(lk.instance)
	}
	return err
}

// releaseQuietly gives a lock back after a failure, best effort: if it
// fails, the lock simply expires. The fetch never handed the messages
// over, so the attempt its lock counted on each is given back: a run of
// transient faults must not poison them.
func (p *Provider) releaseQuietly(ctx context.Context, lk *orchLock) {
	p.trail("lock given back after a failed fetch", lk)
	b := cosmos.NewBatch(lk.instance)
	b.Patch(instanceDocID(lk.instance), releaseOps(), &lk.etag)
	for _, m := range lk.messages {
		unlockMessage(b, m.ID, max(m.AttemptCount, 1)-1, nil)
	}
	// Retried through transient faults (a release that applied fails the
	// retry's If-Match harmlessly).
	if err := p.retryIdempotent(ctx, "release", func() error { _, err := p.st.ExecuteTolerant(ctx, b, false); return err }); err != nil {
		p.opts.Logger.Warn("releasing a lock after a failed fetch", "instance_id", lk.instance, "error", err)
	}
	p.busy.clear(lk.instance)
}
