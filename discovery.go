package cdb

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Discovery: which queue entries a fetch tries to lock. Both fetch paths
// (orchestrations and work items) use it, so it lives apart from either:
// the slot windows, the paged cross-partition scan, and the busy caches
// that remember instances and sessions not worth a request for a while.

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

// lockFree is the predicate for "not locked": the Rust crate writes
// lockedUntil as null, older documents may not have it at all. @lapsed is
// Provider.lapsedBefore: a lock another process wrote with its own clock
// counts as expired only MaxClockSkew after its expiry by ours.
const lockFree = "(NOT IS_DEFINED(c.lockedUntil) OR IS_NULL(c.lockedUntil) OR c.lockedUntil <= @lapsed)"

// notStaged excludes documents of a large turn that is not rolled forward
// yet (large.go).
const notStaged = "(NOT IS_DEFINED(c.staged) OR IS_NULL(c.staged))"

// dispatcherSlots returns the slots the fetching dispatcher may poll: its
// lease, or nil for all of them. Leases belong to the process, so
// they apply to fetches without WithDispatcher too.
func (p *Provider) dispatcherSlots(ctx context.Context) ([]uint8, error) {
	if p.opts.Leases == nil {
		return nil, nil
	}
	id, ok := dispatcherFrom(ctx)
	if _, processWide := p.opts.Leases.(*Leases); !ok && !processWide {
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

// slotsClause restricts discovery to slots (nil: all), and to the
// session-bound items of the pinned instances whatever their slot: their
// sessions are the fetcher's (ownedsessions.go).
func slotsClause(slots []uint8, pinned []string, params cosmos.QueryParams) (string, cosmos.QueryParams) {
	if slots == nil {
		return "", params
	}
	ints := make([]int, len(slots))
	for i, s := range slots {
		ints[i] = int(s)
	}
	params = params.Add("@slots", ints)
	if len(pinned) == 0 {
		return " AND ARRAY_CONTAINS(@slots, c.dispatchSlot)", params
	}
	return " AND (ARRAY_CONTAINS(@slots, c.dispatchSlot) OR (ARRAY_CONTAINS(@pinned, c.instanceId) AND IS_DEFINED(c.sessionId) AND NOT IS_NULL(c.sessionId)))",
		params.Add("@pinned", pinned)
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
// fetch never comes back empty while visible work exists. pinned, if not
// nil, names the instances whose session-bound items are polled whatever
// their slot (see slotsClause).
func (p *Provider) discover(ctx context.Context, docType, extra string, params cosmos.QueryParams, perInstance bool, skip func(candidate) bool, pinned func(slots []uint8) []string) ([]candidate, error) {
	slots, err := p.dispatcherSlots(ctx)
	if err != nil {
		return nil, err
	}
	var pins []string
	if pinned != nil {
		pins = pinned(slots)
	}
	if slots != nil && len(slots) == 0 && len(pins) == 0 {
		return nil, nil // no slots: nothing to poll (e.g. more processes than slots)
	}
	st := p.discovery[docType]
	if st.backlog.Load() && (slots == nil || len(slots) > 0) {
		out, _, err := p.discoverIn(ctx, st.nextWindow(slots), pins, docType, extra, params, perInstance, skip)
		if err != nil || len(out) > 0 {
			return out, err // still in backlog mode: the next fetch takes the next window
		}
	}
	out, full, err := p.discoverIn(ctx, slots, pins, docType, extra, params, perInstance, skip)
	if err == nil {
		st.backlog.Store(full)
	}
	return out, err
}

// discoverIn reads one page's worth of visible, unlocked entries of docType
// in slots; full reports that the page was full (a backlog).
func (p *Provider) discoverIn(ctx context.Context, slots []uint8, pinned []string, docType, extra string, params cosmos.QueryParams, perInstance bool, skip func(candidate) bool) (out []candidate, full bool, err error) {
	clause, params := slotsClause(slots, pinned, params)
	q := "SELECT c.id, c.instanceId, c.enqueuedAt, c.enqueueOrder, c._etag, c.sessionId, STARTSWITH(c.workItem, @start) AS isStart FROM c WHERE c.type = @type AND c.visibleAt <= @now AND " +
		lockFree + " AND " + notStaged + clause + extra
	params = params.Add("@type", docType).Add("@start", `{"StartOrchestration"`)
	var rows []discoveryRow
	partial := map[string]bool{} // instances seen in a full page
	seen := map[string]bool{}    // instance and id of every row taken
	// The scan resumes where the previous fetch with the same query
	// stopped (internal/cosmos/scan.go) and reads pages until it has one page's worth of
	// rows to choose the oldest from, or its page budget is spent: pages
	// come one physical partition at a time and may be empty, and resuming
	// moves through the partitions in turn.
	cur := p.scans.Get("discover\x00" + q + "\x00" + string(mustJSON(params)))
	// The poll alone is background (priority.go): what it finds is locked
	// and loaded at the caller's priority.
	_, err = p.st.Scan(background(ctx), cur, cosmos.ScanRequest{
		Text: q,
		Fresh: func() cosmos.QueryParams {
			return append(params[:len(params):len(params)], azcosmos.QueryParameter{Name: "@now", Value: ms(p.now())},
				azcosmos.QueryParameter{Name: "@lapsed", Value: ms(p.lapsedBefore())})
		},
		PageSize: int32(p.opts.DiscoveryPageSize),
		MaxPages: p.opts.ScanPages,
		Enough:   func() bool { return len(rows) >= p.opts.DiscoveryPageSize },
	}, func(items [][]byte, resumed bool) {
		for _, item := range items {
			var r discoveryRow
			if json.Unmarshal(item, &r) != nil || r.InstanceID == "" {
				continue
			}
			key := r.InstanceID + "\x00" + r.ID
			if seen[key] {
				// A step that resumed an older scan and started a new one
				// reads again what the older one had read: one candidate
				// id per message, or the lock batch hands a message to
				// the turn twice.
				continue
			}
			seen[key] = true
			rows = append(rows, r)
			// A full page may have cut an instance's messages short, and
			// a resumed scan does not show the messages written since it
			// began that sort before where it stopped (cosmos.Scan):
			// either may hide older messages than those it shows.
			if len(items) >= p.opts.DiscoveryPageSize || resumed {
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
