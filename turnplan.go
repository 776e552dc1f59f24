package cdb

import (
	"fmt"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
	"github.com/duroxide-go/cdb/internal/limits"
)

// The turn plan: validating a commit and turning it into the documents of
// one turn (history, queue entries, outbox intents, the next instance
// document). Kept apart from ack.go so that the plan, which is pure
// computation, is separate from the requests that commit it (ack.go,
// large.go).

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

// turnPlan is everything one ack writes, built before any request.
type turnPlan struct {
	instance       string
	token          string
	lock           *orchLock
	commit         cosmos.BatchOp   // replace of the instance document (If-Match)
	ops            []cosmos.BatchOp // the rest of the turn, in order
	kinds          []string         // document type per operation of the batch (commit first), for errors
	intents        []outboxDoc
	foreignCancels []duroxide.ScheduledActivityIdentifier
	staleMarkers   []string // expired orch_received markers (addMarkerCleanup)
	large          bool     // committed as a large turn (large.go), not one batch
	// want: the caller's workers take some activities locked (handoff.go);
	// handed are those the plan writes locked, result the batch's answer.
	want   *handOffWant
	handed []handedWork
	result *cosmos.BatchResult
}

func (p *Provider) planTurn(op string, lk *orchLock, c duroxide.OrchestrationCommit, tp string, want *handOffWant) (*turnPlan, error) {
	now := p.now()
	plan := &turnPlan{instance: lk.instance, token: lk.token, lock: lk, staleMarkers: lk.staleMarkers, want: want}
	doc := p.nextInstanceDoc(lk, c, now)
	archived := doc.trimExecutions()
	docJSON := mustJSON(doc)
	if len(docJSON) > cosmos.MaxDocBytes {
		return nil, limits.DocSize(op, "the instance document (output or custom status too large)", len(docJSON))
	}
	plan.commit = cosmos.BatchOp{Kind: cosmos.BatchReplace, ID: doc.ID, Doc: docJSON, IfMatch: &lk.etag}
	plan.kinds = append(plan.kinds, docInstance)
	// The order of the operations is the order of the batch; ackError
	// maps a failing index back to its kind.
	for _, e := range archived {
		s := execSummaryDoc{ID: execSummaryDocID(lk.instance, e.ID), InstanceID: lk.instance, Type: docExecution, execEntry: e}
		if err := plan.add(op, docExecution, cosmos.BatchOp{Kind: cosmos.BatchUpsert, ID: s.ID, Doc: mustJSON(s)}); err != nil {
			return nil, err
		}
	}
	if err := plan.addHistory(op, lk, c); err != nil {
		return nil, err
	}
	if err := p.planActivities(op, plan, lk, c, tp, now); err != nil {
		return nil, err
	}
	if err := p.planOrchestratorItems(op, plan, lk, c, tp, now); err != nil {
		return nil, err
	}
	plan.addConsumed(lk, c, now)
	return plan, nil
}

// add appends o, refusing a document Cosmos would refuse, with a message
// that names the kind of document.
func (plan *turnPlan) add(op, kind string, o cosmos.BatchOp) error {
	if len(o.Doc) > cosmos.MaxDocBytes {
		return limits.DocSize(op, "a "+kind+" document", len(o.Doc))
	}
	plan.ops = append(plan.ops, o)
	plan.kinds = append(plan.kinds, kind)
	return nil
}

// addHistory creates the turn's history events.
func (plan *turnPlan) addHistory(op string, lk *orchLock, c duroxide.OrchestrationCommit) error {
	for i := range c.HistoryDelta {
		e := &c.HistoryDelta[i]
		data, err := e.MarshalJSON() // serde's bytes: json.Marshal would HTML-escape
		if err != nil {
			return duroxide.Permanent(op, "history event %d cannot be encoded: %v", e.EventID, err)
		}
		h := historyDoc{ID: historyDocID(lk.instance, c.ExecutionID, e.EventID), InstanceID: lk.instance, Type: docHistory,
			ExecutionID: c.ExecutionID, EventID: e.EventID, EventData: string(data)}
		if err := plan.add(op, docHistory, cosmos.BatchOp{Kind: cosmos.BatchCreate, ID: h.ID, Doc: mustJSON(h)}); err != nil {
			return err
		}
	}
	return nil
}

// planActivities adds worker items, then cancellations: an activity in
// both lists ends up absent, so it is simply not created.
func (p *Provider) planActivities(op string, plan *turnPlan, lk *orchLock, c duroxide.OrchestrationCommit, tp string, now time.Time) error {
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
			return duroxide.Permanent(op, "%v", err)
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
		plan.handOff(d, a, now)
		if err := plan.add(op, docWorkerQueue, cosmos.BatchOp{Kind: cosmos.BatchCreate, ID: id, Doc: mustJSON(d)}); err != nil {
			return err
		}
	}
	for id := range cancelled {
		plan.ops = append(plan.ops, cosmos.BatchOp{Kind: cosmos.BatchDelete, ID: id, Tolerate: []error{cosmos.ErrNotFound}})
		plan.kinds = append(plan.kinds, docWorkerQueue)
	}
	return nil
}

// planOrchestratorItems adds orchestrator items: to this instance
// directly, to others via the outbox (with the activities' intents).
func (p *Provider) planOrchestratorItems(op string, plan *turnPlan, lk *orchLock, c duroxide.OrchestrationCommit, tp string, now time.Time) error {
	tokenID := turnOf(lk.token)
	backs := handedBack{lk: lk}
	for i, w := range c.OrchestratorItems {
		data, err := duroxide.MarshalWorkItem(w)
		if err != nil {
			return duroxide.Permanent(op, "orchestrator item cannot be encoded: %v", err)
		}
		target := w.InstanceID()
		visible := now
		if t, ok := w.(duroxide.TimerFiredItem); ok && target == lk.instance {
			visible = time.UnixMilli(int64(t.FireAtMs))
		}
		q := &queueDoc{InstanceID: target, Type: docOrchQueue, WorkItem: string(data), DispatchSlot: DispatchSlot(target),
			VisibleAt: p.visibleAt(visible, now), EnqueuedAt: ms(now), EnqueueOrder: nextOrder(now), TraceParent: tp}
		if m := backs.match(target, q.WorkItem); m != nil {
			// A fetched message handed back keeps its place in the queue
			// (duroxide.OrchestrationCommit.OrchestratorItems).
			q.VisibleAt, q.EnqueuedAt, q.EnqueueOrder, q.TraceParent = m.VisibleAt, m.EnqueuedAt, m.order(), m.TraceParent
		}
		if target == lk.instance {
			q.ID = docID(user(lk.instance), fixed("orch"), fixed(tokenID), num(uint64(i)))
			if err := plan.add(op, docOrchQueue, cosmos.BatchOp{Kind: cosmos.BatchCreate, ID: q.ID, Doc: mustJSON(q)}); err != nil {
				return err
			}
			continue
		}
		plan.intents = append(plan.intents, p.intent(lk, c.ExecutionID, len(plan.intents), q, now))
	}
	for _, in := range plan.intents {
		if err := plan.add(op, docOutbox, cosmos.BatchOp{Kind: cosmos.BatchCreate, ID: in.ID, Doc: mustJSON(in)}); err != nil {
			return err
		}
	}
	return nil
}

// handedBack finds the locked messages a commit hands back: an
// orchestrator item for the locked instance whose encoded work item is a
// locked message's, each message matched once.
type handedBack struct {
	lk   *orchLock
	used map[*queueDoc]bool
}

func (h *handedBack) match(target, workItem string) *queueDoc {
	if target != h.lk.instance {
		return nil
	}
	for _, m := range h.lk.messages {
		if !h.used[m] && m.WorkItem == workItem {
			if h.used == nil {
				h.used = map[*queueDoc]bool{}
			}
			h.used[m] = true
			return m
		}
	}
	return nil
}

// addConsumed writes KV and removes the consumed messages.
func (plan *turnPlan) addConsumed(lk *orchLock, c duroxide.OrchestrationCommit, now time.Time) {
	for _, o := range kvOps(lk, c) {
		plan.ops = append(plan.ops, o)
		plan.kinds = append(plan.kinds, docKV)
	}
	for _, m := range lk.messages {
		if m.OutboxKey != "" {
			// Keep a marker so a late re-delivery of the same intent
			// collides (409) instead of enqueueing the message twice.
			marker := map[string]any{"id": m.ID, "instanceId": lk.instance, "type": docReceived, "outboxKey": m.OutboxKey, "createdAt": ms(now)}
			plan.ops = append(plan.ops, cosmos.BatchOp{Kind: cosmos.BatchReplace, ID: m.ID, Doc: mustJSON(marker)})
		} else {
			plan.ops = append(plan.ops, cosmos.BatchOp{Kind: cosmos.BatchDelete, ID: m.ID})
		}
		plan.kinds = append(plan.kinds, docOrchQueue)
	}
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
	doc.Blocked = nil // this turn replayed the history cleanly
	if ch := c.Suspend; ch != nil {
		doc.Suspended = nil
		if ch.Suspended {
			doc.Suspended = &suspendedDoc{Reason: ch.Reason, At: ms(now)}
		}
	}
	if md.Status != nil && isTerminal(*md.Status) {
		doc.Suspended = nil // an execution that ends is not suspended (duroxide.SuspendChange)
	}
	doc.Held = nil // the turn consumed what was held (releases.go heldBack)
	doc.LastAckToken = lk.token
	noteReceived(&doc, lk, now, p.markerLifetime()) // turncache.go
	// Draining an ended instance's late messages is not an update
	// (duroxide.OrchestrationCommit): its updatedAt stays its end.
	if !(c.Drains() && c.ExecutionID <= lk.doc.CurrentExecutionID && !lk.doc.Provisional && isTerminal(lk.doc.Status)) {
		doc.UpdatedAt = ms(now)
	}
	return doc
}

func (p *Provider) workerDoc(id string, a duroxide.ActivityExecuteItem, now time.Time) (*queueDoc, error) {
	data, err := duroxide.MarshalWorkItem(a)
	if err != nil {
		return nil, fmt.Errorf("activity cannot be encoded: %w", err)
	}
	return &queueDoc{ID: id, InstanceID: a.Instance, Type: docWorkerQueue, WorkItem: string(data), DispatchSlot: DispatchSlot(a.Instance),
		VisibleAt: p.visibleAt(now, now), EnqueuedAt: ms(now), EnqueueOrder: nextOrder(now),
		ExecutionID: ptr(a.ExecutionID), ActivityID: ptr(a.ID), SessionID: a.SessionID, Tag: a.Tag}, nil
}
