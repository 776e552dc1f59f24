package cdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/google/uuid"

	"github.com/duroxide-go/cdb/internal/limits"
	"github.com/duroxide-go/cdb/internal/wirejson"
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

// LeaseOptions configure Leases. The zero value is usable.
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
	// after its last renewal. Another process takes them over only
	// Options.MaxClockSkew after that (by its own clock), so a dead
	// process's slots go unpolled for at most LeaseDuration plus
	// MaxClockSkew. Default 30s.
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
	case !utf8.ValidString(o.ProcessID) || limits.HasControl(o.ProcessID):
		return o, configError("ProcessID must be valid UTF-8 without control characters")
	case len(o.ProcessID) > maxProcessIDBytes:
		return o, configError("ProcessID is %d bytes; at most %d", len(o.ProcessID), maxProcessIDBytes)
	case !utf8.ValidString(o.Group) || limits.HasControl(o.Group) || len(o.Group) > maxProcessIDBytes:
		return o, configError("Group must be valid UTF-8 without control characters, at most %d bytes", maxProcessIDBytes)
	}
	return o, nil
}

// Leases is a LeaseProvider whose slot assignments are shared, through
// lease documents in the provider's container, by every process using that
// container: each live process polls its fair share of the 256 dispatch
// slots, and the share is rebalanced when processes join or leave.
//
// Give a new Leases to exactly one provider in Options.Leases; the
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
type Leases struct {
	opts  LeaseOptions
	bound atomic.Bool
	p     *Provider

	mu    sync.Mutex // serialises renewals
	state atomic.Pointer[leaseView]
}

// NewLeases returns leases to put in Options.Leases.
func NewLeases(opts LeaseOptions) (*Leases, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Leases{opts: o}, nil
}

// ProcessID returns the id this process holds slots under.
func (l *Leases) ProcessID() string { return l.opts.ProcessID }

// Options returns the options in effect (with defaults filled in).
func (l *Leases) Options() LeaseOptions { return l.opts }

// Owned returns the slots this process held at its last renewal, in
// ascending order (nil before the first renewal).
func (l *Leases) Owned() []uint8 {
	v := l.state.Load()
	if v == nil {
		return nil
	}
	return append([]uint8(nil), v.owned...)
}

// bind attaches the leases to the provider that owns them.
func (l *Leases) bind(p *Provider) error {
	if !l.bound.CompareAndSwap(false, true) {
		return configError("a Leases value belongs to one provider; create one per provider")
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
func (l *Leases) AcquireSlots(_ context.Context, _ uint64) ([]uint8, error) {
	v := l.state.Load()
	if v == nil || l.p == nil {
		return nil, nil
	}
	now := ms(l.p.now())
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
func (l *Leases) ReleaseSlots(context.Context, uint64) error { return nil }

// Refresh renews this process's lease and rebalances slots now, as the
// background renewal does every RenewInterval. It returns the first error;
// a lost race for a slot is not an error.
func (l *Leases) Refresh(ctx context.Context) error {
	if l.p == nil {
		return errors.New("cdb: Leases is not attached to a provider (put it in Options.Leases)")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := ms(l.p.now())
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

// publish makes the renewal's result what AcquireSlots answers from.
func (l *Leases) publish(snap *leaseSnapshot, now int64) {
	me := l.opts.ProcessID
	v := &leaseView{renewedUntil: snap.members[me].ExpiresAt, validUntil: v0}
	margin := l.p.skew().Milliseconds()
	for s := range NumSlots {
		d := snap.slots[s]
		switch {
		case d != nil && d.Owner == me:
			v.mine[s] = true
			v.owned = append(v.owned, uint8(s))
		case ownerOf(snap, s, now-margin) != "":
			// Another owner's lease counts until MaxClockSkew after its
			// expiry (see lapsedBefore).
			exp := snap.members[d.Owner].ExpiresAt + margin
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
func (l *Leases) run(stop <-chan struct{}) {
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
func (l *Leases) release() {
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
	body, err := wirejson.Marshal(cur)
	if err != nil {
		return
	}
	if _, err := l.p.st.Replace(ctx, LeasePartition, cur.ID, body, &e); err != nil {
		l.p.opts.Logger.Warn("giving up dispatch slots failed; they move after the lease expires", "process", me, "error", err)
		return
	}
	l.state.Store(nil)
}
