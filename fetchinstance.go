package cdb

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Fetching a named instance (duroxide.InstanceFetcher): the runtime knows
// which instance its own enqueue readied, so instead of a cross-partition
// discovery query that every woken loop runs and all but one lose, one
// single-partition query lists that instance's ready messages and the
// lock batch takes them, as a discovered candidate would be taken.

var _ duroxide.InstanceFetcher = (*Provider)(nil)

// FetchOrchestrationInstance implements duroxide.InstanceFetcher.
func (p *Provider) FetchOrchestrationInstance(ctx context.Context, instance string, lockTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	const op = "fetch_orchestration_instance"
	if err := validateInstanceID(op, instance); err != nil {
		return nil, err
	}
	if none, err := p.beginOrchestrationFetch(op, filter); none || err != nil {
		return nil, err
	}
	slots, err := p.dispatcherSlots(ctx)
	if err != nil {
		return nil, err
	}
	if slots != nil && !slices.Contains(slots, DispatchSlot(instance)) {
		return nil, nil // another process's slot (leases.go)
	}
	now := p.now()
	if p.busy.isBusy(instance, now) || (filter != nil && p.incompatible.isBusy(filterKey(instance, filter), now)) {
		return nil, nil
	}
	key := "o\x00" + instance
	if !p.claims.take(key) {
		return nil, nil // a sibling slot is locking it
	}
	defer p.claims.drop(key)
	c, err := p.readyCandidate(ctx, instance, now)
	if err != nil || c == nil {
		return nil, duroxide.Wrap(op, err)
	}
	item, err := p.tryLockOrchestration(ctx, *c, lockTimeout, filter)
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	return item, nil
}

// readyCandidate is discovery for one instance: its visible, unlocked
// messages, oldest first, read in its partition (nil when there are none).
func (p *Provider) readyCandidate(ctx context.Context, inst string, now time.Time) (*candidate, error) {
	q := "SELECT c.id, c.enqueuedAt, c.enqueueOrder, STARTSWITH(c.workItem, @start) AS isStart FROM c WHERE c.type = 'orch_queue' AND c.visibleAt <= @now AND " + lockFree + " AND " + notStaged
	params := cosmos.QueryParams{}.Add("@now", ms(now)).Add("@lapsed", ms(now.Add(-p.skew()))).Add("@start", `{"StartOrchestration"`)
	var rows []discoveryRow
	_, err := p.st.Query(ctx, q, params, cosmos.QueryOptions{Partition: &inst, PageSize: -1}, func(raw []byte) bool {
		var r discoveryRow
		if json.Unmarshal(raw, &r) == nil {
			rows = append(rows, r)
		}
		return true
	})
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].order() != rows[j].order() {
			return rows[i].order() < rows[j].order()
		}
		return rows[i].ID < rows[j].ID
	})
	c := &candidate{instance: inst, order: rows[0].order()}
	for _, r := range rows {
		c.ids = append(c.ids, r.ID)
		c.start = c.start || r.IsStart
	}
	return c, nil
}
