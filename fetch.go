package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Fetching is discovery, then a lock, then a load:
//
//  1. Discovery is one cross-partition query page of small projections of
//     visible, unlocked queue entries (bounded by DiscoveryPageSize and
//     the dispatcher's slots), ordered client-side: the gateway refuses
//     cross-partition ORDER BY and TOP, and reading a bounded page keeps the
//     cost flat however long the queue is.
//  2. An orchestration is locked with one transactional batch in the
//     instance's partition: a conditional patch of the instance document
//     (unlocked, capability-compatible) plus a patch per message that tags
//     it with the lock and increments its attempt count. The batch is
//     atomic, so either the instance and its messages are ours or nothing
//     changed. The patched documents come back in the response, so the
//     messages need no second read. A work item is locked with one
//     If-Match patch.
//  3. An orchestration's current-execution history and KV documents are
//     loaded with one single-partition query, or taken from the turn
//     cache when this process committed the previous turn and the locked
//     instance document shows nothing changed since (turncache.go).

// filterKey names an instance under one capability filter: an instance
// refused by one filter may suit another.
func filterKey(instance string, f *duroxide.DispatcherCapabilityFilter) string {
	r := f.SupportedDuroxideVersions[0]
	// Components, not Packed(): packing is not injective (numbers.go).
	return fmt.Sprintf("%d.%d.%d-%d.%d.%d|%s", r.Min.Major, r.Min.Minor, r.Min.Patch, r.Max.Major, r.Max.Minor, r.Max.Patch, instance)
}

// busyRetry is how long an instance found locked by someone else is
// skipped; short, because we cannot see when that lock ends.
const busyRetry = 250 * time.Millisecond

// FetchOrchestrationItem implements duroxide.Provider.
func (p *Provider) FetchOrchestrationItem(ctx context.Context, lockTimeout, _ time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	const op = "fetch_orchestration_item"
	if none, err := p.beginOrchestrationFetch(op, filter); none || err != nil {
		return nil, err
	}
	now := p.now()
	cands, err := p.discover(ctx, docOrchQueue, "", nil, true, func(c candidate) bool {
		return p.busy.isBusy(c.instance, now) || (filter != nil && p.incompatible.isBusy(filterKey(c.instance, filter), now))
	}, nil)
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	for i, c := range cands {
		key := "o\x00" + c.instance
		if !p.claims.take(key) {
			continue // a sibling slot is locking it
		}
		item, err := p.tryLockOrchestration(ctx, c, lockTimeout, filter)
		p.claims.drop(key)
		if err != nil {
			return nil, duroxide.Wrap(op, err)
		}
		if item != nil {
			// A backlog hides what its page did not show. Instances
			// skipped as busy are not ready for this fetch: locked here
			// or elsewhere, or refused by the filter; the runtime looks
			// again after its poll floor in case their locks end.
			item.NoMoreReady = i == len(cands)-1 && !p.discovery[docOrchQueue].backlog.Load()
			return item, nil
		}
	}
	return nil, nil
}

// beginOrchestrationFetch checks what every orchestration fetch checks
// first; none reports that the filter supports nothing.
func (p *Provider) beginOrchestrationFetch(op string, filter *duroxide.DispatcherCapabilityFilter) (none bool, err error) {
	if err := p.RefuseDispatch(); err != nil {
		return false, err
	}
	if filter != nil && len(filter.SupportedDuroxideVersions) == 0 {
		return true, nil // Phase 1: an empty list supports nothing
	}
	if filter != nil {
		r := filter.SupportedDuroxideVersions[0]
		if err := validateVersion(op, "filter bound", r.Min); err != nil {
			return false, err
		}
		if err := validateVersion(op, "filter bound", r.Max); err != nil {
			return false, err
		}
	}
	p.orchLocks.prune(func(l *orchLock) bool {
		if !l.mu.TryLock() { // in use: not stale (see FetchWorkItem)
			return false
		}
		defer l.mu.Unlock()
		return p.now().After(l.lockedUntil.Add(time.Minute))
	})
	return false, nil
}

// tryLockOrchestration locks c's instance and messages and loads the
// item. It returns nil, nil when the instance is busy, incompatible or
// orphaned, so the caller moves on to the next candidate.
func (p *Provider) tryLockOrchestration(ctx context.Context, c candidate, lockTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	now := p.now()
	until := now.Add(lockTimeout)
	token := newOrchToken(c.instance)
	if c.partial {
		// Discovery's page was cut short: lock every ready message of the
		// instance, not only those the page showed (as the seed does).
		ids, err := p.readyMessages(ctx, c.instance, now)
		if err != nil {
			return nil, err
		}
		if len(ids) > 0 {
			c.ids = ids
		}
	}
	res, created, takeover, err := p.lockBatch(ctx, c, token, now, until, filter)
	if err != nil || res == nil {
		return nil, err
	}
	lk := &orchLock{instance: c.instance, token: token, etag: res.ETags[0], lockedUntil: until}
	if err := json.Unmarshal(res.Bodies[0], &lk.doc); err != nil {
		return nil, fmt.Errorf("decode instance document: %w", err)
	}
	lk.doc.ETag = string(res.ETags[0])
	for i := 1; i < len(res.Bodies); i++ {
		var m queueDoc
		if err := json.Unmarshal(res.Bodies[i], &m); err != nil {
			return nil, fmt.Errorf("decode queue message: %w", err)
		}
		m.ETag = string(res.ETags[i])
		lk.messages = append(lk.messages, &m)
	}
	if takeover {
		if ok, err := p.lockStragglers(ctx, lk, until); err != nil || !ok {
			if !errors.Is(err, errLockUnsettled) {
				p.releaseQuietly(ctx, lk)
			}
			return nil, err
		}
	}
	sort.SliceStable(lk.messages, func(i, j int) bool { return lk.messages[i].order() < lk.messages[j].order() })
	if lk.doc.PendingTurn != nil {
		if err := p.finishTurnUnderLock(ctx, lk); err != nil {
			p.releaseQuietly(ctx, lk)
			return nil, err
		}
		if len(lk.messages) == 0 {
			p.releaseQuietly(ctx, lk)
			return nil, nil
		}
	}
	if lk.doc.Suspended != nil { // suspend.go
		woken, err := p.wakeOrHold(ctx, lk, until)
		if err != nil || !woken {
			return nil, err
		}
		sort.SliceStable(lk.messages, func(i, j int) bool { return lk.messages[i].order() < lk.messages[j].order() })
	}

	if p.heldBack(lk, now) {
		return nil, p.releaseHeld(ctx, lk, now)
	}

	item := &duroxide.OrchestrationItem{Instance: c.instance, LockToken: token, KVSnapshot: map[string]duroxide.KVEntry{}}
	var decodeErr error
	for _, m := range lk.messages {
		wi, err := duroxide.UnmarshalWorkItem([]byte(m.WorkItem))
		if err != nil {
			// Never drop a message silently: surface it like corrupt
			// history, so the runtime retries and eventually poisons it.
			decodeErr = fmt.Errorf("queue message %s cannot be decoded: %w", m.ID, err)
			continue
		}
		item.Messages = append(item.Messages, wi)
		item.AttemptCount = max(item.AttemptCount, m.AttemptCount)
		if item.TraceParent == "" {
			item.TraceParent = m.TraceParent
		}
	}
	if !lk.doc.exists() {
		start := startOf(item.Messages)
		if start == nil && decodeErr == nil {
			keep, err := p.startOnItsWay(ctx, lk, item.Messages)
			if err != nil {
				p.opts.Logger.Warn("checking whether an instance's start is on its way", "instance_id", lk.instance, "error", err)
			}
			return nil, p.releaseOrphan(ctx, lk, created, item.Messages, keep || err != nil)
		}
		item.OrchestrationName, item.Version, item.ExecutionID = nameVersionOf(start)
		lk.doc.OrchestrationName, lk.doc.OrchestrationVersion = item.OrchestrationName, item.Version
	} else {
		item.OrchestrationName, item.Version, item.ExecutionID = lk.doc.OrchestrationName, lk.doc.OrchestrationVersion, lk.doc.CurrentExecutionID
		if err := p.loadTurnStateCached(ctx, lk, item); err != nil { // turncache.go
			// Err means no lock is held: give it back before failing.
			p.releaseQuietly(ctx, lk)
			return nil, err
		}
		item.KVBaseline = lk.kvBaseline(item.KVSnapshot) // kvbaseline.go
	}
	if decodeErr != nil && item.HistoryError == nil {
		msg := decodeErr.Error()
		item.HistoryError, item.History = &msg, nil
	}
	p.orchLocks.put(token, lk)
	p.busy.mark(c.instance, until)
	p.trail("orchestration messages locked", lk, "execution_id", item.ExecutionID, "takeover", takeover)
	return item, nil
}

// readyMessages returns the ids of inst's visible, unlocked orchestrator
// messages, oldest first, with one single-partition query.
func (p *Provider) readyMessages(ctx context.Context, inst string, now time.Time) ([]string, error) {
	q := "SELECT c.id, c.enqueuedAt, c.enqueueOrder FROM c WHERE c.type = 'orch_queue' AND c.visibleAt <= @now AND " + lockFree + " AND " + notStaged
	var rows []discoveryRow
	_, err := p.st.Query(ctx, q, cosmos.QueryParams{}.Add("@now", ms(now)).Add("@lapsed", ms(now.Add(-p.skew()))), cosmos.QueryOptions{Partition: &inst, PageSize: -1}, func(raw []byte) bool {
		var r discoveryRow
		if json.Unmarshal(raw, &r) == nil {
			rows = append(rows, r)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].order() != rows[j].order() {
			return rows[i].order() < rows[j].order()
		}
		return rows[i].ID < rows[j].ID
	})
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids, nil
}

// finishTurnUnderLock rolls forward the previous large turn of a locked
// instance before anything is loaded, and drops the messages that turn
// consumed (their deletion had not happened yet).
func (p *Provider) finishTurnUnderLock(ctx context.Context, lk *orchLock) error {
	gone, unknown, err := p.rollForwardIDs(ctx, lk.instance, lk.doc.PendingTurn)
	if err != nil {
		return err
	}
	if unknown {
		// Another process finished (part of) the turn: the messages it
		// deleted are not listed anywhere now. A message of ours among
		// them had a lapsed lock (addMessageLocks takes no other), so the
		// turn's roll-forward stalled that long; ask the primary.
		if err := p.dropVanished(ctx, lk); err != nil {
			return err
		}
	}
	doc, etag, err := p.readInstance(ctx, lk.instance)
	if err != nil {
		return err
	}
	if doc == nil || doc.LockToken == nil || *doc.LockToken != lk.token {
		return errLockExpired("fetch_orchestration_item")
	}
	lk.doc, lk.etag = *doc, etag
	kept := lk.messages[:0]
	for _, m := range lk.messages {
		if !gone[m.ID] {
			kept = append(kept, m)
		} else if p.trailEnabled() {
			p.opts.Logger.Debug("locked message was consumed by the rolled-forward turn", "instance_id", lk.instance, "message", m.ID)
		}
	}
	lk.messages = kept
	return nil
}

// dropVanished removes from lk.messages those that no longer exist, read
// from the primary (one batch read per vanished message, plus one).
func (p *Provider) dropVanished(ctx context.Context, lk *orchLock) error {
	for len(lk.messages) > 0 {
		ids := make([]string, len(lk.messages))
		for i, m := range lk.messages {
			ids[i] = m.ID
		}
		_, err := p.readLockedPrimary(ctx, lk.instance, ids)
		var be *BatchError
		if !errors.As(err, &be) || !errors.Is(be, cosmos.ErrNotFound) || be.Index < 0 || be.Index >= len(ids) {
			return err
		}
		if p.trailEnabled() {
			p.opts.Logger.Debug("locked message was consumed by a turn another process rolled forward", "instance_id", lk.instance, "message", ids[be.Index])
		}
		lk.messages = slices.Delete(lk.messages, be.Index, be.Index+1)
	}
	return nil
}

// lockStragglers locks, after a takeover, the messages the lapsed lock
// held that discovery did not see: discovery judged them still locked,
// while the instance's lock, which lapses with them, had lapsed by the
// time the lock batch ran (a resumed scan's or a slow query's "now" is
// older than the batch's). Without them the turn would take newer
// messages before older ones. It reports false when a message changed
// under us (the caller gives the lock back; the next fetch sees the
// current state).
//
// A straggler batch that may have applied is confirmed like the lock
// batch (lockconfirm.go). If its outcome stays unknown the error wraps
// errLockUnsettled and the caller must keep the instance locked: giving
// back the instance and the messages it knows would leave stragglers
// locked under our token while newer messages are delivered without them
// (the chaos soak lost messages so). Kept, everything lapses together.
func (p *Provider) lockStragglers(ctx context.Context, lk *orchLock, until time.Time) (bool, error) {
	ready, err := p.readyMessages(ctx, lk.instance, p.now())
	if err != nil {
		return false, err
	}
	taken := make(map[string]bool, len(lk.messages))
	for _, m := range lk.messages {
		taken[m.ID] = true
	}
	var ids []string
	for _, id := range ready {
		if !taken[id] && len(lk.messages)+len(ids) < cosmos.MaxBatchOps-1 {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return true, nil
	}
	b := cosmos.NewBatch(lk.instance)
	p.addMessageLocks(b, ids, lk.token, p.now().Add(-p.skew()), until)
	res, err := p.st.Execute(ctx, b, true)
	var be *BatchError
	if errors.As(err, &be) {
		return false, nil // refused as a whole: nothing was locked
	}
	if err != nil {
		confirmed, state := p.confirmLock(ctx, lk.instance, lk.token, ids, until, err)
		switch state {
		case lockNotHeld:
			return false, err
		case lockUnknown:
			p.busy.mark(lk.instance, until)
			return false, fmt.Errorf("%w: %w", errLockUnsettled, err)
		}
		res = confirmed
	}
	for i, body := range res.Bodies {
		var m queueDoc
		if err := json.Unmarshal(body, &m); err != nil {
			return false, fmt.Errorf("decode queue message: %w", err)
		}
		m.ETag = string(res.ETags[i])
		lk.messages = append(lk.messages, &m)
	}
	return true, nil
}

// lockBatch runs the lock batch. A nil result with a nil error means the
// instance could not be locked (busy, incompatible, or its messages
// changed under us). created reports that the instance document was
// created by this batch (a provisional one); takeover that it was locked
// by a lock that had lapsed (its holder died or stalled), whose messages
// discovery may not have seen (lockStragglers).
func (p *Provider) lockBatch(ctx context.Context, c candidate, token string, now, until time.Time, filter *duroxide.DispatcherCapabilityFilter) (res *cosmos.BatchResult, created, takeover bool, err error) {
	// A start usually means a new instance: try creating the (provisional)
	// instance document first, which saves the failed patch; otherwise
	// patch the existing one. Each falls back to the other.
	create := c.start
	for try := 0; try < 2; try++ {
		b := cosmos.NewBatch(c.instance)
		head := 0 // operations before the instance's
		if !create {
			// The document as it was before the patch, in the same
			// request: it tells a takeover from a free instance.
			b.Read(instanceDocID(c.instance))
			head = 1
		}
		if create {
			doc := instanceDoc{ID: instanceDocID(c.instance), InstanceID: c.instance, Type: docInstance, Status: duroxide.StatusRunning,
				LockToken: &token, LockedUntil: ptr(ms(until)), CreatedAt: ms(now), UpdatedAt: ms(now), Provisional: true}
			b.Create(mustJSON(doc))
		} else {
			var ops azcosmos.PatchOperations
			ops.SetCondition(lockCondition(now.Add(-p.skew()), filter))
			ops.AppendSet("/lockToken", token)
			ops.AppendSet("/lockedUntil", ms(until))
			b.Patch(instanceDocID(c.instance), ops, nil)
		}
		p.addMessageLocks(b, c.ids, token, now.Add(-p.skew()), until)
		res, err = p.st.Execute(ctx, b, true)
		be, ok := err.(*BatchError)
		inst := ok && be.Index <= head // the instance's read or write failed
		switch {
		case err == nil:
			p.oversized.locked(c.instance)
			if head > 0 {
				var prev instanceDoc
				takeover = json.Unmarshal(res.Bodies[0], &prev) == nil && prev.LockToken != nil
				res.Bodies, res.ETags = res.Bodies[head:], res.ETags[head:]
			}
			return res, create, takeover, nil
		case inst && create && errors.Is(be, cosmos.ErrConflict),
			inst && !create && errors.Is(be, cosmos.ErrNotFound):
			create = !create // guessed wrong: the other way
			continue
		case inst && errors.Is(be, cosmos.ErrPreconditionFailed):
			// Locked, or pinned to a version outside the filter. We
			// cannot tell which without a read, and neither is worth one.
			if filter != nil {
				p.incompatible.mark(filterKey(c.instance, filter), now.Add(busyRetry))
			} else {
				p.busy.mark(c.instance, now.Add(busyRetry))
			}
			return nil, false, false, nil
		case inst && errors.Is(be, cosmos.ErrConflict):
			p.busy.mark(c.instance, now.Add(busyRetry)) // created by another dispatcher just now
			return nil, false, false, nil
		case inst && errors.Is(be, cosmos.ErrTooLarge):
			p.refusedTooLarge(c.instance, now, err) // oversized.go
			return nil, false, false, nil
		case ok:
			// A message that vanished (404, or 412 where its received
			// marker now holds the id) was consumed by a turn that ended
			// after our discovery; the next fetch sees the current state.
			return nil, false, false, nil
		default:
			// Applied but unanswered, the lock is ours (lockconfirm.go).
			if res, state := p.confirmLock(ctx, c.instance, token, lockedIDs(c.instance, b), until, err); state == lockHeld {
				return res, create, true, nil // whether it was a takeover is unknown: lock stragglers anyway
			}
			return nil, false, false, err
		}
	}
	return nil, false, false, nil
}

// lockFreeAt is lockFree for a patch condition (conditions take no
// parameters: the number is spliced in).
func lockFreeAt(lapsed time.Time) string {
	n := strconv.FormatInt(ms(lapsed), 10)
	return "(NOT IS_DEFINED(c.lockedUntil) OR IS_NULL(c.lockedUntil) OR c.lockedUntil <= " + n + ")"
}

// lockCondition is the instance patch's predicate: the instance is not
// locked (or its lock expired before lapsed, see lockFree), is not being
// deleted, and — with a filter — is pinned to a version inside the first
// range (or not pinned). The
// condition is evaluated by the service atomically with the patch.
// Conditions cannot take parameters, so only numbers are spliced in.
func lockCondition(lapsed time.Time, filter *duroxide.DispatcherCapabilityFilter) string {
	cond := "FROM c WHERE " + lockFreeAt(lapsed) + " AND NOT IS_DEFINED(c.deleted)"
	if filter != nil {
		r := filter.SupportedDuroxideVersions[0]
		cond += " AND (NOT IS_DEFINED(c.pinnedDuroxideVersion) OR IS_NULL(c.pinnedDuroxideVersion) OR " +
			versionAtLeast(r.Min) + " AND " + versionAtMost(r.Max) + ")" // numbers.go
	}
	return cond
}

// addMessageLocks adds to b a lock patch for each of ids. Each applies
// only to a queue message no live lock holds (lapsed as lockCondition
// says): a large turn's commit releases its instance before its
// roll-forward deletes the messages it consumed, and a lock batch that
// discovery planned before that commit must not take them again — the
// turn would receive a message already in history, and its ack would
// meet the message's deletion. The instance's lock decides who holds the
// instance; this keeps a message with the lock that consumed it.
func (p *Provider) addMessageLocks(b *cosmos.Batch, ids []string, token string, lapsed, until time.Time) {
	locked := make(map[string]bool, len(ids))
	for _, id := range ids {
		if b.Len() >= cosmos.MaxBatchOps {
			break // the rest wait for the next turn
		}
		if locked[id] {
			// Each patched message comes back as one of the turn's
			// messages: a repeated id would deliver it twice.
			continue
		}
		locked[id] = true
		var ops azcosmos.PatchOperations
		// A message consumed after discovery leaves an orch_received
		// marker under the same id (it stops redelivery); without the
		// type condition the lock would patch the marker and hand the
		// turn a "message" with no work item. A 412 here means the
		// message is gone or still held by the lock that consumed it.
		ops.SetCondition("FROM c WHERE c.type = '" + docOrchQueue + "' AND " + lockFreeAt(lapsed))
		ops.AppendSet("/lockToken", token)
		ops.AppendSet("/lockedUntil", ms(until))
		ops.AppendIncrement("/attemptCount", 1)
		b.Patch(id, ops, nil)
	}
}

// loadTurnState loads the current execution's history and the KV
// documents with one single-partition query.
func (p *Provider) loadTurnState(ctx context.Context, lk *orchLock, item *duroxide.OrchestrationItem) error {
	// The same query picks up leftovers of a large turn that failed before
	// its commit (staged documents, journals): the lock holder removes
	// them so the retried turn can write the same ids.
	// It also finds received-message markers past their retention, which
	// the turn's batch removes.
	q := "SELECT * FROM c WHERE (c.type = 'history' AND c.executionId = @exec) OR c.type = 'kv' OR c.type = 'kv_delta' OR c.type = 'kv_undo'" +
		" OR c.type = 'turn_journal' OR (IS_DEFINED(c.staged) AND NOT IS_NULL(c.staged))" +
		" OR (c.type = 'orch_received' AND c.createdAt < @markersBefore)"
	params := cosmos.QueryParams{}.Add("@exec", lk.doc.CurrentExecutionID).Add("@markersBefore", ms(p.now().Add(-p.markerLifetime())))
	var hist []historyDoc
	var garbage []string
	var kvErr error
	_, err := p.st.Query(ctx, q, params, cosmos.QueryOptions{Partition: &lk.instance, PageSize: -1}, func(raw []byte) bool {
		var head struct {
			ID     string  `json:"id"`
			Type   string  `json:"type"`
			Staged *string `json:"staged"`
		}
		if json.Unmarshal(raw, &head) != nil {
			return true
		}
		if head.Type == docJournal || head.Staged != nil {
			garbage = append(garbage, head.ID)
			return true
		}
		switch head.Type {
		case docReceived:
			lk.staleMarkers = append(lk.staleMarkers, head.ID)
		case docHistory:
			var h historyDoc
			if err := json.Unmarshal(raw, &h); err != nil {
				h = historyDoc{EventData: string(raw)} // undecodable: surfaced below
			}
			hist = append(hist, h)
		case docKV:
			var kv kvDoc
			if err := json.Unmarshal(raw, &kv); err != nil {
				kvErr = fmt.Errorf("kv document cannot be decoded: %w", err)
				return true
			}
			item.KVSnapshot[kv.Key] = duroxide.KVEntry{Value: kv.Value, LastUpdatedAtMs: kv.LastUpdatedAtMs}
			lk.storeKV(kv)
		case docKVUndo:
			var u kvDoc
			if err := json.Unmarshal(raw, &u); err != nil {
				kvErr = fmt.Errorf("kv_undo document cannot be decoded: %w", err)
				return true
			}
			lk.undo = append(lk.undo, u)
		case docKVDelta:
			var d kvDoc
			if json.Unmarshal(raw, &d) == nil {
				lk.deltaKeys = append(lk.deltaKeys, d.Key)
				lk.delta = append(lk.delta, d)
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	if len(garbage) > 0 {
		if err := p.deleteProved(ctx, lk, garbage); err != nil {
			return err
		}
	}
	events, herr := decodeHistory(hist)
	p.noteLoaded(lk, hist, item, herr == nil && kvErr == nil) // turncache.go
	switch {
	case herr != nil:
		msg := herr.Error()
		item.HistoryError = &msg
	case kvErr != nil:
		msg := kvErr.Error()
		item.HistoryError = &msg
	default:
		item.History = events
	}
	return nil
}

// startOf returns the first StartOrchestration or ContinueAsNew item.
func startOf(items []duroxide.WorkItem) duroxide.WorkItem {
	for _, it := range items {
		switch it.(type) {
		case duroxide.StartOrchestrationItem, duroxide.ContinueAsNewItem:
			return it
		}
	}
	return nil
}

// nameVersionOf returns what a start carries for a new instance; a null
// version is reported as "unknown", as the SQLite reference does.
func nameVersionOf(item duroxide.WorkItem) (name, version string, exec uint64) {
	var v *string
	exec = 1
	switch it := item.(type) {
	case duroxide.StartOrchestrationItem:
		name, v = it.Orchestration, it.Version
		if it.ExecutionID != 0 {
			exec = it.ExecutionID
		}
	case duroxide.ContinueAsNewItem:
		name, v = it.Orchestration, it.Version
	default:
		return "unknown", "unknown", 1
	}
	if v == nil {
		return name, "unknown", exec
	}
	return name, *v, exec
}
