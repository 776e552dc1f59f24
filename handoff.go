package cdb

import (
	"context"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/google/uuid"

	"github.com/duroxide-go/cdb/duroxide"
)

// Handing a turn's activities to the acking runtime's workers
// (duroxide.WorkHandOff). The turn's batch creates its activities' work
// items anyway; an item created with its lock already set costs the
// runtime no discovery query and no lock patch, so a fan-out's
// activities cost one request each (the ack) instead of two or three.
//
// The lock tokens are derived from the turn's lock token and the item's
// id, so every plan of one turn writes the same tokens: when a batch's
// answer is lost and a later read shows it committed, the items the
// plan handed are still returned, without their ETags, and the first
// renewal or ack of each reads it (workLockFor). An item whose batch
// never committed does not exist, and one a differently-planned earlier
// attempt wrote unlocked answers its token as lost. A turn too large for
// one batch hands nothing off (the plan is made again without): a large
// turn's items are written by its roll-forward, not by the batch whose
// answer tells the ETags.

var _ duroxide.WorkHandOff = (*Provider)(nil)

// handOffWant is the caller's duroxide.LocalWork with the dispatch slots
// its leases allow (nil: all).
type handOffWant struct {
	duroxide.LocalWork
	inSlots func(candidate) bool
}

// handedWork is one activity a plan writes locked for the caller.
type handedWork struct {
	doc   *queueDoc
	item  duroxide.ActivityExecuteItem
	until time.Time
}

// AckOrchestrationItemAndLock implements duroxide.WorkHandOff.
func (p *Provider) AckOrchestrationItemAndLock(ctx context.Context, lockToken string, commit duroxide.OrchestrationCommit, want duroxide.LocalWork) ([]*duroxide.LockedWorkItem, error) {
	if want.Max <= 0 || len(commit.WorkerItems) == 0 || p.RefuseDispatch() != nil {
		return nil, p.AckOrchestrationItem(ctx, lockToken, commit)
	}
	slots, err := p.dispatcherSlots(ctx)
	if err != nil {
		return nil, p.AckOrchestrationItem(ctx, lockToken, commit)
	}
	return p.ackTurn(ctx, lockToken, commit, &handOffWant{LocalWork: want, inSlots: inSlotsFunc(slots)})
}

// planFitting plans the turn; a plan that hands activities off but does
// not fit one batch is made again without handing any.
func (p *Provider) planFitting(op string, lk *orchLock, c duroxide.OrchestrationCommit, tp string, want *handOffWant) (*turnPlan, error) {
	plan, err := p.planTurn(op, lk, c, tp, want)
	if err != nil || len(plan.handed) == 0 || plan.batch().Fits() {
		return plan, err
	}
	return p.planTurn(op, lk, c, tp, nil)
}

// handOff writes d locked for the caller when the plan wants it and d is
// eligible: of the instance (the caller checked), visible at once, and
// within the caller's count, tags, names and slots.
func (plan *turnPlan) handOff(d *queueDoc, a duroxide.ActivityExecuteItem, now time.Time) {
	w := plan.want
	if w == nil || len(plan.handed) >= w.Max || !w.Eligible(a) || d.VisibleAt > ms(now) ||
		!w.inSlots(candidate{instance: d.InstanceID}) {
		return
	}
	until := now.Add(w.LockTimeout)
	d.LockToken = ptr(handOffToken(plan.token, d.InstanceID, d.ID))
	d.LockedUntil = ptr(ms(until))
	d.AttemptCount = 1
	plan.handed = append(plan.handed, handedWork{doc: d, item: a, until: until})
}

// handOffToken is a work token (tokens.go) whose last part is derived
// from the turn's lock token and the item, not random.
func handOffToken(turnToken, instance, itemID string) string {
	return workToken(instance, itemID, uuid.NewSHA1(uuid.NameSpaceOID, []byte(turnToken+"\x00"+itemID)))
}

// handedItems returns the plan's handed activities as locked items. Those
// whose ETag the batch's answer gives are remembered as this process's
// locks; the others are read at their first use.
func (plan *turnPlan) handedItems(p *Provider) []*duroxide.LockedWorkItem {
	if plan == nil || len(plan.handed) == 0 {
		return nil
	}
	etags := plan.resultETags()
	out := make([]*duroxide.LockedWorkItem, 0, len(plan.handed))
	for _, h := range plan.handed {
		token := *h.doc.LockToken
		if etag, ok := etags[h.doc.ID]; ok {
			doc := *h.doc
			doc.ETag = string(etag)
			p.workLocks.put(token, &workLock{instance: doc.InstanceID, itemID: doc.ID, token: token, etag: etag, lockedUntil: h.until, doc: doc})
		}
		out = append(out, &duroxide.LockedWorkItem{Item: h.item, LockToken: token, AttemptCount: 1, TraceParent: h.doc.TraceParent,
			EnqueuedAt: time.UnixMilli(h.doc.EnqueuedAt)})
	}
	return out
}

// resultETags maps the ids of the committed batch's operations to the
// ETags its answer gave (none when the answer is unknown).
func (plan *turnPlan) resultETags() map[string]azcore.ETag {
	res := plan.result
	if res == nil || len(res.IDs) != len(res.ETags) {
		return nil
	}
	out := make(map[string]azcore.ETag, len(res.IDs))
	for i, id := range res.IDs {
		if res.ETags[i] != "" {
			out[id] = res.ETags[i]
		}
	}
	return out
}

// unhanded is c without the activities the plan handed off: their
// workers have them, and waking other loops for them would only make
// them poll for items already locked.
func (plan *turnPlan) unhanded(c duroxide.OrchestrationCommit) duroxide.OrchestrationCommit {
	if plan == nil || len(plan.handed) == 0 {
		return c
	}
	handed := make(map[uint64]bool, len(plan.handed))
	for _, h := range plan.handed {
		handed[h.item.ID] = true
	}
	rest := make([]duroxide.WorkItem, 0, len(c.WorkerItems))
	for _, w := range c.WorkerItems {
		if a, ok := w.(duroxide.ActivityExecuteItem); ok && a.Instance == plan.instance && handed[a.ID] {
			continue
		}
		rest = append(rest, w)
	}
	c.WorkerItems = rest
	return c
}
