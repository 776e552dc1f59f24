package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/google/uuid"

	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Cosmos-backed dispatch-slot leases, shared by every process on a
// container.
//
// The lease documents live in the container in one reserved partition
// (LeasePartition): per group of processes (LeaseOptions.Group), one
// "dispatch_lease" document per slot naming its owner, and one
// "dispatch_member" document per process holding that process's lease
// expiry. A slot is held while its owner's member lease is
// live, so renewing costs one write per process per RenewInterval, however
// many slots it holds. Each renewal:
//
//  1. reads the group's lease documents (one single-partition query);
//  2. renews this process's member document (an ETag-conditional replace);
//  3. computes every live process's fair share from the sorted list of live
//     processes, so all processes agree on the targets without talking to
//     each other;
//  4. if it holds fewer slots than its share, claims slots with an
//     ETag-conditional replace (or a create for a slot never claimed):
//     first slots with no live owner, then the surplus of processes holding
//     more than their share. Two claimants of one slot: one write wins, the
//     other gets 412 (or 409) and re-reads at its next renewal.
//
// A process that holds more than its share does nothing: the processes
// below their share take its surplus. Together, each live process
// converges to its share of the 256 slots.

// LeasePartition is the partition key value (instance id) of the lease
// documents. It is reserved: no instance may use it.
const LeasePartition = "_cdb_dispatch_leases"

// Document types of the lease partition.
const (
	docSlotLease   = "dispatch_lease"
	docLeaseMember = "dispatch_member"
)

// Defaults of LeaseOptions.
const (
	DefaultLeaseDuration = 30 * time.Second
	DefaultLeaseGroup    = "default"
	// maxProcessIDBytes bounds a process id, which is stored in every
	// slot document it owns.
	maxProcessIDBytes = 128
	// memberGCLeases is how many lease durations a member document stays
	// after it expired before a live process deletes it (if it owns no
	// slot), so processes with random ids do not pile up documents.
	memberGCLeases = 10
)

// LeaseOptions configure CosmosLeases. The zero value is usable.
type LeaseOptions struct {
	// ProcessID names this process in the lease documents. Set it to a
	// stable value (a pod name, a host name) so a restarted process finds
	// its slots still assigned to it instead of waiting for them to be
	// rebalanced. It must be unique among live processes: two live
	// processes with one id share that id's slots (safe, but both poll
	// them). Default: the host name plus a random suffix.
	ProcessID string
	// Group names a pool of processes that split the slots between them;
	// each group splits all 256 slots independently. Every process of a
	// group must be able to take any message in the group's slots: the
	// same dispatchers (orchestrations and activities), the same activity
	// tag filter, the same supported versions. Put processes that differ
	// (for example orchestration-only and activity-only runtimes) in
	// different groups, or a message in a slot owned by a process that
	// cannot take it waits until that process leaves. Default "default".
	Group string
	// LeaseDuration is how long a process's slots stay assigned to it
	// after its last renewal, i.e. how long a dead process's slots go
	// unpolled at most. Default 30s. Clocks of the processes must agree to
	// well within this (as they must for lock expiry).
	LeaseDuration time.Duration
	// RenewInterval is how often the lease is renewed and the slots
	// rebalanced. Default LeaseDuration/3; it must be shorter than
	// LeaseDuration.
	RenewInterval time.Duration
}

func (o LeaseOptions) withDefaults() (LeaseOptions, error) {
	if o.LeaseDuration == 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.RenewInterval == 0 {
		o.RenewInterval = o.LeaseDuration / 3
	}
	if o.Group == "" {
		o.Group = DefaultLeaseGroup
	}
	if o.ProcessID == "" {
		host, _ := os.Hostname()
		if host == "" || !utf8.ValidString(host) || len(host) > maxProcessIDBytes-9 {
			host = "process"
		}
		o.ProcessID = host + "-" + uuid.NewString()[:8]
	}
	switch {
	case o.LeaseDuration < 0 || o.RenewInterval < 0:
		return o, configError("lease durations must be positive")
	case o.RenewInterval >= o.LeaseDuration:
		return o, configError("RenewInterval (%v) must be shorter than LeaseDuration (%v)", o.RenewInterval, o.LeaseDuration)
	case !utf8.ValidString(o.ProcessID) || hasControl(o.ProcessID):
		return o, configError("ProcessID must be valid UTF-8 without control characters")
	case len(o.ProcessID) > maxProcessIDBytes:
		return o, configError("ProcessID is %d bytes; at most %d", len(o.ProcessID), maxProcessIDBytes)
	case !utf8.ValidString(o.Group) || hasControl(o.Group) || len(o.Group) > maxProcessIDBytes:
		return o, configError("Group must be valid UTF-8 without control characters, at most %d bytes", maxProcessIDBytes)
	}
	return o, nil
}

// CosmosLeases is a LeaseProvider whose slot assignments are shared, through
// lease documents in the provider's container, by every process using that
// container: each live process polls its fair share of the 256 dispatch
// slots, and the share is rebalanced when processes join or leave.
//
// Give a new CosmosLeases to exactly one provider in Options.Leases; the
// provider renews it in the background every RenewInterval and, on Close,
// ends its lease (a read and a write) so the other processes take its
// slots at their next renewal. It applies to every fetch of that provider, with or
// without WithDispatcher: the slots belong to the process, and all of its
// dispatchers poll them.
//
// While ownership converges a fetch falls back to polling more than this
// process's own slots, never fewer, so no work is stranded:
//   - before the first successful renewal, and whenever this process's own
//     lease has lapsed (renewals failing for LeaseDuration), it polls all
//     slots;
//   - slots without a live owner (never claimed, or their owner's lease
//     lapsed) are polled by every process until one claims them;
//   - a slot just taken over by another process is still polled by the
//     previous owner until its next renewal.
//
// Overlap is safe: instance and item locks are ETag-conditional, so two
// processes polling a slot only contend, they never both take a message.
type CosmosLeases struct {
	opts  LeaseOptions
	bound atomic.Bool
	p     *Provider

	mu    sync.Mutex // serialises renewals
	state atomic.Pointer[leaseView]
}

// NewCosmosLeases returns leases to put in Options.Leases.
func NewCosmosLeases(opts LeaseOptions) (*CosmosLeases, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &CosmosLeases{opts: o}, nil
}

// ProcessID returns the id this process holds slots under.
func (l *CosmosLeases) ProcessID() string { return l.opts.ProcessID }

// Options returns the options in effect (with defaults filled in).
func (l *CosmosLeases) Options() LeaseOptions { return l.opts }

// Owned returns the slots this process held at its last renewal, in
// ascending order (nil before the first renewal).
func (l *CosmosLeases) Owned() []uint8 {
	v := l.state.Load()
	if v == nil {
		return nil
	}
	return append([]uint8(nil), v.owned...)
}

// bind attaches the leases to the provider that owns them.
func (l *CosmosLeases) bind(p *Provider) error {
	if !l.bound.CompareAndSwap(false, true) {
		return configError("a CosmosLeases value belongs to one provider; create one per provider")
	}
	l.p = p
	return nil
}

// leaseView is what AcquireSlots answers from: the result of the last
// successful renewal.
type leaseView struct {
	renewedUntil int64 // this process's lease expiry (ms)
	mine         [NumSlots]bool
	owned        []uint8
	// expiry is, for a slot held by another process, that process's lease
	// expiry (ms); 0 for a slot with no live owner.
	expiry [NumSlots]int64
	// polled is owned plus the ownerless slots at the time of the renewal;
	// it stays the answer until validUntil, the earliest expiry of another
	// owner's lease.
	polled     []uint8
	validUntil int64
}

// slotsAt returns the slots to poll at now (ms): owned ones and those with
// no live owner.
func (v *leaseView) slotsAt(now int64) []uint8 {
	out := make([]uint8, 0, len(v.owned)+8)
	for s := range NumSlots {
		if v.mine[s] || v.expiry[s] <= now {
			out = append(out, uint8(s))
		}
	}
	return out
}

// AcquireSlots returns the slots this process polls (the same for every
// dispatcher); nil, meaning all slots, while it holds no live lease. It
// reads no documents.
func (l *CosmosLeases) AcquireSlots(_ context.Context, _ uint64) ([]uint8, error) {
	v := l.state.Load()
	if v == nil || l.p == nil {
		return nil, nil
	}
	now := ms(l.p.opts.Now())
	if now >= v.renewedUntil {
		return nil, nil
	}
	if now < v.validUntil {
		return v.polled, nil
	}
	return v.slotsAt(now), nil
}

// ReleaseSlots does nothing: slots belong to the process, not to one
// dispatcher, and are given up when the provider closes.
func (l *CosmosLeases) ReleaseSlots(context.Context, uint64) error { return nil }

// slotLeaseDoc is the lease document of one slot.
type slotLeaseDoc struct {
	ID         string `json:"id"`
	InstanceID string `json:"instanceId"`
	Type       string `json:"type"`
	Group      string `json:"leaseGroup"`
	Slot       int    `json:"slot"`
	Owner      string `json:"owner"`
	ClaimedAt  int64  `json:"claimedAt"`
	ETag       string `json:"_etag,omitempty"`
}

// memberDoc is one process's lease.
type memberDoc struct {
	ID         string `json:"id"`
	InstanceID string `json:"instanceId"`
	Type       string `json:"type"`
	Group      string `json:"leaseGroup"`
	ProcessID  string `json:"processId"`
	ExpiresAt  int64  `json:"expiresAt"`
	RenewedAt  int64  `json:"renewedAt"`
	ETag       string `json:"_etag,omitempty"`
}

func slotLeaseID(group string, s int) string {
	return docID(fixed("slot"), user(group), fixed(strconv.Itoa(s)))
}
func memberID(group, process string) string {
	return docID(fixed("member"), user(group), user(process))
}

// leaseSnapshot is the lease partition as one renewal read it.
type leaseSnapshot struct {
	slots   [NumSlots]*slotLeaseDoc
	members map[string]*memberDoc // by process id
}

// readLeases reads the whole lease partition with one query.
func (l *CosmosLeases) readLeases(ctx context.Context) (*leaseSnapshot, error) {
	snap := &leaseSnapshot{members: map[string]*memberDoc{}}
	part := LeasePartition
	// A projection: the documents' other fields are not needed, and the
	// bytes returned are most of a query's charge.
	q := "SELECT c.type, c.slot, c.owner, c.processId, c.expiresAt, c._etag FROM c WHERE (c.type = @slot OR c.type = @member) AND c.leaseGroup = @group"
	params := cosmos.QueryParams{}.Add("@slot", docSlotLease).Add("@member", docLeaseMember).Add("@group", l.opts.Group)
	var bad error
	_, err := l.p.st.Query(ctx, q, params, cosmos.QueryOptions{Partition: &part, PageSize: 1000}, func(item []byte) bool {
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(item, &head); err != nil {
			bad = err
			return false
		}
		switch head.Type {
		case docSlotLease:
			var d slotLeaseDoc
			if err := json.Unmarshal(item, &d); err != nil {
				bad = err
				return false
			}
			if d.Slot >= 0 && d.Slot < NumSlots {
				d.ID, d.Group = slotLeaseID(l.opts.Group, d.Slot), l.opts.Group
				snap.slots[d.Slot] = &d
			}
		case docLeaseMember:
			var d memberDoc
			if err := json.Unmarshal(item, &d); err != nil {
				bad = err
				return false
			}
			d.ID, d.Group = memberID(l.opts.Group, d.ProcessID), l.opts.Group
			snap.members[d.ProcessID] = &d
		}
		return true
	})
	if err == nil && bad != nil {
		err = fmt.Errorf("cdb: undecodable lease document: %w", bad)
	}
	return snap, err
}

// Refresh renews this process's lease and rebalances slots now, as the
// background renewal does every RenewInterval. It returns the first error;
// a lost race for a slot is not an error.
func (l *CosmosLeases) Refresh(ctx context.Context) error {
	if l.p == nil {
		return errors.New("cdb: CosmosLeases is not attached to a provider (put it in Options.Leases)")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := ms(l.p.opts.Now())
	snap, err := l.readLeases(ctx)
	if err != nil {
		return fmt.Errorf("cdb: reading dispatch leases: %w", err)
	}
	if err := l.heartbeat(ctx, snap, now); err != nil {
		return fmt.Errorf("cdb: renewing the dispatch lease of %q: %w", l.opts.ProcessID, err)
	}
	claimErr := l.rebalance(ctx, snap, now)
	l.collectMembers(ctx, snap, now)
	l.publish(snap, now)
	if claimErr != nil {
		return fmt.Errorf("cdb: claiming dispatch slots: %w", claimErr)
	}
	return nil
}

// heartbeat extends this process's member lease, creating the document on
// first use. The condition is the ETag just read; another writer in between
// (a process with the same id) is re-read once.
func (l *CosmosLeases) heartbeat(ctx context.Context, snap *leaseSnapshot, now int64) error {
	me := l.opts.ProcessID
	doc := memberDoc{ID: memberID(l.opts.Group, me), InstanceID: LeasePartition, Type: docLeaseMember, Group: l.opts.Group, ProcessID: me,
		ExpiresAt: now + l.opts.LeaseDuration.Milliseconds(), RenewedAt: now}
	body, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	cur := snap.members[me]
	for attempt := 0; ; attempt++ {
		var etag azcore.ETag
		if cur == nil {
			etag, err = l.p.st.Create(ctx, LeasePartition, body)
		} else {
			e := azcore.ETag(cur.ETag)
			etag, err = l.p.st.Replace(ctx, LeasePartition, doc.ID, body, &e)
		}
		if err == nil {
			doc.ETag = string(etag)
			snap.members[me] = &doc
			return nil
		}
		if attempt > 0 || !(errors.Is(err, cosmos.ErrPreconditionFailed) || errors.Is(err, cosmos.ErrConflict) || errors.Is(err, cosmos.ErrNotFound)) {
			return err
		}
		cur, err = l.readMember(ctx, me)
		if err != nil {
			return err
		}
	}
}

// readMember point-reads a member document (nil if absent).
func (l *CosmosLeases) readMember(ctx context.Context, process string) (*memberDoc, error) {
	raw, etag, err := l.p.st.Read(ctx, LeasePartition, memberID(l.opts.Group, process))
	if errors.Is(err, cosmos.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var d memberDoc
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	d.ETag = string(etag)
	return &d, nil
}

// liveMembers returns the processes whose lease is live at now, sorted.
func liveMembers(snap *leaseSnapshot, now int64) []string {
	var live []string
	for id, m := range snap.members {
		if m.ExpiresAt > now {
			live = append(live, id)
		}
	}
	sort.Strings(live)
	return live
}

// fairShares gives every live process NumSlots/n slots, and one more to the
// first NumSlots%n in sorted order, so every process computes the same
// targets from the same membership.
func fairShares(live []string) map[string]int {
	out := make(map[string]int, len(live))
	if len(live) == 0 {
		return out
	}
	base, extra := NumSlots/len(live), NumSlots%len(live)
	for i, id := range live {
		out[id] = base
		if i < extra {
			out[id]++
		}
	}
	return out
}

// ownerOf returns the live owner of slot s in snap, or "".
func ownerOf(snap *leaseSnapshot, s int, now int64) string {
	d := snap.slots[s]
	if d == nil || d.Owner == "" {
		return ""
	}
	if m := snap.members[d.Owner]; m != nil && m.ExpiresAt > now {
		return d.Owner
	}
	return ""
}

// rebalance claims slots until this process holds its fair share: slots
// with no live owner first, then the surplus of over-share processes. The
// scan starts at an offset derived from the process id, so concurrent
// claimants mostly pick different slots.
func (l *CosmosLeases) rebalance(ctx context.Context, snap *leaseSnapshot, now int64) error {
	me := l.opts.ProcessID
	targets := fairShares(liveMembers(snap, now))
	held := map[string]int{}
	for s := range NumSlots {
		if o := ownerOf(snap, s, now); o != "" {
			held[o]++
		}
	}
	need := targets[me] - held[me]
	if need <= 0 {
		return nil
	}
	start := int(DispatchSlot(me))
	var orphans, surplus []int
	spare := map[string]int{}
	for o, n := range held {
		if o != me && n > targets[o] {
			spare[o] = n - targets[o]
		}
	}
	for i := range NumSlots {
		s := (start + i) % NumSlots
		switch o := ownerOf(snap, s, now); {
		case o == "":
			orphans = append(orphans, s)
		case spare[o] > 0:
			spare[o]--
			surplus = append(surplus, s)
		}
	}
	var firstErr error
	for _, s := range append(orphans, surplus...) {
		if need == 0 {
			break
		}
		ok, err := l.claim(ctx, snap, s, now)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if ok {
			need--
		}
	}
	return firstErr
}

// claim takes slot s with a write conditioned on the ETag read (or a create
// if it has no document yet). Losing the race (412, 409) is not an error.
func (l *CosmosLeases) claim(ctx context.Context, snap *leaseSnapshot, s int, now int64) (bool, error) {
	doc := slotLeaseDoc{ID: slotLeaseID(l.opts.Group, s), InstanceID: LeasePartition, Type: docSlotLease, Group: l.opts.Group, Slot: s,
		Owner: l.opts.ProcessID, ClaimedAt: now}
	body, err := json.Marshal(doc)
	if err != nil {
		return false, err
	}
	var etag azcore.ETag
	if cur := snap.slots[s]; cur != nil {
		e := azcore.ETag(cur.ETag)
		etag, err = l.p.st.Replace(ctx, LeasePartition, doc.ID, body, &e)
	} else {
		etag, err = l.p.st.Create(ctx, LeasePartition, body)
	}
	switch {
	case err == nil:
		doc.ETag = string(etag)
		snap.slots[s] = &doc
		return true, nil
	case errors.Is(err, cosmos.ErrPreconditionFailed) || errors.Is(err, cosmos.ErrConflict) || errors.Is(err, cosmos.ErrNotFound):
		return false, nil
	default:
		// Unknown outcome (timeout, dropped connection): the next renewal
		// reads the truth.
		return false, err
	}
}

// collectMembers deletes member documents that expired long ago and own no
// slot. Failures are ignored: the next renewal tries again.
func (l *CosmosLeases) collectMembers(ctx context.Context, snap *leaseSnapshot, now int64) {
	owners := map[string]bool{}
	for _, d := range snap.slots {
		if d != nil {
			owners[d.Owner] = true
		}
	}
	cutoff := now - memberGCLeases*l.opts.LeaseDuration.Milliseconds()
	for id, m := range snap.members {
		if id == l.opts.ProcessID || owners[id] || m.ExpiresAt > cutoff {
			continue
		}
		e := azcore.ETag(m.ETag)
		if err := l.p.st.Delete(ctx, LeasePartition, m.ID, &e); err == nil || errors.Is(err, cosmos.ErrNotFound) {
			delete(snap.members, id)
		}
	}
}

// publish makes the renewal's result what AcquireSlots answers from.
func (l *CosmosLeases) publish(snap *leaseSnapshot, now int64) {
	me := l.opts.ProcessID
	v := &leaseView{renewedUntil: snap.members[me].ExpiresAt, validUntil: v0}
	for s := range NumSlots {
		d := snap.slots[s]
		switch {
		case d != nil && d.Owner == me:
			v.mine[s] = true
			v.owned = append(v.owned, uint8(s))
		case ownerOf(snap, s, now) != "":
			exp := snap.members[d.Owner].ExpiresAt
			v.expiry[s] = exp
			v.validUntil = min(v.validUntil, exp)
		}
	}
	v.polled = v.slotsAt(now)
	l.state.Store(v)
}

// v0 is "no foreign lease expires": the cached answer never goes stale.
const v0 = int64(^uint64(0) >> 1)

// run renews every RenewInterval until stop closes, then gives the slots
// up.
func (l *CosmosLeases) run(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-stop
		cancel()
	}()
	t := time.NewTicker(l.opts.RenewInterval)
	defer t.Stop()
	for {
		if err := l.Refresh(ctx); err != nil && ctx.Err() == nil {
			l.p.opts.Logger.Warn("dispatch lease renewal failed", "process", l.opts.ProcessID, "error", err)
		}
		select {
		case <-stop:
			l.release()
			return
		case <-t.C:
		}
	}
}

// release ends this process's lease (a read and a write), so the other processes
// take its slots at their next renewal instead of after LeaseDuration. The
// slot documents keep naming it: a restart with the same ProcessID before
// anyone claimed them finds them still its own.
func (l *CosmosLeases) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := l.state.Load()
	if v == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	me := l.opts.ProcessID
	cur, err := l.readMember(ctx, me)
	if err != nil || cur == nil {
		return
	}
	cur.ExpiresAt = 0
	e := azcore.ETag(cur.ETag)
	cur.ETag = ""
	body, err := json.Marshal(cur)
	if err != nil {
		return
	}
	if _, err := l.p.st.Replace(ctx, LeasePartition, cur.ID, body, &e); err != nil {
		l.p.opts.Logger.Warn("giving up dispatch slots failed; they move after the lease expires", "process", me, "error", err)
		return
	}
	l.state.Store(nil)
}
