package memprovider

import (
	"context"

	"github.com/duroxide-go/cdb/duroxide"
)

// latestExecution is the instance's current execution, or for history
// without an instance record the highest execution id stored (0 if
// none). Callers hold p.mu.
func (p *Provider) latestExecution(instance string) uint64 {
	if st := p.instances[instance]; st != nil {
		return st.currentExecution
	}
	var latest uint64
	for id := range p.history[instance] {
		latest = max(latest, id)
	}
	return latest
}

// Read implements duroxide.Provider. An unknown instance has an empty
// history.
func (p *Provider) Read(ctx context.Context, instance string) ([]duroxide.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, duroxide.Wrap("read", err)
	}
	if err := p.checkIDs("read", instance); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.readLocked("read", instance, p.latestExecution(instance))
}

// ReadWithExecution implements duroxide.Provider.
func (p *Provider) ReadWithExecution(ctx context.Context, instance string, executionID uint64) ([]duroxide.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, duroxide.Wrap("read_with_execution", err)
	}
	if err := p.checkIDs("read_with_execution", instance); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.readLocked("read_with_execution", instance, executionID)
}

// readLocked decodes one execution's history. Callers hold p.mu.
func (p *Provider) readLocked(op, instance string, executionID uint64) ([]duroxide.Event, error) {
	events, err := decodeHistory(p.history[instance][executionID])
	if err != nil {
		return nil, duroxide.Permanent(op, "%s execution %d: %v", instance, executionID, err)
	}
	return events, nil
}

// AppendWithExecution implements duroxide.Provider. Duplicate event ids
// (stored or within events) are rejected and nothing is written.
func (p *Provider) AppendWithExecution(ctx context.Context, instance string, executionID uint64, events []duroxide.Event) error {
	const op = "append_with_execution"
	if err := ctx.Err(); err != nil {
		return duroxide.Wrap(op, err)
	}
	if err := p.checkIDs(op, instance); err != nil {
		return err
	}
	if err := p.checkEvents(op, instance, events); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[uint64]bool{}
	for _, r := range p.history[instance][executionID] {
		seen[r.eventID] = true
	}
	for _, e := range events {
		if seen[e.EventID] {
			return duroxide.Kinded(duroxide.ErrDuplicateEvent, op, "duplicate event_id %d for %s execution %d", e.EventID, instance, executionID)
		}
		seen[e.EventID] = true
	}
	if len(events) > 0 {
		p.appendHistory(instance, executionID, events)
	}
	return nil
}

// CustomStatus implements duroxide.Provider.
func (p *Provider) CustomStatus(ctx context.Context, instance string, lastSeenVersion uint64) (*duroxide.CustomStatus, error) {
	if err := ctx.Err(); err != nil {
		return nil, duroxide.Wrap("get_custom_status", err)
	}
	if err := p.checkIDs("get_custom_status", instance); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.instances[instance]
	if st == nil || st.customStatusVersion <= lastSeenVersion {
		return nil, nil
	}
	cs := &duroxide.CustomStatus{Version: st.customStatusVersion}
	if st.customStatus != nil {
		cs.Status = ptr(*st.customStatus)
	}
	return cs, nil
}

// KVValue implements duroxide.Provider.
func (p *Provider) KVValue(ctx context.Context, instance, key string) (string, bool, error) {
	if err := ctx.Err(); err != nil {
		return "", false, duroxide.Wrap("get_kv_value", err)
	}
	if err := p.checkIDs("get_kv_value", instance); err != nil {
		return "", false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.instances[instance]
	if st == nil {
		return "", false, nil
	}
	if v, ok := st.kvDelta[key]; ok {
		if v == nil {
			return "", false, nil
		}
		return v.Value, true, nil
	}
	v, ok := st.kvStore[key]
	return v.Value, ok, nil
}

// KVValues implements duroxide.Provider.
func (p *Provider) KVValues(ctx context.Context, instance string) (map[string]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, duroxide.Wrap("get_kv_all_values", err)
	}
	if err := p.checkIDs("get_kv_all_values", instance); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]string{}
	if st := p.instances[instance]; st != nil {
		for key, v := range kvView(st) {
			out[key] = v.Value
		}
	}
	return out, nil
}

// corruptContent is what a corrupted history row holds instead of JSON.
const corruptContent = "NOT_VALID_JSON{{{"

// InstanceStats implements duroxide.Provider. Sizes are the JSON
// encoding of the events and the byte length of KV values.
func (p *Provider) InstanceStats(ctx context.Context, instance string) (*duroxide.SystemStats, error) {
	const op = "get_instance_stats"
	if err := ctx.Err(); err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	if err := p.checkIDs(op, instance); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.instances[instance]
	if st == nil {
		return nil, nil
	}
	stats := &duroxide.SystemStats{}
	for _, r := range p.history[instance][st.currentExecution] {
		stats.HistoryEventCount++
		if r.corrupt {
			stats.HistorySizeBytes += uint64(len(corruptContent))
			continue
		}
		b, err := r.event.MarshalJSON() // the stored size, without json.Marshal's HTML escapes
		if err != nil {
			return nil, duroxide.Permanent(op, "encode event %d: %v", r.eventID, err)
		}
		stats.HistorySizeBytes += uint64(len(b))
		if started, ok := r.event.Kind.(duroxide.OrchestrationStarted); ok && r.eventID == 1 {
			stats.QueuePendingCount = uint64(len(started.CarryForwardEvents))
		}
	}
	for _, v := range kvView(st) {
		stats.KVUserKeyCount++
		stats.KVTotalValueBytes += uint64(len(v.Value))
	}
	return stats, nil
}
