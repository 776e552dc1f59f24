package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/duroxide"
)

// An orchestration turn commits as one transactional batch in the
// instance's partition. Its first operation replaces the instance document
// with If-Match on the ETag the lock returned: that single condition is
// the lock check (a lost, renewed-elsewhere or deleted lock changes the
// ETag), so a valid ack costs exactly one request. Items for other
// instances go into outbox intents inside the same batch and are
// delivered right after (outbox.go).

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
	q := "SELECT * FROM c WHERE (c.type = 'orch_queue' AND c.lockToken = @token) OR c.type = 'kv' OR (c.type = 'kv_delta')"
	_, err = p.st.query(ctx, q, queryParams{}.add("@token", token), queryOptions{Partition: &inst, PageSize: -1}, func(raw []byte) bool {
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
		case docKV, docKVDelta:
			var d kvDoc
			if json.Unmarshal(raw, &d) == nil {
				if head.Type == docKV {
					lk.kvKeys = append(lk.kvKeys, d.Key)
				} else {
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

// readInstance reads the instance document; nil (no error) if absent or
// being deleted.
func (p *Provider) readInstance(ctx context.Context, inst string) (*instanceDoc, azcore.ETag, error) {
	doc, etag, err := p.readInstanceRaw(ctx, inst)
	if doc != nil && doc.Deleted != nil {
		return nil, "", err
	}
	return doc, etag, err
}

// readInstanceRaw reads the instance document including a tombstoned one.
func (p *Provider) readInstanceRaw(ctx context.Context, inst string) (*instanceDoc, azcore.ETag, error) {
	body, etag, err := p.st.read(ctx, inst, instanceDocID(inst))
	if isNotFound(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	var doc instanceDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, "", duroxide.Permanent("read_instance", "instance document of %q cannot be decoded: %v", inst, err)
	}
	doc.ETag = string(etag)
	return &doc, etag, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
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
	if !p.opts.Now().Before(lk.lockedUntil) {
		return errLockExpired(op)
	}
	return nil
}

// AckOrchestrationItem implements duroxide.Provider.
func (p *Provider) AckOrchestrationItem(ctx context.Context, lockToken string, commit duroxide.OrchestrationCommit) error {
	const op = "ack_orchestration_item"
	if err := validateCommit(op, commit); err != nil {
		return err
	}
	lk, unlock, err := p.holdOrchLock(ctx, op, lockToken, true)
	if err != nil {
		return err
	}
	defer unlock()
	if err := validateCommitOwner(op, lk.instance, commit); err != nil {
		return err
	}
	if lk.ambiguous {
		// An earlier attempt failed with an unknown outcome: it may have
		// committed (and a large turn may since have been rolled forward
		// by someone else), so ask the instance before writing anything.
		done, _, rerr := p.recheckLock(ctx, op, lk, true)
		if rerr != nil {
			return rerr
		}
		if done {
			plan, _ := p.planTurn(op, lk, commit, traceParent(ctx))
			return p.finishAck(ctx, lk, plan, true)
		}
	}
	plan, err := p.planTurn(op, lk, commit, traceParent(ctx))
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		err = p.commitTurn(ctx, plan)
		if err == nil {
			break
		}
		var be *BatchError
		if errors.As(err, &be) && be.Index == 0 && be.StatusCode == http.StatusPreconditionFailed && attempt < 3 {
			// The instance document changed since we locked it. Either our
			// own earlier attempt committed (a retried ack), another
			// process renewed our lock or changed the document (a prune),
			// or the lock is gone.
			done, retry, rerr := p.recheckLock(ctx, op, lk, lk.ambiguous)
			if rerr != nil {
				return rerr
			}
			if done {
				return p.finishAck(ctx, lk, plan, true)
			}
			if retry {
				// Re-plan from the document as it is now: the turn's
				// replace must not write back what changed meanwhile.
				if plan, err = p.planTurn(op, lk, commit, traceParent(ctx)); err != nil {
					return err
				}
				continue
			}
		}
		if errors.As(err, &be) && be.StatusCode == http.StatusConflict && be.Index != 0 && attempt == 0 {
			// Possibly leftovers of a large turn that never committed
			// (after a crash) holding the ids this turn writes; removed
			// only behind the lock proof.
			if n, cerr := p.cleanStale(ctx, lk, turnOf(lk.token)); cerr == nil && n > 0 {
				continue
			}
		}
		if !errors.As(err, &be) && duroxide.IsRetryable(p.ackError(op, plan, err)) {
			lk.ambiguous = true // the batch may or may not have committed
		}
		return p.ackError(op, plan, err)
	}
	p.rememberTurn(plan, commit) // turncache.go
	return p.finishAck(ctx, lk, plan, false)
}

// finishAck ends a committed turn: the lock is released in this process
// and the turn's outbox intents and foreign cancellations are delivered
// (intents are idempotent). earlier says an earlier attempt committed the
// turn: then a large turn's roll-forward may not have run yet.
func (p *Provider) finishAck(ctx context.Context, lk *orchLock, plan *turnPlan, earlier bool) error {
	if earlier {
		if doc, _, rerr := p.readInstance(ctx, lk.instance); rerr == nil && doc != nil && doc.PendingTurn != nil {
			if ferr := p.rollForward(ctx, lk.instance, doc.PendingTurn); ferr != nil {
				p.opts.Logger.Warn("rolling a large turn forward; it will be finished later", "instance_id", lk.instance, "error", ferr)
			}
		}
	}
	lk.finished = true
	p.orchLocks.drop(lk.token)
	p.busy.clear(lk.instance)
	if plan == nil {
		return nil
	}
	p.deliverIntents(ctx, lk.instance, plan.intents)
	p.cancelElsewhere(ctx, plan.foreignCancels)
	return nil
}

// recheckLock re-reads the instance after an ETag mismatch.
func (p *Provider) recheckLock(ctx context.Context, op string, lk *orchLock, mayBeDone bool) (done, retry bool, err error) {
	doc, etag, err := p.readInstance(ctx, lk.instance)
	if err != nil {
		return false, false, duroxide.Wrap(op, err)
	}
	switch {
	case doc == nil:
		return false, false, errInvalidToken(op)
	case mayBeDone && doc.LastAckToken == lk.token:
		return true, false, nil
	case doc.LockToken != nil && *doc.LockToken == lk.token && p.opts.Now().Before(time.UnixMilli(deref(doc.LockedUntil))):
		lk.doc, lk.etag = *doc, etag
		lk.lockedUntil = time.UnixMilli(deref(doc.LockedUntil))
		return false, true, nil
	}
	return false, false, errLockExpired(op)
}

func (p *Provider) ackError(op string, plan *turnPlan, err error) error {
	var be *BatchError
	if errors.As(err, &be) {
		switch {
		case be.Index == 0 && (be.StatusCode == http.StatusPreconditionFailed || be.StatusCode == http.StatusNotFound):
			return errLockExpired(op)
		case be.StatusCode == http.StatusConflict && be.Index > 0 && be.Index < len(plan.kinds) && plan.kinds[be.Index] == docHistory:
			return duroxide.Kinded(duroxide.ErrDuplicateEvent, op, "duplicate history event: %s already exists", be.ID)
		case be.StatusCode == http.StatusRequestEntityTooLarge || be.StatusCode == http.StatusBadRequest:
			return &duroxide.ProviderError{Operation: op, Message: "the turn was refused by Cosmos DB: " + be.Error(), Err: err}
		}
		return &duroxide.ProviderError{Operation: op, Message: be.Error(), Retryable: false, Err: err}
	}
	return duroxide.Wrap(op, err)
}

// validateCommitOwner refuses history events of another instance or
// execution: written under this instance's partition they would be filed
// as a phantom execution (ListExecutions reporting an execution that never
// ran) that no reader of the real one could explain.
func validateCommitOwner(op, instance string, c duroxide.OrchestrationCommit) error {
	for _, e := range c.HistoryDelta {
		if e.InstanceID != instance || e.ExecutionID != c.ExecutionID {
			return duroxide.Kinded(duroxide.ErrInvalidInput, op,
				"history event %d belongs to instance %q execution %d, but the commit is for instance %q execution %d",
				e.EventID, e.InstanceID, e.ExecutionID, instance, c.ExecutionID)
		}
	}
	return nil
}

// validateCommit rejects bad input before anything is written.
func validateCommit(op string, c duroxide.OrchestrationCommit) error {
	if err := validateExecutionID(op, c.ExecutionID); err != nil {
		return err
	}
	if v := c.Metadata.PinnedDuroxideVersion; v != nil {
		if err := validateVersion(op, "pinned version", *v); err != nil {
			return err
		}
	}
	for _, w := range c.WorkerItems {
		if w == nil || w.Queue() != duroxide.WorkerQueue {
			return duroxide.Permanent(op, "worker_items may contain only ActivityExecute, got %s", variantOf(w))
		}
		if err := validateInstanceID(op, w.InstanceID()); err != nil {
			return err
		}
	}
	for _, w := range c.OrchestratorItems {
		if w == nil || w.Queue() != duroxide.OrchestratorQueue {
			return duroxide.Permanent(op, "orchestrator_items may not contain %s", variantOf(w))
		}
		if err := validateInstanceID(op, w.InstanceID()); err != nil {
			return err
		}
	}
	for _, e := range c.HistoryDelta {
		switch k := e.Kind.(type) {
		case nil:
			return duroxide.Permanent(op, "history event %d has no kind", e.EventID)
		case duroxide.KeyValueSet:
			if err := validateUserString(op, "KV key", k.Key); err != nil {
				return err
			}
		case duroxide.KeyValueCleared:
			if err := validateUserString(op, "KV key", k.Key); err != nil {
				return err
			}
		}
	}
	for _, w := range c.WorkerItems {
		if a, ok := w.(duroxide.ActivityExecuteItem); ok && a.SessionID != nil {
			if err := validateUserString(op, "session id", *a.SessionID); err != nil {
				return err
			}
		}
	}
	return nil
}

func variantOf(w duroxide.WorkItem) string {
	if w == nil {
		return "nil"
	}
	return w.Variant()
}

// turnPlan is everything one ack writes, built before any request.
type turnPlan struct {
	instance       string
	token          string
	lock           *orchLock
	commit         batchOp   // replace of the instance document (If-Match)
	ops            []batchOp // the rest of the turn, in order
	kinds          []string  // document type per operation of the batch (commit first), for errors
	intents        []outboxDoc
	foreignCancels []duroxide.ScheduledActivityIdentifier
	staleMarkers   []string // expired orch_received markers (addMarkerCleanup)
	large          bool     // committed as a large turn (large.go), not one batch
}

func (p *Provider) planTurn(op string, lk *orchLock, c duroxide.OrchestrationCommit, tp string) (*turnPlan, error) {
	now := p.opts.Now()
	plan := &turnPlan{instance: lk.instance, token: lk.token, lock: lk, staleMarkers: lk.staleMarkers}
	doc := p.nextInstanceDoc(lk, c, now)
	docJSON := mustJSON(doc)
	if len(docJSON) > maxDocBytes {
		return nil, duroxide.Permanent(op, "the instance document would be %d bytes (output or custom status too large); Cosmos DB allows %d", len(docJSON), maxDocBytes)
	}
	plan.commit = batchOp{kind: bReplace, id: doc.ID, doc: docJSON, ifMatch: &lk.etag}
	plan.kinds = append(plan.kinds, docInstance)
	add := func(kind string, o batchOp) error {
		if len(o.doc) > maxDocBytes {
			return duroxide.Permanent(op, "a %s document would be %d bytes; Cosmos DB allows %d per document", kind, len(o.doc), maxDocBytes)
		}
		plan.ops = append(plan.ops, o)
		plan.kinds = append(plan.kinds, kind)
		return nil
	}

	// History.
	for i := range c.HistoryDelta {
		e := &c.HistoryDelta[i]
		data, err := json.Marshal(e)
		if err != nil {
			return nil, duroxide.Permanent(op, "history event %d cannot be encoded: %v", e.EventID, err)
		}
		h := historyDoc{ID: historyDocID(lk.instance, c.ExecutionID, e.EventID), InstanceID: lk.instance, Type: docHistory,
			ExecutionID: c.ExecutionID, EventID: e.EventID, EventData: string(data)}
		if err := add(docHistory, batchOp{kind: bCreate, id: h.ID, doc: mustJSON(h)}); err != nil {
			return nil, err
		}
	}

	// Worker items, then cancellations: an activity in both lists ends up
	// absent, so it is simply not created.
	cancelled := map[string]bool{}
	for _, a := range c.CancelledActivities {
		if a.Instance == lk.instance {
			cancelled[workerItemID(a.Instance, a.ExecutionID, a.ActivityID)] = true
		} else {
			plan.foreignCancels = append(plan.foreignCancels, a)
		}
	}
	for _, w := range c.WorkerItems {
		a := w.(duroxide.ActivityExecuteItem)
		id := workerItemID(a.Instance, a.ExecutionID, a.ID)
		d, err := p.workerDoc(id, a, now)
		if err != nil {
			return nil, duroxide.Permanent(op, "%v", err)
		}
		d.TraceParent = tp
		if cancelled[id] {
			delete(cancelled, id)
			continue
		}
		if a.Instance != lk.instance {
			plan.intents = append(plan.intents, p.intent(lk, c.ExecutionID, len(plan.intents), d, now))
			continue
		}
		if err := add(docWorkerQueue, batchOp{kind: bCreate, id: id, doc: mustJSON(d)}); err != nil {
			return nil, err
		}
	}
	for id := range cancelled {
		plan.ops = append(plan.ops, batchOp{kind: bDelete, id: id, tolerate: []int{http.StatusNotFound}})
		plan.kinds = append(plan.kinds, docWorkerQueue)
	}

	// Orchestrator items: to this instance directly, to others via the
	// outbox.
	tokenID := turnOf(lk.token)
	for i, w := range c.OrchestratorItems {
		data, err := duroxide.MarshalWorkItem(w)
		if err != nil {
			return nil, duroxide.Permanent(op, "orchestrator item cannot be encoded: %v", err)
		}
		target := w.InstanceID()
		visible := now
		if t, ok := w.(duroxide.TimerFiredItem); ok && target == lk.instance {
			visible = time.UnixMilli(int64(t.FireAtMs))
		}
		q := &queueDoc{InstanceID: target, Type: docOrchQueue, WorkItem: string(data), DispatchSlot: DispatchSlot(target),
			VisibleAt: ms(visible), EnqueuedAt: ms(now), EnqueueOrder: nextOrder(now), TraceParent: tp}
		if target == lk.instance {
			q.ID = docID(user(lk.instance), fixed("orch"), fixed(tokenID), num(uint64(i)))
			if err := add(docOrchQueue, batchOp{kind: bCreate, id: q.ID, doc: mustJSON(q)}); err != nil {
				return nil, err
			}
			continue
		}
		plan.intents = append(plan.intents, p.intent(lk, c.ExecutionID, len(plan.intents), q, now))
	}
	for _, in := range plan.intents {
		if err := add(docOutbox, batchOp{kind: bCreate, id: in.ID, doc: mustJSON(in)}); err != nil {
			return nil, err
		}
	}

	// KV and the consumed messages.
	for _, o := range kvOps(lk, c) {
		plan.ops = append(plan.ops, o)
		plan.kinds = append(plan.kinds, docKV)
	}
	for _, m := range lk.messages {
		if m.OutboxKey != "" {
			// Keep a marker so a late re-delivery of the same intent
			// collides (409) instead of enqueueing the message twice.
			marker := map[string]any{"id": m.ID, "instanceId": lk.instance, "type": docReceived, "outboxKey": m.OutboxKey, "createdAt": ms(now)}
			plan.ops = append(plan.ops, batchOp{kind: bReplace, id: m.ID, doc: mustJSON(marker)})
		} else {
			plan.ops = append(plan.ops, batchOp{kind: bDelete, id: m.ID})
		}
		plan.kinds = append(plan.kinds, docOrchQueue)
	}
	return plan, nil
}

// nextInstanceDoc applies the turn's metadata to the locked instance
// document. Providers never derive metadata from events; custom status is
// the exception the contract makes (last CustomStatusUpdated wins).
func (p *Provider) nextInstanceDoc(lk *orchLock, c duroxide.OrchestrationCommit, now time.Time) instanceDoc {
	doc := lk.doc
	doc.ETag = ""
	doc.Executions = append([]execEntry(nil), lk.doc.Executions...)
	if doc.Provisional || doc.CreatedAt == 0 {
		doc.CreatedAt = ms(now)
	}
	doc.Provisional = false
	doc.ID, doc.InstanceID, doc.Type = instanceDocID(lk.instance), lk.instance, docInstance
	md := c.Metadata
	if c.ExecutionID > doc.CurrentExecutionID {
		// A new execution starts Running with no output and no pin: each
		// execution is pinned by its own OrchestrationStarted.
		doc.CurrentExecutionID = c.ExecutionID
		doc.Status, doc.Output, doc.CompletedAt = duroxide.StatusRunning, nil, nil
		doc.PinnedDuroxideVersion, doc.PinnedVersionPacked = nil, nil
	}
	if doc.Status == "" {
		doc.Status = duroxide.StatusRunning
	}
	if md.Status != nil {
		doc.Status = *md.Status
		if isTerminal(doc.Status) {
			doc.CompletedAt = ptr(ms(now))
		}
	}
	if md.Output != nil {
		doc.Output = md.Output
	}
	if md.OrchestrationName != nil {
		doc.OrchestrationName = *md.OrchestrationName
	}
	if md.OrchestrationVersion != nil {
		doc.OrchestrationVersion = *md.OrchestrationVersion
	}
	if md.ParentInstanceID != nil {
		doc.ParentInstanceID = md.ParentInstanceID
	}
	if v := md.PinnedDuroxideVersion; v != nil {
		doc.PinnedDuroxideVersion = &semverDoc{Major: v.Major, Minor: v.Minor, Patch: v.Patch}
		doc.PinnedVersionPacked = nil // no longer written: see numbers.go
	}
	var status *duroxide.CustomStatusUpdated
	for i := range c.HistoryDelta {
		if cs, ok := c.HistoryDelta[i].Kind.(duroxide.CustomStatusUpdated); ok {
			status = &cs
		}
	}
	if status != nil {
		doc.CustomStatus = status.Status
		doc.CustomStatusVersion++
	}
	ex := doc.execution(c.ExecutionID)
	if ex == nil {
		doc.Executions = append(doc.Executions, execEntry{ID: c.ExecutionID, Status: duroxide.StatusRunning, StartedAt: ms(now)})
		ex = &doc.Executions[len(doc.Executions)-1]
	}
	ex.EventCount += len(c.HistoryDelta)
	if md.Status != nil {
		ex.Status = *md.Status
		if isTerminal(*md.Status) {
			ex.CompletedAt = ptr(ms(now))
		}
	}
	doc.sumExecutions()
	doc.LockToken, doc.LockedUntil = nil, nil
	doc.LastAckToken = lk.token
	noteReceived(&doc, lk, now) // turncache.go
	doc.UpdatedAt = ms(now)
	return doc
}

func isTerminal(status string) bool {
	switch status {
	case duroxide.StatusCompleted, duroxide.StatusFailed, duroxide.StatusContinuedAsNew:
		return true
	}
	return false
}

// commitTurn writes the plan. A turn that fits one batch (the normal case)
// is one request.
func (p *Provider) commitTurn(ctx context.Context, plan *turnPlan) error {
	b := newBatch(plan.instance)
	b.add(plan.commit)
	for _, o := range plan.ops {
		b.add(o)
	}
	if !b.fits() {
		plan.large = true
		return p.commitLargeTurn(ctx, plan)
	}
	p.addMarkerCleanup(b, plan)
	_, err := p.st.executeTolerant(ctx, b, false)
	return err
}

// completionDocID is the id of the completion an ack of work item itemID
// enqueues in the item's own partition: deterministic, so a retried ack
// cannot enqueue it twice and a deletion can remove it with the item.
func completionDocID(inst, itemID string) string {
	return docID(user(inst), fixed("done"), fixed(itemID))
}

// receivedRetention is how long an orch_received marker is kept. A marker
// stops a late re-delivery of an outbox intent from enqueueing its message
// again; re-delivery is only attempted by a process that read the intent
// before its deletion — the acking process right after its commit, or a
// reconciler round (bounded by 4 × OutboxInterval) — which is far shorter
// than this. Older markers are removed by the instance's next turn.
const receivedRetention = time.Hour

// addMarkerCleanup removes the instance's expired markers in the turn's
// batch, as far as the batch has room (the rest go in later turns).
func (p *Provider) addMarkerCleanup(b *batch, plan *turnPlan) {
	for _, id := range plan.staleMarkers {
		if b.len() >= maxBatchOps || b.bytes+len(id)+64 > maxBatchBytes {
			return
		}
		b.delete(id, nil, http.StatusNotFound)
	}
}

// workerItemID is deterministic so cancellation can delete by id and a
// retried ack cannot enqueue an activity twice.
func workerItemID(inst string, exec, activity uint64) string {
	return docID(user(inst), fixed("worker"), num(exec), num(activity))
}

func (p *Provider) workerDoc(id string, a duroxide.ActivityExecuteItem, now time.Time) (*queueDoc, error) {
	data, err := duroxide.MarshalWorkItem(a)
	if err != nil {
		return nil, fmt.Errorf("activity cannot be encoded: %w", err)
	}
	return &queueDoc{ID: id, InstanceID: a.Instance, Type: docWorkerQueue, WorkItem: string(data), DispatchSlot: DispatchSlot(a.Instance),
		VisibleAt: ms(now), EnqueuedAt: ms(now), EnqueueOrder: nextOrder(now),
		ExecutionID: ptr(a.ExecutionID), ActivityID: ptr(a.ID), SessionID: a.SessionID, Tag: a.Tag}, nil
}

// AbandonOrchestrationItem implements duroxide.Provider.
func (p *Provider) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	const op = "abandon_orchestration_item"
	lk, unlock, err := p.holdOrchLock(ctx, op, lockToken, false)
	if err != nil {
		return err
	}
	defer unlock()
	visible := ms(p.opts.Now().Add(max(delay, 0)))
	b := newBatch(lk.instance)
	b.patch(instanceDocID(lk.instance), releaseOps(), &lk.etag)
	for _, m := range lk.messages {
		n := m.AttemptCount
		if ignoreAttempt && n > 0 {
			n--
		}
		b.patch(m.ID, unlockMessageOps(n, visible), nil)
	}
	if _, err := p.st.executeTolerant(ctx, b, false); err != nil {
		var be *BatchError
		if errors.As(err, &be) && be.Index == 0 {
			return errLockExpired(op)
		}
		return duroxide.Wrap(op, err)
	}
	lk.finished = true
	p.orchLocks.drop(lockToken)
	p.busy.clear(lk.instance)
	return nil
}

// RenewOrchestrationItemLock implements duroxide.Provider: one batch
// extends the instance's lock (If-Match: still ours) and the locks of the
// messages it holds, as the seed does, so that other dispatchers do not
// see those messages as unlocked and keep trying to lock them.
func (p *Provider) RenewOrchestrationItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	const op = "renew_orchestration_item_lock"
	lk, unlock, err := p.holdOrchLock(ctx, op, lockToken, true)
	if err != nil {
		return err
	}
	defer unlock()
	until := p.opts.Now().Add(extendFor)
	var ops azcosmos.PatchOperations
	ops.AppendSet("/lockedUntil", ms(until))
	for attempt := 0; ; attempt++ {
		b := newBatch(lk.instance)
		b.patch(instanceDocID(lk.instance), ops, &lk.etag)
		for _, m := range lk.messages {
			if b.len() >= maxBatchOps {
				break
			}
			// Consumed meanwhile can only mean by us (we hold the lock):
			// nothing to extend.
			b.add(batchOp{kind: bPatch, id: m.ID, patch: ops, tolerate: []int{http.StatusNotFound}})
		}
		res, err := p.st.executeTolerant(ctx, b, false)
		if err == nil {
			lk.etag, lk.lockedUntil = res.etags[0], until
			p.busy.mark(lk.instance, until)
			return nil
		}
		var be *BatchError
		if !errors.As(err, &be) || be.Index != 0 {
			return duroxide.Wrap(op, err)
		}
		if be.StatusCode == http.StatusPreconditionFailed && attempt == 0 {
			if _, retry, rerr := p.recheckLock(ctx, op, lk, false); rerr != nil || !retry {
				if rerr != nil {
					return rerr
				}
				return errLockExpired(op)
			}
			continue
		}
		return errLockExpired(op)
	}
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
	body, etag, err := p.st.read(ctx, inst, id)
	if isNotFound(err) {
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
	if !p.opts.Now().Before(lk.lockedUntil) {
		return errLockExpired(op)
	}
	return nil
}

// AckWorkItem implements duroxide.Provider: one batch deletes the item
// (If-Match: still ours) and enqueues the completion in the same
// partition. A completion for another instance (unusual: the runtime
// completes to the scheduling instance) goes through the outbox in the
// same batch, so the delete and the enqueue stay atomic.
func (p *Provider) AckWorkItem(ctx context.Context, lockToken string, completion duroxide.WorkItem) error {
	const op = "ack_work_item"
	if completion != nil {
		if completion.Queue() != duroxide.OrchestratorQueue {
			return duroxide.Permanent(op, "a completion must be an orchestrator item, got %s", completion.Variant())
		}
		if err := validateInstanceID(op, completion.InstanceID()); err != nil {
			return err
		}
	}
	lk, err := p.workLockFor(ctx, op, lockToken)
	if err != nil {
		return err
	}
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if err := p.checkWorkLive(op, lk); err != nil {
		return err
	}
	now := p.opts.Now()
	b := newBatch(lk.instance)
	if lk.doc.OutboxKey != "" {
		// Delivered through the outbox: keep a marker so a late
		// re-delivery of the same intent cannot enqueue it again.
		marker := map[string]any{"id": lk.itemID, "instanceId": lk.instance, "type": docReceived, "outboxKey": lk.doc.OutboxKey, "createdAt": ms(now)}
		b.replace(lk.itemID, mustJSON(marker), &lk.etag)
	} else {
		b.delete(lk.itemID, &lk.etag)
	}
	doneID := completionDocID(lk.instance, lk.itemID)
	var intents []outboxDoc
	if completion != nil {
		data, err := duroxide.MarshalWorkItem(completion)
		if err != nil {
			return duroxide.Permanent(op, "completion cannot be encoded: %v", err)
		}
		q := &queueDoc{ID: doneID, InstanceID: completion.InstanceID(), Type: docOrchQueue, WorkItem: string(data),
			DispatchSlot: DispatchSlot(completion.InstanceID()), VisibleAt: ms(now), EnqueuedAt: ms(now), EnqueueOrder: nextOrder(now),
			TraceParent: traceParent(ctx)}
		if q.InstanceID != lk.instance {
			// The intent's ids derive from the lock token, so a retried
			// ack writes the same intent.
			in := p.intent(&orchLock{instance: lk.instance, token: lk.token}, deref(lk.doc.ExecutionID), 0, q, now)
			intents = append(intents, in)
			b.create(mustJSON(in))
		} else {
			b.create(mustJSON(q))
		}
		if doc := b.ops[len(b.ops)-1].doc; len(doc) > maxDocBytes {
			return duroxide.Permanent(op, "the completion would be %d bytes; Cosmos DB allows %d per document", len(doc), maxDocBytes)
		}
	}
	p.touchSessionOps(b, lk, now)
	for attempt := 0; ; attempt++ {
		_, err := p.st.executeTolerant(ctx, b, false)
		var be *BatchError
		if err != nil && attempt == 0 && errors.As(err, &be) && be.Index == 0 && be.StatusCode == http.StatusPreconditionFailed {
			// The item changed since this process last saw it: another
			// process renewed the lock (a new ETag), or the lock is gone.
			// Still ours and live: commit with the current ETag (the
			// batch's conditions point at lk.etag).
			if p.refreshWorkLock(ctx, lk) {
				continue
			}
		}
		if err == nil {
			break
		}
		if errors.As(err, &be) && be.Index == 0 {
			p.workLocks.drop(lockToken)
			if completion != nil && (p.exists(ctx, lk.instance, doneID) || (len(intents) > 0 && p.exists(ctx, lk.instance, intents[0].ID))) {
				return nil // a retried ack whose first attempt committed
			}
			return duroxide.Kinded(duroxide.ErrLockLost, op, "Invalid lock token: the work item was acked, cancelled or its lock expired")
		}
		return duroxide.Wrap(op, err)
	}
	p.workLocks.drop(lockToken)
	p.deliverIntents(ctx, lk.instance, intents)
	return nil
}

// refreshWorkLock re-reads a locked work item after an ETag mismatch and
// reports whether it is still locked with lk's token and not expired; if
// so lk takes its current ETag and expiry. The caller holds lk.mu.
func (p *Provider) refreshWorkLock(ctx context.Context, lk *workLock) bool {
	body, etag, err := p.st.read(ctx, lk.instance, lk.itemID)
	if err != nil {
		return false
	}
	var doc queueDoc
	if json.Unmarshal(body, &doc) != nil || doc.LockToken == nil || *doc.LockToken != lk.token {
		return false
	}
	until := time.UnixMilli(deref(doc.LockedUntil))
	if !p.opts.Now().Before(until) {
		return false
	}
	lk.etag, lk.lockedUntil = etag, until
	return true
}

func (p *Provider) exists(ctx context.Context, partition, id string) bool {
	_, _, err := p.st.read(ctx, partition, id)
	return err == nil
}

// AbandonWorkItem implements duroxide.Provider.
func (p *Provider) AbandonWorkItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	const op = "abandon_work_item"
	lk, err := p.workLockFor(ctx, op, lockToken)
	if err != nil {
		return err
	}
	lk.mu.Lock()
	defer lk.mu.Unlock()
	n := lk.doc.AttemptCount
	if ignoreAttempt && n > 0 {
		n--
	}
	_, _, err = p.st.patch(ctx, lk.instance, lk.itemID, unlockMessageOps(n, ms(p.opts.Now().Add(max(delay, 0)))), &lk.etag, false)
	p.workLocks.drop(lockToken)
	if isPrecondition(err) || isNotFound(err) {
		return errLockExpired(op)
	}
	return duroxide.Wrap(op, err)
}

// RenewWorkItemLock implements duroxide.Provider.
func (p *Provider) RenewWorkItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	const op = "renew_work_item_lock"
	lk, err := p.workLockFor(ctx, op, lockToken)
	if err != nil {
		return err
	}
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if err := p.checkWorkLive(op, lk); err != nil {
		return err
	}
	now := p.opts.Now()
	until := now.Add(extendFor)
	var ops azcosmos.PatchOperations
	ops.AppendSet("/lockedUntil", ms(until))
	_, etag, err := p.st.patch(ctx, lk.instance, lk.itemID, ops, &lk.etag, false)
	if isPrecondition(err) && p.refreshWorkLock(ctx, lk) {
		// Renewed by another process meanwhile, still ours.
		_, etag, err = p.st.patch(ctx, lk.instance, lk.itemID, ops, &lk.etag, false)
	}
	if isPrecondition(err) || isNotFound(err) {
		p.workLocks.drop(lockToken)
		return duroxide.Kinded(duroxide.ErrLockLost, op, "Invalid lock token: the work item was acked, cancelled or its lock expired")
	}
	if err != nil {
		return duroxide.Wrap(op, err)
	}
	lk.etag, lk.lockedUntil = etag, until
	p.touchSession(ctx, lk, now)
	return nil
}
