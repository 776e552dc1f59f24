package cdb

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"

	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/duroxide"
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

// candidate is one instance (or work item) found by discovery.
type candidate struct {
	instance string
	ids      []string // orchestrator: message ids, oldest first
	etag     string   // worker: the item's ETag
	order    int64
	session  *string
	start    bool // a StartOrchestration is among the messages
	// partial: discovery stopped before the end of its query, so the
	// instance may have ready messages it did not see.
	partial bool
}

// discoveryRow is the projection discovery reads.
type discoveryRow struct {
	ID           string  `json:"id"`
	InstanceID   string  `json:"instanceId"`
	EnqueuedAt   int64   `json:"enqueuedAt"`
	EnqueueOrder int64   `json:"enqueueOrder"`
	ETag         string  `json:"_etag"`
	SessionID    *string `json:"sessionId"`
	// IsStart is computed by the query: the message starts an
	// orchestration, so its instance document most likely does not exist
	// yet and the lock should try to create it first.
	IsStart bool `json:"isStart"`
}

func (r *discoveryRow) order() int64 {
	if r.EnqueueOrder != 0 {
		return r.EnqueueOrder
	}
	return r.EnqueuedAt * 1000
}

// lockFree is the predicate for "not locked at @now": the Rust crate writes
// lockedUntil as null, older documents may not have it at all.
const lockFree = "(NOT IS_DEFINED(c.lockedUntil) OR IS_NULL(c.lockedUntil) OR c.lockedUntil <= @now)"

// notStaged excludes documents of a large turn that is not rolled forward
// yet (large.go).
const notStaged = "(NOT IS_DEFINED(c.staged) OR IS_NULL(c.staged))"

// dispatcherSlots returns the slots the fetching dispatcher may poll: its
// lease, or nil for all of them. CosmosLeases belong to the process, so
// they apply to fetches without WithDispatcher too.
func (p *Provider) dispatcherSlots(ctx context.Context) ([]uint8, error) {
	if p.opts.Leases == nil {
		return nil, nil
	}
	id, ok := dispatcherFrom(ctx)
	if _, processWide := p.opts.Leases.(*CosmosLeases); !ok && !processWide {
		return nil, nil
	}
	slots, err := p.opts.Leases.AcquireSlots(ctx, id)
	if err != nil {
		return nil, duroxide.Wrap("acquire_slots", err)
	}
	return slots, nil
}

// backlogWindows is how many windows the slots are cut into while there is
// a backlog (see discoveryState).
const backlogWindows = 4

// discoveryState keeps discovery fair under a backlog. A cross-partition
// query without ORDER BY is served one physical partition after another,
// so with a standing backlog its first page would always come from the
// same partition and the others would starve. While the last discovery
// page came back full, discovery therefore polls a rotating window of the
// dispatch slots (hashes of instance ids, spread over all physical
// partitions), so every instance is reached in turn. When the queue is
// short, one query over all slots is cheaper and sees everything.
type discoveryState struct {
	backlog atomic.Bool
	window  atomic.Uint32
}

// slotsClause restricts discovery to slots (nil: all).
func slotsClause(slots []uint8, params queryParams) (string, queryParams) {
	if slots == nil {
		return "", params
	}
	ints := make([]int, len(slots))
	for i, s := range slots {
		ints[i] = int(s)
	}
	return " AND ARRAY_CONTAINS(@slots, c.dispatchSlot)", params.add("@slots", ints)
}

// nextWindow returns the next rotating window of slots (nil: all slots).
func (st *discoveryState) nextWindow(slots []uint8) []uint8 {
	if slots == nil {
		slots = make([]uint8, NumSlots)
		for i := range slots {
			slots[i] = uint8(i)
		}
	}
	n := min(backlogWindows, len(slots))
	w := int(st.window.Add(1)) % n
	var window []uint8
	for i := w; i < len(slots); i += n {
		window = append(window, slots[i])
	}
	return window
}

// discover returns candidates grouped by instance (orchestrator) or one per
// item (worker), oldest first. Under a backlog it first polls the next slot
// window; only if that yields nothing usable does it poll all slots, so a
// fetch never comes back empty while visible work exists.
func (p *Provider) discover(ctx context.Context, docType, extra string, params queryParams, perInstance bool, skip func(candidate) bool) ([]candidate, error) {
	slots, err := p.dispatcherSlots(ctx)
	if err != nil || (slots != nil && len(slots) == 0) {
		return nil, err // no slots: nothing to poll (e.g. more processes than slots)
	}
	st := p.discovery[docType]
	if st.backlog.Load() {
		out, _, err := p.discoverIn(ctx, st.nextWindow(slots), docType, extra, params, perInstance, skip)
		if err != nil || len(out) > 0 {
			return out, err // still in backlog mode: the next fetch takes the next window
		}
	}
	out, full, err := p.discoverIn(ctx, slots, docType, extra, params, perInstance, skip)
	if err == nil {
		st.backlog.Store(full)
	}
	return out, err
}

// discoverIn reads one page's worth of visible, unlocked entries of docType
// in slots; full reports that the page was full (a backlog).
func (p *Provider) discoverIn(ctx context.Context, slots []uint8, docType, extra string, params queryParams, perInstance bool, skip func(candidate) bool) (out []candidate, full bool, err error) {
	clause, params := slotsClause(slots, params)
	q := "SELECT c.id, c.instanceId, c.enqueuedAt, c.enqueueOrder, c._etag, c.sessionId, STARTSWITH(c.workItem, @start) AS isStart FROM c WHERE c.type = @type AND c.visibleAt <= @now AND " +
		lockFree + " AND " + notStaged + clause + extra
	params = params.add("@type", docType).add("@start", `{"StartOrchestration"`)
	var rows []discoveryRow
	partial := map[string]bool{} // instances seen in a full page
	// The scan resumes where the previous fetch with the same query
	// stopped (paging.go) and reads pages until it has one page's worth of
	// rows to choose the oldest from, or its page budget is spent: pages
	// come one physical partition at a time and may be empty, and resuming
	// moves through the partitions in turn.
	cur := p.scans.get("discover\x00" + q + "\x00" + string(mustJSON(params)))
	_, err = p.scan(ctx, cur, scanRequest{
		text: q,
		fresh: func() queryParams {
			return append(params[:len(params):len(params)], azcosmos.QueryParameter{Name: "@now", Value: ms(p.opts.Now())})
		},
		pageSize: int32(p.opts.DiscoveryPageSize),
		maxPages: p.opts.ScanPages,
		enough:   func() bool { return len(rows) >= p.opts.DiscoveryPageSize },
	}, func(items [][]byte) {
		for _, item := range items {
			var r discoveryRow
			if json.Unmarshal(item, &r) != nil || r.InstanceID == "" {
				continue
			}
			rows = append(rows, r)
			// A full page may have cut an instance's messages short.
			if len(items) >= p.opts.DiscoveryPageSize {
				partial[r.InstanceID] = true
			}
		}
	})
	if err != nil {
		return nil, false, err
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].order() != rows[j].order() {
			return rows[i].order() < rows[j].order()
		}
		return rows[i].ID < rows[j].ID
	})
	byInstance := map[string]int{}
	for _, r := range rows {
		if perInstance {
			if i, ok := byInstance[r.InstanceID]; ok {
				out[i].ids = append(out[i].ids, r.ID)
				out[i].start = out[i].start || r.IsStart
				continue
			}
			byInstance[r.InstanceID] = len(out)
		}
		out = append(out, candidate{instance: r.InstanceID, ids: []string{r.ID}, etag: r.ETag, order: r.order(), session: r.SessionID, start: r.IsStart, partial: partial[r.InstanceID]})
	}
	if skip != nil {
		kept := out[:0]
		for _, c := range out {
			if !skip(c) {
				kept = append(kept, c)
			}
		}
		out = kept
	}
	return out, len(rows) >= p.opts.DiscoveryPageSize, nil
}

// busyCache remembers instances this process found locked, so discovery
// does not spend a request on them again until their lock may be gone.
type busyCache struct {
	mu sync.Mutex
	m  map[string]time.Time
}

func (b *busyCache) isBusy(instance string, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	until, ok := b.m[instance]
	if ok && !now.Before(until) {
		delete(b.m, instance)
		return false
	}
	return ok
}

func (b *busyCache) mark(instance string, until time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]time.Time{}
	}
	if len(b.m) > 10000 {
		b.m = map[string]time.Time{} // bounded; it is only an optimisation
	}
	b.m[instance] = until
}

func (b *busyCache) clear(instance string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, instance)
}

// filterKey names an instance under one capability filter: an instance
// refused by one filter may suit another.
func filterKey(instance string, f *duroxide.DispatcherCapabilityFilter) string {
	r := f.SupportedDuroxideVersions[0]
	// Components, not Packed(): packing is not injective (numbers.go).
	return fmt.Sprintf("%d.%d.%d-%d.%d.%d|%s", r.Min.Major, r.Min.Minor, r.Min.Patch, r.Max.Major, r.Max.Minor, r.Max.Patch, instance)
}

// undecodableBackoff is how long an undecodable work item stays invisible
// after each attempt.
const undecodableBackoff = time.Minute

// busyRetry is how long an instance found locked by someone else is
// skipped; short, because we cannot see when that lock ends.
const busyRetry = 250 * time.Millisecond

// FetchOrchestrationItem implements duroxide.Provider.
func (p *Provider) FetchOrchestrationItem(ctx context.Context, lockTimeout, _ time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	const op = "fetch_orchestration_item"
	if filter != nil && len(filter.SupportedDuroxideVersions) == 0 {
		return nil, nil // Phase 1: an empty list supports nothing
	}
	if filter != nil {
		r := filter.SupportedDuroxideVersions[0]
		if err := validateVersion(op, "filter bound", r.Min); err != nil {
			return nil, err
		}
		if err := validateVersion(op, "filter bound", r.Max); err != nil {
			return nil, err
		}
	}
	p.orchLocks.prune(func(l *orchLock) bool { return p.opts.Now().After(l.lockedUntil.Add(time.Minute)) })
	p.orchLocks.prune(func(l *orchLock) bool {
		if !l.mu.TryLock() { // in use: not stale (see FetchWorkItem)
			return false
		}
		defer l.mu.Unlock()
		return p.opts.Now().After(l.lockedUntil.Add(time.Minute))
	})
	now := p.opts.Now()
	cands, err := p.discover(ctx, docOrchQueue, "", nil, true, func(c candidate) bool {
		return p.busy.isBusy(c.instance, now) || (filter != nil && p.incompatible.isBusy(filterKey(c.instance, filter), now))
	})
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	for _, c := range cands {
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
			return item, nil
		}
	}
	return nil, nil
}

// tryLockOrchestration locks c's instance and messages and loads the
// item. It returns nil, nil when the instance is busy, incompatible or
// orphaned, so the caller moves on to the next candidate.
func (p *Provider) tryLockOrchestration(ctx context.Context, c candidate, lockTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	now := p.opts.Now()
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
	res, created, err := p.lockBatch(ctx, c, token, now, until, filter)
	if err != nil || res == nil {
		return nil, err
	}
	lk := &orchLock{instance: c.instance, token: token, etag: res.etags[0], lockedUntil: until}
	if err := json.Unmarshal(res.bodies[0], &lk.doc); err != nil {
		return nil, fmt.Errorf("decode instance document: %w", err)
	}
	lk.doc.ETag = string(res.etags[0])
	for i := 1; i < len(res.bodies); i++ {
		var m queueDoc
		if err := json.Unmarshal(res.bodies[i], &m); err != nil {
			return nil, fmt.Errorf("decode queue message: %w", err)
		}
		m.ETag = string(res.etags[i])
		lk.messages = append(lk.messages, &m)
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
			return nil, p.releaseOrphan(ctx, lk, created, item.Messages)
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
	}
	if decodeErr != nil && item.HistoryError == nil {
		msg := decodeErr.Error()
		item.HistoryError, item.History = &msg, nil
	}
	p.orchLocks.put(token, lk)
	p.busy.mark(c.instance, until)
	return item, nil
}

// readyMessages returns the ids of inst's visible, unlocked orchestrator
// messages, oldest first, with one single-partition query.
func (p *Provider) readyMessages(ctx context.Context, inst string, now time.Time) ([]string, error) {
	q := "SELECT c.id, c.enqueuedAt, c.enqueueOrder FROM c WHERE c.type = 'orch_queue' AND c.visibleAt <= @now AND " + lockFree + " AND " + notStaged
	var rows []discoveryRow
	_, err := p.st.query(ctx, q, queryParams{}.add("@now", ms(now)), queryOptions{Partition: &inst, PageSize: -1}, func(raw []byte) bool {
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
	gone, err := p.rollForwardIDs(ctx, lk.instance, lk.doc.PendingTurn)
	if err != nil {
		return err
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
		}
	}
	lk.messages = kept
	return nil
}

// lockBatch runs the lock batch. A nil result with a nil error means the
// instance could not be locked (busy, incompatible, or its messages
// changed under us). created reports that the instance document was
// created by this batch (a provisional one).
func (p *Provider) lockBatch(ctx context.Context, c candidate, token string, now, until time.Time, filter *duroxide.DispatcherCapabilityFilter) (res *batchResult, created bool, err error) {
	// A start usually means a new instance: try creating the (provisional)
	// instance document first, which saves the failed patch; otherwise
	// patch the existing one. Each falls back to the other.
	create := c.start
	for try := 0; try < 2; try++ {
		b := newBatch(c.instance)
		if create {
			doc := instanceDoc{ID: instanceDocID(c.instance), InstanceID: c.instance, Type: docInstance, Status: duroxide.StatusRunning,
				LockToken: &token, LockedUntil: ptr(ms(until)), CreatedAt: ms(now), UpdatedAt: ms(now), Provisional: true}
			b.create(mustJSON(doc))
		} else {
			var ops azcosmos.PatchOperations
			ops.SetCondition(lockCondition(now, filter))
			ops.AppendSet("/lockToken", token)
			ops.AppendSet("/lockedUntil", ms(until))
			b.patch(instanceDocID(c.instance), ops, nil)
		}
		p.addMessageLocks(b, c.ids, token, until)
		res, err = p.st.execute(ctx, b, true)
		be, ok := err.(*BatchError)
		switch {
		case err == nil:
			return res, create, nil
		case ok && be.Index == 0 && create && be.StatusCode == http.StatusConflict,
			ok && be.Index == 0 && !create && be.StatusCode == http.StatusNotFound:
			create = !create // guessed wrong: the other way
			continue
		case ok && be.Index == 0 && be.StatusCode == http.StatusPreconditionFailed:
			// Locked, or pinned to a version outside the filter. We
			// cannot tell which without a read, and neither is worth one.
			if filter != nil {
				p.incompatible.mark(filterKey(c.instance, filter), now.Add(busyRetry))
			} else {
				p.busy.mark(c.instance, now.Add(busyRetry))
			}
			return nil, false, nil
		case ok && be.Index == 0 && be.StatusCode == http.StatusConflict:
			p.busy.mark(c.instance, now.Add(busyRetry)) // created by another dispatcher just now
			return nil, false, nil
		case ok:
			// A message that vanished (404, or 412 where its received
			// marker now holds the id) was consumed by a turn that ended
			// after our discovery; the next fetch sees the current state.
			return nil, false, nil
		default:
			return nil, false, err
		}
	}
	return nil, false, nil
}

// lockCondition is the instance patch's predicate: the instance is not
// locked (or its lock expired), is not being deleted, and — with a filter
// — is pinned to a version inside the first range (or not pinned). The
// condition is evaluated by the service atomically with the patch.
// Conditions cannot take parameters, so only numbers are spliced in.
func lockCondition(now time.Time, filter *duroxide.DispatcherCapabilityFilter) string {
	n := strconv.FormatInt(ms(now), 10)
	cond := "FROM c WHERE (NOT IS_DEFINED(c.lockedUntil) OR IS_NULL(c.lockedUntil) OR c.lockedUntil <= " + n + ") AND NOT IS_DEFINED(c.deleted)"
	if filter != nil {
		r := filter.SupportedDuroxideVersions[0]
		cond += " AND (NOT IS_DEFINED(c.pinnedDuroxideVersion) OR IS_NULL(c.pinnedDuroxideVersion) OR (" +
			versionAtLeast(r.Min) + " AND " + versionAtMost(r.Max) + "))" // numbers.go
	}
	return cond
}

func (p *Provider) addMessageLocks(b *batch, ids []string, token string, until time.Time) {
	for _, id := range ids {
		if b.len() >= maxBatchOps {
			break // the rest wait for the next turn
		}
		var ops azcosmos.PatchOperations
		// A message consumed after discovery leaves an orch_received
		// marker under the same id (it stops redelivery); without the
		// condition the lock would patch the marker and hand the turn a
		// "message" with no work item. A 412 here means the message is
		// gone, as a 404 does.
		ops.SetCondition("FROM c WHERE c.type = '" + docOrchQueue + "'")
		ops.AppendSet("/lockToken", token)
		ops.AppendSet("/lockedUntil", ms(until))
		ops.AppendIncrement("/attemptCount", 1)
		b.patch(id, ops, nil)
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
	q := "SELECT * FROM c WHERE (c.type = 'history' AND c.executionId = @exec) OR c.type = 'kv' OR c.type = 'kv_delta'" +
		" OR c.type = 'turn_journal' OR (IS_DEFINED(c.staged) AND NOT IS_NULL(c.staged))" +
		" OR (c.type = 'orch_received' AND c.createdAt < @markersBefore)"
	params := queryParams{}.add("@exec", lk.doc.CurrentExecutionID).add("@markersBefore", ms(p.opts.Now().Add(-receivedRetention)))
	var hist []historyDoc
	var garbage []string
	var kvErr error
	_, err := p.st.query(ctx, q, params, queryOptions{Partition: &lk.instance, PageSize: -1}, func(raw []byte) bool {
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
			lk.kvKeys = append(lk.kvKeys, kv.Key)
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

// deleteAll deletes ids from one partition in as few batches as possible;
// already-deleted documents are fine.
func (p *Provider) deleteAll(ctx context.Context, partition string, ids []string) error {
	for start := 0; start < len(ids); start += maxBatchOps {
		b := newBatch(partition)
		for _, id := range ids[start:min(start+maxBatchOps, len(ids))] {
			b.delete(id, nil, http.StatusNotFound)
		}
		if _, err := p.st.executeTolerant(ctx, b, false); err != nil {
			return err
		}
	}
	return nil
}

// decodeHistory orders history documents by event id and decodes them.
// Any undecodable event fails the whole history: callers turn that into
// history_error (fetch) or an error (read); nothing is dropped.
func decodeHistory(docs []historyDoc) ([]duroxide.Event, error) {
	sort.SliceStable(docs, func(i, j int) bool { return docs[i].EventID < docs[j].EventID })
	events := make([]duroxide.Event, 0, len(docs))
	for _, d := range docs {
		ev, err := duroxide.UnmarshalEvent([]byte(d.EventData))
		if err != nil {
			return nil, fmt.Errorf("history event %d of execution %d cannot be decoded: %w", d.EventID, d.ExecutionID, err)
		}
		events = append(events, ev)
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].EventID < events[j].EventID })
	return events, nil
}

// releaseOrphan applies the orphan rule to an instance that does not
// exist and whose batch cannot create it: queue messages (events for an
// instance that never started) are deleted; anything else is unlocked
// and left for the start that will come.
func (p *Provider) releaseOrphan(ctx context.Context, lk *orchLock, created bool, items []duroxide.WorkItem) error {
	allQueue := true
	for _, it := range items {
		if _, ok := it.(duroxide.QueueMessageItem); !ok {
			allQueue = false
		}
	}
	b := newBatch(lk.instance)
	if allQueue {
		for _, m := range lk.messages {
			b.delete(m.ID, nil, http.StatusNotFound)
		}
	} else {
		for _, m := range lk.messages {
			b.patch(m.ID, unlockMessageOps(m.AttemptCount-1, ms(p.opts.Now())), nil)
		}
	}
	if created {
		// Nobody else can have touched the provisional document: we
		// hold its lock.
		e := lk.etag
		b.delete(instanceDocID(lk.instance), &e, http.StatusNotFound, http.StatusPreconditionFailed)
	} else {
		b.patch(instanceDocID(lk.instance), releaseOps(), &lk.etag)
	}
	_, err := p.st.executeTolerant(ctx, b, false)
	p.busy.clear(lk.instance)
	return err
}

// releaseQuietly gives a lock back after a failure, best effort: if it
// fails, the lock simply expires.
func (p *Provider) releaseQuietly(ctx context.Context, lk *orchLock) {
	b := newBatch(lk.instance)
	b.patch(instanceDocID(lk.instance), releaseOps(), &lk.etag)
	for _, m := range lk.messages {
		b.patch(m.ID, unlockMessageOps(m.AttemptCount, ms(p.opts.Now())), nil)
	}
	if _, err := p.st.execute(ctx, b, false); err != nil {
		p.opts.Logger.Warn("releasing a lock after a failed fetch", "instance_id", lk.instance, "error", err)
	}
	p.busy.clear(lk.instance)
}

func releaseOps() azcosmos.PatchOperations {
	var ops azcosmos.PatchOperations
	ops.AppendSet("/lockToken", jsonNull)
	ops.AppendSet("/lockedUntil", jsonNull)
	return ops
}

func unlockMessageOps(attempts uint32, visibleAt int64) azcosmos.PatchOperations {
	var ops azcosmos.PatchOperations
	ops.AppendSet("/lockToken", jsonNull)
	ops.AppendSet("/lockedUntil", jsonNull)
	ops.AppendSet("/visibleAt", visibleAt)
	ops.AppendSet("/attemptCount", attempts)
	return ops
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

// FetchWorkItem implements duroxide.Provider.
func (p *Provider) FetchWorkItem(ctx context.Context, lockTimeout, _ time.Duration, session *duroxide.SessionFetchConfig, tags duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	const op = "fetch_work_item"
	extra, params, ok := tagClause(tags)
	if !ok {
		return nil, nil
	}
	if session == nil {
		extra += " AND (NOT IS_DEFINED(c.sessionId) OR IS_NULL(c.sessionId))"
	}
	p.workLocks.prune(func(l *workLock) bool {
		// A lock in use (being acked or renewed) is not stale; TryLock
		// also keeps the lock order (lk.mu is never taken under the map's
		// mutex otherwise).
		if !l.mu.TryLock() {
			return false
		}
		defer l.mu.Unlock()
		return p.opts.Now().After(l.lockedUntil.Add(time.Minute))
	})
	cands, err := p.discover(ctx, docWorkerQueue, extra, params, false, nil)
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	for _, c := range cands {
		if c.session != nil {
			ok, err := p.claimSession(ctx, c.instance, *c.session, session)
			if err != nil {
				return nil, duroxide.Wrap(op, err)
			}
			if !ok {
				continue
			}
		}
		key := "w\x00" + c.instance + "\x00" + c.ids[0]
		if !p.claims.take(key) {
			continue // a sibling slot is locking it
		}
		item, err := p.tryLockWorkItem(ctx, c, lockTimeout)
		p.claims.drop(key)
		if err != nil {
			return nil, duroxide.Wrap(op, err)
		}
		if item != nil {
			return item, nil
		}
	}
	return nil, nil
}

// tagClause turns a TagFilter into a query predicate; ok is false for a
// filter that matches nothing.
func tagClause(f duroxide.TagFilter) (clause string, params queryParams, ok bool) {
	const untagged = "NOT IS_DEFINED(c.tag) OR IS_NULL(c.tag)"
	switch f.Mode {
	case duroxide.TagNone:
		return "", nil, false
	case duroxide.TagAny:
		return "", nil, true
	case duroxide.TagDefaultOnly:
		return " AND (" + untagged + ")", nil, true
	case duroxide.TagTags:
		return " AND ARRAY_CONTAINS(@tags, c.tag)", queryParams{}.add("@tags", f.TagList()), true
	case duroxide.TagDefaultAnd:
		return " AND (" + untagged + " OR ARRAY_CONTAINS(@tags, c.tag))", queryParams{}.add("@tags", f.TagList()), true
	}
	return "", nil, false
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
}

func (p *Provider) tryLockWorkItem(ctx context.Context, c candidate, lockTimeout time.Duration) (*duroxide.LockedWorkItem, error) {
	now := p.opts.Now()
	until := now.Add(lockTimeout)
	id := c.ids[0]
	token := newWorkToken(c.instance, id)
	var ops azcosmos.PatchOperations
	ops.AppendSet("/lockToken", token)
	ops.AppendSet("/lockedUntil", ms(until))
	ops.AppendIncrement("/attemptCount", 1)
	etag := azcore.ETag(c.etag)
	body, newEtag, err := p.st.patch(ctx, c.instance, id, ops, &etag, true)
	if isPrecondition(err) || isNotFound(err) {
		return nil, nil // another worker got it first
	}
	if err != nil {
		return nil, err
	}
	var doc queueDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("decode work item document: %w", err)
	}
	wi, err := duroxide.UnmarshalWorkItem([]byte(doc.WorkItem))
	if err != nil {
		// A work item this build cannot decode (e.g. written by a newer
		// writer) is never deleted: it is put back, invisible for a while
		// so it does not block the queue, and reported.
		p.opts.Logger.Error("work item cannot be decoded; left in the queue", "instance_id", c.instance, "item", id, "error", err)
		etag := newEtag
		if _, _, perr := p.st.patch(ctx, c.instance, id, unlockMessageOps(doc.AttemptCount, ms(now.Add(undecodableBackoff))), &etag, false); perr != nil {
			p.opts.Logger.Warn("releasing an undecodable work item", "item", id, "error", perr)
		}
		return nil, nil
	}
	doc.ETag = string(newEtag)
	p.workLocks.put(token, &workLock{instance: c.instance, itemID: id, token: token, etag: newEtag, lockedUntil: until, doc: doc})
	return &duroxide.LockedWorkItem{Item: wi, LockToken: token, AttemptCount: doc.AttemptCount, TraceParent: doc.TraceParent}, nil
}
