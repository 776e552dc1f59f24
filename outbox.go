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

// The transactional outbox. A turn can only write its own partition
// atomically, so a message for another instance (a sub-orchestration
// start, a child's completion for its parent, a detached start, a cancel
// cascade) is first written as an intent document inside the turn's
// batch. Right after the commit the acking process creates the target
// message in the target's partition and deletes the intents; the
// background maintenance loop delivers intents whose delivery did not happen
// (crash, network). The target message id is derived from the intent's
// idempotency key, so delivering twice is a 409 — already done — and the
// target keeps a marker after consuming it, so even a delivery after
// consumption is recognised.

const intentPending = "pending"

// intent builds the outbox intent for target document d.
func (p *Provider) intent(lk *orchLock, exec uint64, seq int, d *queueDoc, now time.Time) outboxDoc {
	tokenID := turnOf(lk.token)
	key := docID(user(lk.instance), num(exec), fixed(tokenID), num(uint64(seq)))
	if d.ID == "" || d.Type == docOrchQueue {
		d.ID = docID(fixed("outbox"), user(lk.instance), fixed(tokenID), num(uint64(seq)))
	}
	d.OutboxKey = key
	return outboxDoc{
		ID: docID(fixed("intent"), user(lk.instance), num(exec), fixed(tokenID), num(uint64(seq))), InstanceID: lk.instance, Type: docOutbox,
		TargetInstanceID: d.InstanceID, TargetDocType: d.Type, Payload: string(mustJSON(d)), IdempotencyKey: key,
		Status: intentPending, CreatedAt: ms(now),
	}
}

// deliverIntents delivers a committed turn's intents, best effort: what
// fails here is retried by the maintenance loop.
func (p *Provider) deliverIntents(ctx context.Context, source string, intents []outboxDoc) {
	if len(intents) == 0 {
		return
	}
	b := cosmos.NewBatch(source)
	for i := range intents {
		if p.deliver(ctx, &intents[i]) {
			b.Delete(intents[i].ID, nil, cosmos.ErrNotFound)
		}
	}
	if b.Len() > 0 {
		if _, err := p.st.ExecuteTolerant(ctx, b, false); err != nil {
			p.opts.Logger.Warn("deleting delivered outbox intents; the maintenance loop will finish", "instance_id", source, "error", err)
		}
	}
}

// deliver creates the intent's target document; true when it exists now.
func (p *Provider) deliver(ctx context.Context, in *outboxDoc) bool {
	_, err := p.st.Create(ctx, in.TargetInstanceID, []byte(in.Payload))
	if err == nil || errors.Is(err, cosmos.ErrConflict) {
		p.notifyDoc(in.TargetDocType, in.TargetInstanceID)
		return true
	}
	p.opts.Logger.Warn("outbox delivery failed; will retry", "intent", in.ID, "target_instance_id", in.TargetInstanceID, "error", err)
	return false
}

// claimIntent confirms at the primary that a swept intent is still
// pending, before it is delivered. The sweep is a cross-partition query
// without this partition's session token (internal/cosmos/sessiontokens.go), so on a real
// account a lagging replica can still show an intent the acker delivered
// and deleted; redelivering it after the target consumed the message would
// run the work twice. A write always reaches the primary: the attempt is
// recorded with If-Match on the ETag the sweep saw, and 404 (gone) or 412
// (changed since) means another process dealt with it. The write stamps
// lastAttemptAt; a failed delivery is then counted by recordAttempt.
func (p *Provider) claimIntent(ctx context.Context, in *outboxDoc) bool {
	if in.ETag == "" {
		return true
	}
	var ops azcosmos.PatchOperations
	ops.AppendSet("/lastAttemptAt", ms(p.now()))
	etag := azcore.ETag(in.ETag)
	_, _, err := p.st.Patch(ctx, in.InstanceID, in.ID, ops, &etag, false)
	switch {
	case err == nil:
		return true
	case errors.Is(err, cosmos.ErrNotFound) || errors.Is(err, cosmos.ErrPreconditionFailed):
		return false
	}
	p.opts.Logger.Warn("outbox: claiming an intent failed; will retry", "intent", in.ID, "error", err)
	return false
}

// cancelElsewhere deletes cancelled activities of other instances (the
// runtime only cancels its own, but the contract does not forbid it).
func (p *Provider) cancelElsewhere(ctx context.Context, ids []duroxide.ScheduledActivityIdentifier) {
	for _, a := range ids {
		err := p.st.Delete(ctx, a.Instance, workerItemID(a.Instance, a.ExecutionID, a.ActivityID), nil)
		if err != nil && !errors.Is(err, cosmos.ErrNotFound) {
			p.opts.Logger.Warn("cancelling an activity of another instance", "instance_id", a.Instance, "error", err)
		}
	}
}

// deliverPendingIntents delivers pending intents older than OutboxMinAge. It is a
// filter-only cross-partition query (the gateway serves those), paged: a
// background round reads a bounded number of pages and the next round
// resumes where it stopped (internal/cosmos/scan.go), so intents in every physical
// partition are reached; with full it reads to the end. Its cost is one
// request per physical partition when there is nothing to do. A failed
// delivery does not end the round: the other intents are still delivered.
func (p *Provider) deliverPendingIntents(ctx context.Context, full bool) (delivered int, err error) {
	q := "SELECT * FROM c WHERE c.type = 'outbox_intent' AND c.createdAt <= @cutoff AND " + notStaged
	var intents []outboxDoc
	err = p.maintenanceScan(ctx, "outbox", full, cosmos.ScanRequest{
		Text: q,
		Fresh: func() cosmos.QueryParams {
			return cosmos.QueryParams{}.Add("@cutoff", ms(p.now().Add(-p.opts.OutboxMinAge)))
		},
		PageSize: 100,
	}, func(raw []byte) {
		var in outboxDoc
		if json.Unmarshal(raw, &in) == nil {
			intents = append(intents, in)
		}
	})
	if err != nil {
		return 0, err
	}
	p.outboxBacklog.Store(int64(len(intents)))
	for i := range intents {
		in := &intents[i]
		if !p.claimIntent(ctx, in) {
			continue
		}
		if !p.deliver(ctx, in) {
			p.recordAttempt(ctx, in)
			continue
		}
		if err := p.st.Delete(ctx, in.InstanceID, in.ID, nil); err != nil && !errors.Is(err, cosmos.ErrNotFound) {
			p.opts.Logger.Warn("deleting a delivered outbox intent", "intent", in.ID, "error", err)
			continue
		}
		delivered++
	}
	return delivered, nil
}

// recordAttempt counts a failed delivery on the intent (attemptCount,
// lastAttemptAt), so operators can see intents that keep failing. Best
// effort: the intent may have been delivered and deleted meanwhile.
func (p *Provider) recordAttempt(ctx context.Context, in *outboxDoc) {
	var ops azcosmos.PatchOperations
	ops.AppendIncrement("/attemptCount", 1)
	ops.AppendSet("/lastAttemptAt", ms(p.now()))
	if _, _, err := p.st.Patch(ctx, in.InstanceID, in.ID, ops, nil, false); err != nil && !errors.Is(err, cosmos.ErrNotFound) {
		p.opts.Logger.Warn("recording an outbox delivery attempt", "intent", in.ID, "error", err)
	}
}
