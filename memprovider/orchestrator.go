package memprovider

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// FetchOrchestrationItem implements duroxide.Provider.
func (p *Provider) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	return pollFor(ctx, p, pollTimeout, func() *duroxide.OrchestrationItem {
		return p.tryFetchOrchestrationItem(lockTimeout, filter, "")
	})
}

var _ duroxide.InstanceFetcher = (*Provider)(nil)

// FetchOrchestrationInstance implements duroxide.InstanceFetcher: the
// fetch above, for instance alone, without waiting.
func (p *Provider) FetchOrchestrationInstance(ctx context.Context, instance string, lockTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	if err := p.checkIDs("fetch_orchestration_instance", instance); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, duroxide.Wrap("fetch", err)
	}
	return p.tryFetchOrchestrationItem(lockTimeout, filter, instance), nil
}

// pollFor runs try once, and for a long-polling provider keeps retrying
// until it yields a result, pollTimeout passes or ctx ends.
func pollFor[T any](ctx context.Context, p *Provider, pollTimeout time.Duration, try func() *T) (*T, error) {
	if err := ctx.Err(); err != nil {
		return nil, duroxide.Wrap("fetch", err)
	}
	if r := try(); r != nil || !p.longPolling || pollTimeout <= 0 {
		return r, nil
	}
	deadline := time.NewTimer(pollTimeout)
	defer deadline.Stop()
	// Visibility also changes with time (delays, lock expiry), so wake up
	// periodically as well as on notifications.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		p.mu.Lock()
		wake := p.wake
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, nil
		case <-deadline.C:
			return try(), nil
		case <-wake:
		case <-tick.C:
		}
		if r := try(); r != nil {
			return r, nil
		}
	}
}

// tryFetchOrchestrationItem locks the first instance with ready messages
// (only that instance, unless only is "").
func (p *Provider) tryFetchOrchestrationItem(lockTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter, only string) *duroxide.OrchestrationItem {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if filter != nil && len(filter.SupportedDuroxideVersions) == 0 {
		return nil
	}
	considered := map[string]bool{}
	for i := 0; i < len(p.orchQueue); i++ {
		m := p.orchQueue[i]
		if (only != "" && m.instance != only) || m.visibleAt.After(now) || lockedAt(m.lockToken, m.lockedUntil, now) || considered[m.instance] {
			continue
		}
		instance := m.instance
		considered[instance] = true
		if l := p.instanceLocks[instance]; l != nil && l.lockedUntil.After(now) {
			continue
		}
		// The capability filter is applied before anything is locked or
		// any history is looked at.
		st := p.instances[instance]
		var pinned *duroxide.SemVer
		if st != nil {
			if ex := st.executions[st.currentExecution]; ex != nil {
				pinned = ex.pinned
			}
		}
		if !filter.Matches(pinned) {
			continue
		}
		var batch []*orchMessage
		held := false
		for _, b := range p.orchQueue {
			if b.instance != instance || lockedAt(b.lockToken, b.lockedUntil, now) {
				continue
			}
			if !b.visibleAt.After(now) {
				batch = append(batch, b)
			} else if b.held {
				held = true
			}
		}
		if held {
			// A message abandoned with a delay that has not passed: the
			// instance's other messages wait for it, so that none
			// overtakes it (a queue is FIFO).
			continue
		}
		if st == nil && startOf(batch) == nil {
			// Orphan rule: no instance and nothing that would create it.
			// Queue messages for a never-started instance are dropped;
			// anything else waits for the start, for the orphan lifetime.
			// A start that is queued but not visible yet (delayed, or
			// held back by an abandon) means the instance exists: its
			// messages wait for it.
			if p.existsLocked(instance) {
				continue
			}
			if drop := p.expiredOrphans(batch, now); len(drop) > 0 {
				p.orchQueue = slices.DeleteFunc(p.orchQueue, func(b *orchMessage) bool { return slices.Contains(drop, b) })
				p.edge.orphansDropped += int64(len(drop))
				i = -1 // the queue changed; rescan (considered skips what was seen)
			}
			continue
		}
		if st != nil && st.suspended != nil && !slices.ContainsFunc(batch, func(b *orchMessage) bool { return duroxide.WakesSuspended(b.item) }) {
			continue // suspended: its messages wait for a resume
		}
		item := p.lockBatch(instance, st, batch, now, lockTimeout)
		if item != nil && only == "" {
			item.NoMoreReady = !p.otherReady(instance, i+1, now)
		}
		return item
	}
	return nil
}

// otherReady reports whether a message from index from on, of another
// instance than except, is visible and unlocked with its instance
// unlocked: what a discovery query would have shown besides except.
// Callers hold p.mu.
func (p *Provider) otherReady(except string, from int, now time.Time) bool {
	for _, m := range p.orchQueue[from:] {
		if m.instance == except || m.visibleAt.After(now) || lockedAt(m.lockToken, m.lockedUntil, now) {
			continue
		}
		if l := p.instanceLocks[m.instance]; l != nil && l.lockedUntil.After(now) {
			continue
		}
		return true
	}
	return false
}

// startOf returns the first StartOrchestration or ContinueAsNew item of
// batch, or nil.
func startOf(batch []*orchMessage) duroxide.WorkItem {
	for _, m := range batch {
		switch m.item.(type) {
		case duroxide.StartOrchestrationItem, duroxide.ContinueAsNewItem:
			return m.item
		}
	}
	return nil
}

// nameVersionOf returns the orchestration name and version a start or
// continue-as-new item carries ("unknown" for a null version).
func nameVersionOf(item duroxide.WorkItem) (name, version string) {
	var v *string
	switch it := item.(type) {
	case duroxide.StartOrchestrationItem:
		name, v = it.Orchestration, it.Version
	case duroxide.ContinueAsNewItem:
		name, v = it.Orchestration, it.Version
	default:
		return "unknown", "unknown"
	}
	if v == nil {
		return name, "unknown"
	}
	return name, *v
}

// lockBatch takes the instance lock, locks batch and builds the item.
// Callers hold p.mu.
func (p *Provider) lockBatch(instance string, st *instanceState, batch []*orchMessage, now time.Time, lockTimeout time.Duration) *duroxide.OrchestrationItem {
	token := newToken()
	until := now.Add(lockTimeout)
	p.instanceLocks[instance] = &instanceLock{token: token, lockedUntil: until}
	item := &duroxide.OrchestrationItem{
		Instance:   instance,
		LockToken:  token,
		KVSnapshot: map[string]duroxide.KVEntry{},
	}
	for _, m := range batch {
		m.lockToken, m.lockedUntil, m.held = token, until, false
		m.attempts++
		item.AttemptCount = max(item.AttemptCount, m.attempts)
		item.Messages = append(item.Messages, m.item)
	}
	if st != nil {
		item.OrchestrationName, item.Version, item.ExecutionID = st.name, st.version, st.currentExecution
		maps.Copy(item.KVSnapshot, st.kvStore)
		item.KVBaseline = failedBaseline(st)
	} else {
		start := startOf(batch)
		item.OrchestrationName, item.Version = nameVersionOf(start)
		item.ExecutionID = 1
		if s, ok := start.(duroxide.StartOrchestrationItem); ok && s.ExecutionID > 1 {
			item.ExecutionID = s.ExecutionID // a re-created id continues its deleted lives' count
		}
	}
	history, err := decodeHistory(p.history[instance][item.ExecutionID])
	if err != nil {
		msg := err.Error()
		item.HistoryError = &msg
	} else {
		item.History = history
	}
	return item
}

// decodeHistory returns the events of rows, failing on a corrupt row as
// a decoder would.
func decodeHistory(rows []storedEvent) ([]duroxide.Event, error) {
	events := make([]duroxide.Event, 0, len(rows))
	for _, r := range rows {
		if r.corrupt {
			return nil, fmt.Errorf("failed to deserialize history event %d: invalid JSON", r.eventID)
		}
		events = append(events, r.event)
	}
	return events, nil
}

// lockedInstance returns the instance whose lock has token (live or
// expired), or "" if none. Callers hold p.mu.
func (p *Provider) lockedInstance(token string) (string, *instanceLock) {
	if token == "" {
		return "", nil
	}
	for instance, l := range p.instanceLocks {
		if l.token == token {
			return instance, l
		}
	}
	return "", nil
}

// isTerminal reports whether status ends an execution (and merges KV).
func isTerminal(status string) bool {
	switch status {
	case duroxide.StatusCompleted, duroxide.StatusFailed, duroxide.StatusContinuedAsNew:
		return true
	}
	return false
}

// AckOrchestrationItem implements duroxide.Provider.
func (p *Provider) AckOrchestrationItem(ctx context.Context, lockToken string, commit duroxide.OrchestrationCommit) error {
	_, err := p.ackTurn(ctx, lockToken, commit, duroxide.LocalWork{})
	return err
}

// ackTurn commits a turn, locking up to want.Max of its activities for
// the caller (handoff.go).
func (p *Provider) ackTurn(ctx context.Context, lockToken string, commit duroxide.OrchestrationCommit, want duroxide.LocalWork) (handed []*duroxide.LockedWorkItem, err error) {
	const op = "ack_orchestration_item"
	defer func() {
		if err != nil {
			handed = nil
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()

	// Validate everything before changing anything: a failed ack changes
	// nothing and keeps the lock.
	instance, lock := p.lockedInstance(lockToken)
	if lock == nil {
		return nil, duroxide.Kinded(duroxide.ErrLockLost, op, "Invalid lock token: %q is not held", lockToken)
	}
	if !lock.lockedUntil.After(now) {
		return nil, duroxide.Kinded(duroxide.ErrLockLost, op, "Invalid lock token: the lock on %s expired", instance)
	}
	if id, dup := duplicateEventID(p.history[instance][commit.ExecutionID], commit.HistoryDelta); dup {
		return nil, duroxide.Kinded(duroxide.ErrDuplicateEvent, op, "duplicate event_id %d for %s execution %d", id, instance, commit.ExecutionID)
	}
	for _, w := range commit.WorkerItems {
		if _, ok := w.(duroxide.ActivityExecuteItem); !ok {
			return nil, duroxide.Permanent(op, "worker item %s does not belong on the worker queue", w.Variant())
		}
	}
	for _, o := range commit.OrchestratorItems {
		if o.Queue() != duroxide.OrchestratorQueue {
			return nil, duroxide.Permanent(op, "orchestrator item %s does not belong on the orchestrator queue", o.Variant())
		}
	}
	if err := p.checkCommit(op, instance, p.instances[instance], commit); err != nil {
		return nil, err
	}
	var locked []*orchMessage
	for _, m := range p.orchQueue {
		if m.lockToken == lockToken {
			locked = append(locked, m)
		}
	}

	// Instance and execution records.
	st := p.instances[instance]
	if st == nil {
		name, version := nameVersionOf(startOf(locked))
		st = &instanceState{
			id:               instance,
			name:             name,
			version:          version,
			currentExecution: commit.ExecutionID,
			createdAt:        now,
			executions:       map[uint64]*executionState{},
			kvStore:          map[string]duroxide.KVEntry{},
			kvDelta:          map[string]*duroxide.KVEntry{},
		}
		p.instances[instance] = st
	}
	// Draining an ended instance's late messages is not an update
	// (duroxide.OrchestrationCommit): its updatedAt stays its end.
	if cur := st.executions[st.currentExecution]; !(commit.Drains() && commit.ExecutionID <= st.currentExecution &&
		cur != nil && isTerminal(cur.status)) {
		st.updatedAt = now
	}
	st.currentExecution = max(st.currentExecution, commit.ExecutionID)
	st.blocked = "" // a committed turn replayed the history cleanly
	if c := commit.Suspend; c != nil {
		st.suspended = nil
		if c.Suspended {
			st.suspended = &duroxide.SuspendChange{Suspended: true, Reason: c.Reason}
		}
	}
	if s := commit.Metadata.Status; s != nil && isTerminal(*s) {
		st.suspended = nil // an execution that ends is not suspended (duroxide.SuspendChange)
	}
	ex := st.executions[commit.ExecutionID]
	if ex == nil {
		ex = &executionState{id: commit.ExecutionID, status: duroxide.StatusRunning, startedAt: now}
		st.executions[commit.ExecutionID] = ex
	}

	// History (append-only: existing rows are never decoded).
	if len(commit.HistoryDelta) > 0 {
		p.appendHistory(instance, commit.ExecutionID, commit.HistoryDelta)
	}

	// Metadata.
	md := commit.Metadata
	if md.OrchestrationName != nil {
		st.name = *md.OrchestrationName
	}
	if md.OrchestrationVersion != nil {
		st.version = *md.OrchestrationVersion
	}
	if md.ParentInstanceID != nil {
		st.parent = ptr(*md.ParentInstanceID)
	}
	if md.Status != nil {
		ex.status = *md.Status
		if *md.Status != duroxide.StatusRunning {
			ex.completedAt = ptr(now)
		}
	}
	if md.Output != nil {
		ex.output = ptr(*md.Output)
	}
	if md.PinnedDuroxideVersion != nil {
		ex.pinned = ptr(*md.PinnedDuroxideVersion)
	}

	// Custom status and KV are materialized from the delta's events.
	applyCustomStatus(st, commit.HistoryDelta)
	if commit.RestoreKV {
		restoreKV(st, commit.ExecutionID)
	}
	dropStaleBaseline(st)
	applyKV(st, commit.HistoryDelta)
	if md.Status != nil && isTerminal(*md.Status) {
		keepBaseline(st, commit.ExecutionID, *md.Status)
		mergeKV(st)
	}

	// Worker items: insert, then delete cancelled activities, so an
	// activity in both lists ends up absent.
	for _, w := range commit.WorkerItems {
		m := &workMessage{seq: p.nextSeq(), item: w.(duroxide.ActivityExecuteItem), visibleAt: now, enqueuedAt: now}
		if h := handOff(m, instance, commit, want, len(handed), now); h != nil {
			handed = append(handed, h)
		}
		p.workQueue = append(p.workQueue, m)
	}
	if len(commit.CancelledActivities) > 0 {
		p.workQueue = slices.DeleteFunc(p.workQueue, func(m *workMessage) bool {
			for _, c := range commit.CancelledActivities {
				if m.item.Instance == c.Instance && m.item.ExecutionID == c.ExecutionID && m.item.ID == c.ActivityID {
					return true
				}
			}
			return false
		})
	}

	// Orchestrator items: a timer becomes visible when it fires; one of
	// the fetched messages handed back keeps its place in the queue
	// (duroxide.OrchestrationCommit.OrchestratorItems).
	backs := handedBack(instance, locked, commit.OrchestratorItems)
	for i, o := range commit.OrchestratorItems {
		visible := now
		if tf, ok := o.(duroxide.TimerFiredItem); ok {
			visible = time.UnixMilli(int64(tf.FireAtMs))
		}
		seq := p.nextSeq()
		if m := backs[i]; m != nil {
			seq, visible = m.seq, m.visibleAt
		}
		p.orchQueue = append(p.orchQueue, &orchMessage{seq: seq, instance: o.InstanceID(), item: o, visibleAt: visible})
	}

	// Consume the locked messages and release the lock.
	p.orchQueue = slices.DeleteFunc(p.orchQueue, func(m *orchMessage) bool { return m.lockToken == lockToken })
	if len(backs) > 0 {
		slices.SortStableFunc(p.orchQueue, func(a, b *orchMessage) int { return cmp.Compare(a.seq, b.seq) })
	}
	delete(p.instanceLocks, instance)
	p.notify()
	p.notifyCommit(instance, unhanded(commit, handed))
	return handed, nil
}

// handedBack matches the orchestrator items that hand back one of the
// locked messages of instance (the same encoded work item, as the Cosmos
// provider compares them; each message once): the result maps an item's
// index to its message.
func handedBack(instance string, locked []*orchMessage, items []duroxide.WorkItem) map[int]*orchMessage {
	var out map[int]*orchMessage
	used := map[*orchMessage]bool{}
	for i, o := range items {
		if o.InstanceID() != instance {
			continue
		}
		enc, err := duroxide.MarshalWorkItem(o)
		if err != nil {
			continue
		}
		for _, m := range locked {
			if was, err := duroxide.MarshalWorkItem(m.item); !used[m] && err == nil && bytes.Equal(was, enc) {
				used[m] = true
				if out == nil {
					out = map[int]*orchMessage{}
				}
				out[i] = m
				break
			}
		}
	}
	return out
}

// appendHistory stores events under instance/execution, keeping rows
// sorted by event id. Callers hold p.mu and have rejected duplicates.
// duplicateEventID returns an event id of delta that rows (sorted by id,
// as appendHistory keeps them) or another event of delta already has.
// It builds no set of the history's ids: every ack checks, and the
// history only grows.
func duplicateEventID(rows []storedEvent, delta []duroxide.Event) (uint64, bool) {
	for _, e := range delta {
		if _, found := slices.BinarySearchFunc(rows, e.EventID, func(r storedEvent, id uint64) int { return cmp.Compare(r.eventID, id) }); found {
			return e.EventID, true
		}
	}
	if len(delta) > maxScannedDelta {
		seen := make(map[uint64]bool, len(delta))
		for _, e := range delta {
			if seen[e.EventID] {
				return e.EventID, true
			}
			seen[e.EventID] = true
		}
		return 0, false
	}
	for i, e := range delta {
		for _, prev := range delta[:i] {
			if prev.EventID == e.EventID {
				return e.EventID, true
			}
		}
	}
	return 0, false
}

// maxScannedDelta bounds the pairwise check of a delta's own ids; a
// longer delta is checked with a set.
const maxScannedDelta = 64

func (p *Provider) appendHistory(instance string, executionID uint64, events []duroxide.Event) {
	byExec := p.history[instance]
	if byExec == nil {
		byExec = map[uint64][]storedEvent{}
		p.history[instance] = byExec
	}
	rows := byExec[executionID]
	for _, e := range events {
		rows = append(rows, storedEvent{eventID: e.EventID, event: e})
	}
	slices.SortStableFunc(rows, func(a, b storedEvent) int {
		switch {
		case a.eventID < b.eventID:
			return -1
		case a.eventID > b.eventID:
			return 1
		}
		return 0
	})
	byExec[executionID] = rows
}

// applyCustomStatus applies the last CustomStatusUpdated of events.
func applyCustomStatus(st *instanceState, events []duroxide.Event) {
	for i := len(events) - 1; i >= 0; i-- {
		if cs, ok := events[i].Kind.(duroxide.CustomStatusUpdated); ok {
			if cs.Status != nil {
				st.customStatus = ptr(*cs.Status)
			} else {
				st.customStatus = nil
			}
			st.customStatusVersion++
			return
		}
	}
}

// AbandonOrchestrationItem implements duroxide.Provider.
func (p *Provider) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	return p.abandonOrchestrationItem(ctx, "abandon_orchestration_item", lockToken, delay, ignoreAttempt, "")
}

// BlockOrchestrationItem implements duroxide.Provider.
func (p *Provider) BlockOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, reason string) error {
	return p.abandonOrchestrationItem(ctx, "block_orchestration_item", lockToken, delay, true, reason)
}

// BlockedReason implements duroxide.Provider.
func (p *Provider) BlockedReason(ctx context.Context, instance string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", duroxide.Wrap("blocked_reason", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if st := p.instances[instance]; st != nil {
		return st.blocked, nil
	}
	return "", nil
}

var _ duroxide.SuspensionReader = (*Provider)(nil)

// Suspension implements duroxide.SuspensionReader.
func (p *Provider) Suspension(ctx context.Context, instance string) (bool, string, error) {
	if err := ctx.Err(); err != nil {
		return false, "", duroxide.Wrap("suspension", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if st := p.instances[instance]; st != nil && st.suspended != nil {
		return true, st.suspended.Reason, nil
	}
	return false, "", nil
}

// PendingRequests implements duroxide.PendingRequestReader.
func (p *Provider) PendingRequests(ctx context.Context, instance string) ([]duroxide.WorkItem, error) {
	if err := ctx.Err(); err != nil {
		return nil, duroxide.Wrap("pending_requests", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []duroxide.WorkItem
	for _, m := range p.orchQueue {
		if m.instance == instance && duroxide.IsRequest(m.item) {
			out = append(out, m.item)
		}
	}
	return out, nil
}

// abandonOrchestrationItem releases the lock; a non-empty blocked is
// recorded as the instance's blocked reason.
func (p *Provider) abandonOrchestrationItem(ctx context.Context, op, lockToken string, delay time.Duration, ignoreAttempt bool, blocked string) error {
	if err := ctx.Err(); err != nil {
		return duroxide.Wrap(op, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	instance, lock := p.lockedInstance(lockToken)
	if lock == nil {
		return duroxide.Kinded(duroxide.ErrLockLost, op, "Invalid lock token: %q is not held", lockToken)
	}
	delete(p.instanceLocks, instance)
	if st := p.instances[instance]; st != nil && blocked != "" {
		st.blocked = blocked
	}
	for _, m := range p.orchQueue {
		if m.lockToken != lockToken {
			continue
		}
		m.lockToken, m.lockedUntil = "", time.Time{}
		if delay > 0 {
			m.visibleAt, m.held = now.Add(delay), true
		}
		if ignoreAttempt && m.attempts > 0 {
			m.attempts--
		}
	}
	p.notify()
	return nil
}

// RenewOrchestrationItemLock implements duroxide.Provider.
func (p *Provider) RenewOrchestrationItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	const op = "renew_orchestration_item_lock"
	if err := ctx.Err(); err != nil {
		return duroxide.Wrap(op, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	_, lock := p.lockedInstance(lockToken)
	if lock == nil {
		return duroxide.Kinded(duroxide.ErrLockLost, op, "Invalid lock token: %q is not held", lockToken)
	}
	if !lock.lockedUntil.After(now) {
		return duroxide.Kinded(duroxide.ErrLockLost, op, "lock expired")
	}
	lock.lockedUntil = now.Add(extendFor)
	for _, m := range p.orchQueue {
		if m.lockToken == lockToken {
			m.lockedUntil = lock.lockedUntil
		}
	}
	return nil
}

// EnqueueForOrchestrator implements duroxide.Provider. It never creates
// the instance and ignores TimerFired.FireAtMs.
func (p *Provider) EnqueueForOrchestrator(ctx context.Context, item duroxide.WorkItem, delay time.Duration) error {
	const op = "enqueue_for_orchestrator"
	if err := ctx.Err(); err != nil {
		return duroxide.Wrap(op, err)
	}
	if item == nil {
		return duroxide.Kinded(duroxide.ErrInvalidInput, op, "the work item is nil")
	}
	if item.Queue() != duroxide.OrchestratorQueue {
		return duroxide.Kinded(duroxide.ErrInvalidInput, op, "work item %T does not belong on the orchestrator queue", item)
	}
	if err := p.checkItem(op, item, ""); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.orchQueue = append(p.orchQueue, &orchMessage{
		seq:       p.nextSeq(),
		instance:  item.InstanceID(),
		item:      item,
		visibleAt: p.now().Add(max(delay, 0)),
	})
	p.notify()
	if delay <= 0 {
		p.enqueues.Notify(duroxide.OrchestratorQueue, item.InstanceID())
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
