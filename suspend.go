package cdb

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Suspension: a turn that commits OrchestrationCommit.Suspend sets the
// instance document's suspended field. Discovery cannot see it (it reads
// queue documents only), so a fetch that locks a suspended instance whose
// messages hold nothing that wakes it (duroxide.WakesSuspended) puts them
// aside instead of returning them: one batch unlocks them, undoes the
// fetch's attempt, makes them invisible for suspendedHold and marks them
// aside (queueDoc.Aside), and the instance document records that it holds
// messages (instanceDoc.Held, the record an abandon also writes: messages
// that must come before newer ones). A suspended instance with pending
// messages therefore costs one lock batch and one release batch per
// suspendedHold, not a fetch per poll. The fetch that finds a wake message
// locks every message marked aside too, however many (a batch at a time),
// and returns them all, oldest first, so the resumed turn receives
// everything that waited and nothing sent later overtakes them. The mark,
// not a list of ids on the instance document, names them: a list would
// have to be capped to keep the document small, and a message beyond the
// cap would wait out its hold after the resume.

// suspendedHold is how long a suspended instance's messages stay aside
// before a fetch looks at the instance again.
const suspendedHold = time.Minute

// suspendedDoc is the instance document's suspension.
type suspendedDoc struct {
	Reason string `json:"reason"`
	At     int64  `json:"at"`
}

// wakeOrHold handles a locked suspended instance: woken reports that a
// locked message wakes it, and then the held messages have joined
// lk.messages; otherwise the messages were put aside and the lock given
// back.
func (p *Provider) wakeOrHold(ctx context.Context, lk *orchLock, until time.Time) (woken bool, err error) {
	for _, m := range lk.messages {
		if wi, err := duroxide.UnmarshalWorkItem([]byte(m.WorkItem)); err == nil && duroxide.WakesSuspended(wi) {
			return true, p.lockHeld(ctx, lk, until)
		}
	}
	now := p.now()
	visible := ms(now.Add(suspendedHold))
	held := heldMessages{Until: visible}
	if h := lk.doc.Held; h != nil {
		held.Until, held.IDs = max(h.Until, visible), slices.Clone(h.IDs)
	}
	release := releaseOps()
	release.AppendSet("/held", held)
	b := cosmos.NewBatch(lk.instance)
	b.Patch(instanceDocID(lk.instance), release, &lk.etag)
	for _, m := range lk.messages {
		ops := unlockMessageOps(max(m.AttemptCount, 1)-1, &visible)
		ops.AppendSet("/aside", true)
		b.Add(cosmos.BatchOp{Kind: cosmos.BatchPatch, ID: m.ID, Patch: ops, Tolerate: []error{cosmos.ErrNotFound}})
	}
	if _, err := p.st.ExecuteTolerant(ctx, b, false); err != nil {
		p.releaseUncounted(ctx, lk, until)
		return false, err
	}
	p.trail("suspended instance's messages put aside", lk, "messages", len(lk.messages))
	p.busy.clear(lk.instance)
	return false, nil
}

// releaseUncounted gives back a suspended instance's lock after a failed
// hold or wake, best effort, undoing the fetch's attempt: the failure was
// the store's, not the messages'. Held messages a failed batch may have
// locked stay locked until until (a transient error can hide a batch that
// applied), so this process leaves the instance alone until then, and the
// wake that follows finds them held again.
func (p *Provider) releaseUncounted(ctx context.Context, lk *orchLock, until time.Time) {
	p.trail("suspended instance's lock given back after a failure", lk)
	b := cosmos.NewBatch(lk.instance)
	b.Patch(instanceDocID(lk.instance), releaseOps(), &lk.etag)
	for _, m := range lk.messages {
		unlockMessage(b, m.ID, max(m.AttemptCount, 1)-1, nil)
	}
	if _, err := p.st.ExecuteTolerant(ctx, b, false); err != nil {
		p.opts.Logger.Warn("releasing a suspended instance's lock", "instance_id", lk.instance, "error", err)
	}
	p.busy.mark(lk.instance, until)
}

// lockHeld locks the messages a suspended instance holds aside (marked
// aside, or listed in instanceDoc.Held's ids by an abandon or by an older
// version) that lk has not locked into lk (its lock token and expiry), a
// batch at a time, and adds them to lk.messages, whatever their visibleAt
// or a lapsed lock: the instance's lock, which this fetch holds, is the
// one that counts. If the query or a batch fails, the whole lock is given
// back and the fetch fails: the next one tries the wake again (messages
// an earlier batch locked are still marked, and taken again).
func (p *Provider) lockHeld(ctx context.Context, lk *orchLock, until time.Time) error {
	if lk.doc.Held == nil {
		return nil
	}
	ids, err := p.heldAside(ctx, lk)
	if err != nil {
		p.releaseUncounted(ctx, lk, until)
		return err
	}
	for start := 0; start < len(ids); start += cosmos.MaxBatchOps {
		b := cosmos.NewBatch(lk.instance)
		for _, id := range ids[start:min(start+cosmos.MaxBatchOps, len(ids))] {
			var ops azcosmos.PatchOperations
			ops.SetCondition("FROM c WHERE c.type = '" + docOrchQueue + "'")
			ops.AppendSet("/lockToken", lk.token)
			ops.AppendSet("/lockedUntil", ms(until))
			ops.AppendIncrement("/attemptCount", 1)
			b.Patch(id, ops, nil)
		}
		res, err := p.st.Execute(ctx, b, true)
		if err != nil {
			p.releaseUncounted(ctx, lk, until)
			return err
		}
		for i, body := range res.Bodies {
			var m queueDoc
			if err := json.Unmarshal(body, &m); err != nil {
				return fmt.Errorf("decode held message: %w", err)
			}
			m.ETag = string(res.ETags[i])
			lk.messages = append(lk.messages, &m)
		}
	}
	return nil
}

// heldAside returns the ids of the messages lk's suspended instance holds
// aside that lk has not locked, and of any other message ready for it:
// the wake's lock batch took what discovery showed, which may leave out
// older messages than it took (a cut page, a resumed scan), and the
// resumed turn must receive every message that waited. A query, not the
// lock batch alone: a listed message that is gone must not fail the wake
// for ever.
func (p *Provider) heldAside(ctx context.Context, lk *orchLock) ([]string, error) {
	q := "SELECT c.id FROM c WHERE c.type = 'orch_queue' AND (c.aside = true OR ARRAY_CONTAINS(@ids, c.id) OR (c.visibleAt <= @now AND " + lockFree + ")) AND " + notStaged
	listed := lk.doc.Held.IDs
	if listed == nil {
		listed = []string{}
	}
	now := p.now()
	params := cosmos.QueryParams{}.Add("@ids", listed).Add("@now", ms(now)).Add("@lapsed", ms(now.Add(-p.skew())))
	var ids []string
	_, err := p.st.Query(ctx, q, params, cosmos.QueryOptions{Partition: &lk.instance, PageSize: -1}, func(raw []byte) bool {
		var r struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(raw, &r) == nil && r.ID != "" && !slices.ContainsFunc(lk.messages, func(m *queueDoc) bool { return m.ID == r.ID }) {
			ids = append(ids, r.ID)
		}
		return true
	})
	return ids, err
}

var _ duroxide.SuspensionReader = (*Provider)(nil)

// Suspension implements duroxide.SuspensionReader (a point read of the
// instance document).
func (p *Provider) Suspension(ctx context.Context, instance string) (bool, string, error) {
	const op = "suspension"
	if err := validateInstanceID(op, instance); err != nil {
		return false, "", err
	}
	doc, _, err := p.readInstance(ctx, instance)
	if err != nil {
		return false, "", duroxide.Wrap(op, err)
	}
	if !doc.exists() || doc.Suspended == nil {
		return false, "", nil
	}
	return true, doc.Suspended.Reason, nil
}
