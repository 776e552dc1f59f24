package cdb

import (
	"container/list"
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// A steady orchestration turn used to cost four round trips: discovery,
// the lock batch, the query loading the current execution's history and
// the KV documents, and the commit batch. The load is the one that can go:
// after a turn commits, this process knows exactly what the instance's
// partition holds for the next turn — the history it loaded plus the
// events it just wrote, the KV documents after its writes — because it
// wrote the commit itself. The turn cache keeps that state per instance,
// and the next fetch of the instance uses it instead of the query when
// the lock batch proves nothing changed in between.
//
// The proof is the instance document the lock batch returns (it is
// patched under the lock, so it is the primary's current state, atomic
// with the lock; lagging replicas and session tokens play no part):
//
//   - lastAckToken is still the token of the turn that made the entry.
//     Tokens are unique per lock, so no other turn committed since — in
//     this process or any other — and the instance was not deleted and
//     re-created (a new document has another, or no, lastAckToken);
//   - currentExecutionId is the entry's execution, and the execution's
//     eventCount is the entry's number of events;
//   - no large turn is pending (pendingTurn, large.go).
//
// History and KV change only by committed turns (small or large: both
// set lastAckToken), by deletion (a new document), by pruning (older
// executions only) and by writes that bypass the instance document:
// AppendWithExecution (a test and fault-injection hook, which drops this
// process's entry) and an operator editing documents by hand. The cache
// cannot see the latter, so it trusts a state only for turnCacheMaxAge
// after the load query it descends from, and every chain of cached
// states starts with a query: the first turn of a new instance loads
// nothing (there is nothing to load), and its commit is not cached, so
// the instance's second turn queries and sees anything written beside
// it. An edit made behind the provider's back is therefore seen by the
// next fetch in another process, after a restart, or within
// turnCacheMaxAge. Anything else falls back to the query, so a miss costs
// what every turn cost before.
//
// Staged leftovers of a large turn that never committed (another
// process crashed mid-staging) are not seen by a cached load; the query
// removed them before the retried turn wrote the same ids, and without
// it the commit's 409 on such an id triggers the same clean-up
// (cleanStale in ack.go). Received-message markers past their retention
// are likewise found only by the query: a turn that leaves markers
// records on the instance document when the last of them expires
// (receivedUntil), and until a query has run after that moment the cache
// defers to the query, so an expired marker is removed by the next turn
// as before. (An instance that received a message from another instance
// is therefore served by the query for the marker retention, an hour.
// Markers left by writers that do not record receivedUntil are found
// within turnCacheMaxAge.)
//
// Why not read the history by id inside the lock batch (a batch may
// contain reads, and event ids are deterministic)? The ids to read must be
// known before the batch, but the execution and its event count are in
// the instance document the batch locks; discovery sees only queue
// documents. Knowing them needs exactly the per-instance memory this
// cache is, and then the documents themselves are already known. Reading
// them again would also raise the request charge: a point read costs 1 RU
// per started KB (batch reads are charged as point reads), so a history
// of N events costs at least N RU, while the query costs about 2.3 RU
// plus a little per document; and the KV documents' ids are not known at
// all (keys are user strings), and a read of a missing id rolls back the
// whole batch, lock included. See docs/performance.md.

// DefaultTurnCacheBytes is the default of Options.TurnCacheBytes.
const DefaultTurnCacheBytes = 32 << 20

// turnCacheMaxAge bounds how long after a load query its descendants are
// trusted: the delay before a fetch in this process notices documents
// edited behind the provider's back. One query per busy instance per
// minute costs nothing worth counting.
const turnCacheMaxAge = time.Minute

// turnState is one instance's current-execution history and KV documents
// as the next turn's fetch must load them.
type turnState struct {
	instance string
	exec     uint64
	// ackToken is the lastAckToken the instance document carries while
	// this state is current.
	ackToken string
	history  []historyDoc // of exec, by event id
	kv       map[string]duroxide.KVEntry
	delta    []kvDoc
	// loadedAt is when the query this state descends from ran.
	loadedAt time.Time
	size     int
}

// turnCache is a byte-bounded LRU of turnStates by instance.
type turnCache struct {
	mu    sync.Mutex
	limit int
	used  int
	lru   list.List // of *turnState, most recent first
	byID  map[string]*list.Element
}

func newTurnCache(limit int) *turnCache {
	return &turnCache{limit: limit, byID: map[string]*list.Element{}}
}

func (c *turnCache) enabled() bool { return c != nil && c.limit > 0 }

// take removes and returns inst's entry: the lock that takes it owns it,
// and only that lock's successful commit puts a state back.
func (c *turnCache) take(inst string) *turnState {
	if !c.enabled() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byID[inst]
	if !ok {
		return nil
	}
	st := c.lru.Remove(e).(*turnState)
	delete(c.byID, inst)
	c.used -= st.size
	return st
}

// put stores st, evicting the least recently stored entries over the
// limit; a state larger than the whole limit is not kept.
func (c *turnCache) put(st *turnState) {
	if !c.enabled() {
		return
	}
	st.size = st.bytes()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[st.instance]; ok {
		c.used -= e.Value.(*turnState).size
		c.lru.Remove(e)
		delete(c.byID, st.instance)
	}
	if st.size > c.limit {
		return
	}
	c.byID[st.instance] = c.lru.PushFront(st)
	c.used += st.size
	for c.used > c.limit {
		last := c.lru.Back()
		old := c.lru.Remove(last).(*turnState)
		delete(c.byID, old.instance)
		c.used -= old.size
	}
}

// drop forgets inst (its documents changed behind the instance document).
func (c *turnCache) drop(inst string) { c.take(inst) }

// len reports the number of entries (tests).
func (c *turnCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// bytes estimates the memory st holds.
func (st *turnState) bytes() int {
	const overhead = 96
	n := overhead + len(st.instance)
	for _, h := range st.history {
		n += overhead + len(h.ID) + len(h.EventData)
	}
	for k, v := range st.kv {
		n += overhead + len(k) + len(v.Value)
	}
	for _, d := range st.delta {
		n += overhead + len(d.ID) + len(d.Key) + len(d.Value)
	}
	return n
}

// current reports whether st is what the query would load for the
// locked instance document doc.
func (st *turnState) current(doc *instanceDoc, now time.Time) bool {
	if st == nil || !doc.exists() || doc.PendingTurn != nil || doc.LastAckToken == "" {
		return false
	}
	if doc.LastAckToken != st.ackToken || doc.CurrentExecutionID != st.exec {
		return false
	}
	if ex := doc.execution(st.exec); ex != nil && ex.EventCount != len(st.history) {
		return false
	}
	if doc.ReceivedUntil != nil && st.loadedAt.UnixMilli() <= *doc.ReceivedUntil {
		// Markers may have expired since the query: only a query made after
		// the last of them expired has seen (and let the turn remove) them.
		return false
	}
	return now.Sub(st.loadedAt) < turnCacheMaxAge
}

// noteReceived records on the instance document how long the markers
// this turn leaves (one per consumed cross-instance message) live.
func noteReceived(doc *instanceDoc, lk *orchLock, now time.Time, lifetime time.Duration) {
	for _, m := range lk.messages {
		if m.OutboxKey == "" {
			continue
		}
		until := ms(now.Add(lifetime))
		if doc.ReceivedUntil == nil || *doc.ReceivedUntil < until {
			doc.ReceivedUntil = &until
		}
		return
	}
}

// loadTurnStateCached loads the locked instance's history and KV state
// from the turn cache when it is current, else with the load query.
func (p *Provider) loadTurnStateCached(ctx context.Context, lk *orchLock, item *duroxide.OrchestrationItem) error {
	if p.restoreTurnState(lk, item) {
		return nil
	}
	return p.loadTurnState(ctx, lk, item)
}

// restoreTurnState fills item and lk from this process's turn cache
// instead of the load query. It reports false (and changes nothing) when
// there is no entry or the locked document shows it is not current.
func (p *Provider) restoreTurnState(lk *orchLock, item *duroxide.OrchestrationItem) bool {
	st := p.turns.take(lk.instance)
	if !st.current(&lk.doc, p.now()) {
		return false
	}
	events, err := decodeHistory(append([]historyDoc(nil), st.history...))
	if err != nil {
		return false // cannot happen for events this process encoded; the query decides
	}
	item.History = events
	for k, v := range st.kv {
		item.KVSnapshot[k] = v
		lk.storeKV(kvDoc{Key: k, Value: v.Value, LastUpdatedAtMs: v.LastUpdatedAtMs})
	}
	for _, d := range st.delta {
		lk.deltaKeys = append(lk.deltaKeys, d.Key)
	}
	lk.delta = append([]kvDoc(nil), st.delta...)
	lk.base = st
	return true
}

// noteLoaded records what the load query found, as the base a commit of
// the lock builds the next cached state on. Nothing is recorded when the
// history or KV could not be decoded: that turn is handed a history
// error, and the next one must query again.
func (p *Provider) noteLoaded(lk *orchLock, hist []historyDoc, item *duroxide.OrchestrationItem, decoded bool) {
	if !decoded || !p.turns.enabled() {
		return
	}
	st := &turnState{instance: lk.instance, exec: lk.doc.CurrentExecutionID, history: hist, kv: make(map[string]duroxide.KVEntry, len(item.KVSnapshot)),
		delta: append([]kvDoc(nil), lk.delta...), loadedAt: p.now()}
	for k, v := range item.KVSnapshot {
		st.kv[k] = v
	}
	lk.base = st
}

// rememberTurn stores the state after plan's commit — the lock's base
// plus what the single commit batch wrote — for the instance's next
// fetch. It is called only after that batch committed (not for a large
// turn, whose writes are spread over several batches, nor for an ack
// whose outcome was learnt indirectly).
func (p *Provider) rememberTurn(plan *turnPlan, c duroxide.OrchestrationCommit) {
	base := plan.lock.base
	if base == nil || plan.large || len(plan.lock.undo) > 0 {
		// A lock that found undo documents (kvbaseline.go) may leave them:
		// the cache does not hold them, so the next fetch queries.
		return
	}
	var doc instanceDoc
	if json.Unmarshal(plan.commit.Doc, &doc) != nil {
		return
	}
	exec := doc.CurrentExecutionID
	if base.exec != exec && c.ExecutionID != exec {
		return // the commit wrote to an execution that is not the current one
	}
	next := &turnState{instance: base.instance, exec: exec, ackToken: doc.LastAckToken, kv: make(map[string]duroxide.KVEntry, len(base.kv)),
		loadedAt: base.loadedAt}
	if base.exec == exec {
		next.history = append(make([]historyDoc, 0, len(base.history)+len(c.HistoryDelta)), base.history...)
	}
	for k, v := range base.kv {
		next.kv[k] = v
	}
	delta := map[string]kvDoc{}
	var deltaOrder []string
	for _, d := range base.delta {
		delta[d.Key] = d
		deltaOrder = append(deltaOrder, d.Key)
	}
	for i, o := range plan.ops {
		switch plan.kinds[i+1] {
		case docHistory:
			var h historyDoc
			if o.Kind != cosmos.BatchCreate || json.Unmarshal(o.Doc, &h) != nil {
				return
			}
			if h.ExecutionID == exec {
				next.history = append(next.history, h)
			}
		case docKV:
			if !applyKVOp(base.instance, o, next.kv, delta, &deltaOrder) {
				return
			}
		}
	}
	sortHistoryDocs(next.history)
	for _, k := range deltaOrder {
		if d, ok := delta[k]; ok {
			next.delta = append(next.delta, d)
		}
	}
	if ex := doc.execution(exec); ex != nil && ex.EventCount != len(next.history) {
		return // the count disagrees: let the next fetch query
	}
	p.turns.put(next)
}

// applyKVOp applies one KV write of a commit to the state the next fetch
// would load: kv documents by key (the snapshot) and kv_delta documents.
// It reports false for an operation it does not understand.
func applyKVOp(inst string, o cosmos.BatchOp, store map[string]duroxide.KVEntry, delta map[string]kvDoc, order *[]string) bool {
	switch o.Kind {
	case cosmos.BatchUpsert:
		var d kvDoc
		if json.Unmarshal(o.Doc, &d) != nil {
			return false
		}
		switch d.Type {
		case docKV:
			store[d.Key] = duroxide.KVEntry{Value: d.Value, LastUpdatedAtMs: d.LastUpdatedAtMs}
		case docKVDelta:
			if _, ok := delta[d.Key]; !ok {
				*order = append(*order, d.Key)
			}
			delta[d.Key] = d
		default:
			return false
		}
	case cosmos.BatchDelete:
		for k := range store {
			if kvDocID(inst, k) == o.ID {
				delete(store, k)
			}
		}
		for k := range delta {
			if kvDeltaDocID(inst, k) == o.ID {
				delete(delta, k)
			}
		}
	default:
		return false
	}
	return true
}

func sortHistoryDocs(docs []historyDoc) {
	sort.SliceStable(docs, func(i, j int) bool { return docs[i].EventID < docs[j].EventID })
}
