package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/duroxide-go/cdb/internal/cosmos"
	"github.com/duroxide-go/cdb/internal/wirejson"
)

// Lease documents and the balancing algorithm behind Leases: read
// every slot lease and member heartbeat, compute fair shares over the live
// members, and claim or give up slots with ETag-conditioned writes.

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
func (l *Leases) readLeases(ctx context.Context) (*leaseSnapshot, error) {
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

// heartbeat extends this process's member lease, creating the document on
// first use. The condition is the ETag just read; another writer in between
// (a process with the same id) is re-read once.
func (l *Leases) heartbeat(ctx context.Context, snap *leaseSnapshot, now int64) error {
	me := l.opts.ProcessID
	doc := memberDoc{ID: memberID(l.opts.Group, me), InstanceID: LeasePartition, Type: docLeaseMember, Group: l.opts.Group, ProcessID: me,
		ExpiresAt: now + l.opts.LeaseDuration.Milliseconds(), RenewedAt: now}
	body, err := wirejson.Marshal(doc)
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
func (l *Leases) readMember(ctx context.Context, process string) (*memberDoc, error) {
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

// lapsedBefore is the instant (ms) another process's lease expiry must
// precede for this one to treat it as expired (Provider.lapsedBefore): the
// expiry was written with that process's clock.
func (l *Leases) lapsedBefore(now int64) int64 { return now - l.p.skew().Milliseconds() }

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
func (l *Leases) rebalance(ctx context.Context, snap *leaseSnapshot, now int64) error {
	me := l.opts.ProcessID
	lapsed := l.lapsedBefore(now)
	targets := fairShares(liveMembers(snap, lapsed))
	held := map[string]int{}
	for s := range NumSlots {
		if o := ownerOf(snap, s, lapsed); o != "" {
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
		switch o := ownerOf(snap, s, lapsed); {
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
func (l *Leases) claim(ctx context.Context, snap *leaseSnapshot, s int, now int64) (bool, error) {
	doc := slotLeaseDoc{ID: slotLeaseID(l.opts.Group, s), InstanceID: LeasePartition, Type: docSlotLease, Group: l.opts.Group, Slot: s,
		Owner: l.opts.ProcessID, ClaimedAt: now}
	body, err := wirejson.Marshal(doc)
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
func (l *Leases) collectMembers(ctx context.Context, snap *leaseSnapshot, now int64) {
	owners := map[string]bool{}
	for _, d := range snap.slots {
		if d != nil {
			owners[d.Owner] = true
		}
	}
	cutoff := l.lapsedBefore(now) - memberGCLeases*l.opts.LeaseDuration.Milliseconds()
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
