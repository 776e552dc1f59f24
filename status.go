package cdb

import (
	"context"
	"encoding/json"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// CustomStatus implements duroxide.Provider: one point read.
func (p *Provider) CustomStatus(ctx context.Context, instance string, lastSeenVersion uint64) (*duroxide.CustomStatus, error) {
	const op = "get_custom_status"
	if err := validateInstanceID(op, instance); err != nil {
		return nil, err
	}
	doc, _, err := p.readInstance(ctx, instance)
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	if !doc.exists() || doc.CustomStatusVersion <= lastSeenVersion {
		return nil, nil
	}
	return &duroxide.CustomStatus{Status: doc.CustomStatus, Version: doc.CustomStatusVersion}, nil
}

var _ duroxide.StatusReader = (*Provider)(nil)

// ReadStatus implements duroxide.StatusReader: Read's point read and
// history query, with the custom status and blocked reason taken from
// the instance document the history was read at, which CustomStatus
// and BlockedReason would each read again. Only a history found without
// an instance document (a first turn committed between the read and the
// query) costs a second read.
func (p *Provider) ReadStatus(ctx context.Context, instance string) (*duroxide.InstanceStatus, error) {
	const op = "read_status"
	if err := validateInstanceID(op, instance); err != nil {
		return nil, err
	}
	events, doc, err := p.readCurrent(ctx, op, instance)
	if err != nil {
		return nil, err
	}
	st := &duroxide.InstanceStatus{History: events}
	if !doc.exists() && len(events) > 0 {
		// The history was queried without an instance document: it may
		// hold the first turn, committed after the read. The document
		// that turn wrote holds its custom status.
		if doc, _, err = p.readInstance(ctx, instance); err != nil {
			return nil, duroxide.Wrap(op, err)
		}
	}
	if !doc.exists() {
		return st, nil
	}
	if doc.CustomStatusVersion > 0 {
		st.CustomStatus = &duroxide.CustomStatus{Status: doc.CustomStatus, Version: doc.CustomStatusVersion}
	}
	if doc.Blocked != nil {
		st.BlockedReason = *doc.Blocked
	}
	if doc.Suspended != nil {
		st.Suspended, st.SuspendedReason = true, doc.Suspended.Reason
	}
	return st, nil
}

// BlockedReason implements duroxide.Provider (a point read of the
// instance document).
func (p *Provider) BlockedReason(ctx context.Context, instance string) (string, error) {
	const op = "blocked_reason"
	if err := validateInstanceID(op, instance); err != nil {
		return "", err
	}
	doc, _, err := p.readInstance(ctx, instance)
	if err != nil {
		return "", duroxide.Wrap(op, err)
	}
	if !doc.exists() || doc.Blocked == nil {
		return "", nil
	}
	return *doc.Blocked, nil
}

// InstanceStats implements duroxide.Provider: the current execution's
// history (count and serialized bytes), the merged KV view (keys and value
// bytes, tombstones excluded) and the carry-forward count of the current
// execution's first event.
func (p *Provider) InstanceStats(ctx context.Context, instance string) (*duroxide.InstanceStats, error) {
	const op = "get_instance_stats"
	if err := validateInstanceID(op, instance); err != nil {
		return nil, err
	}
	doc, _, err := p.readInstance(ctx, instance)
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	if !doc.exists() {
		return nil, nil
	}
	stats := &duroxide.InstanceStats{}
	exec := doc.CurrentExecutionID
	q := "SELECT * FROM c WHERE (c.type = 'history' AND c.executionId = @exec) OR c.type = 'kv' OR c.type = 'kv_delta'"
	store, delta := map[string]kvDoc{}, map[string]kvDoc{}
	_, err = p.st.Query(ctx, q, cosmos.QueryParams{}.Add("@exec", exec), cosmos.QueryOptions{Partition: &instance, PageSize: -1}, func(raw []byte) bool {
		var head struct {
			Type      string  `json:"type"`
			EventID   uint64  `json:"eventId"`
			EventData string  `json:"eventData"`
			Staged    *string `json:"staged"`
		}
		if json.Unmarshal(raw, &head) != nil || !visible(head.Staged, doc.PendingTurn) {
			return true
		}
		switch head.Type {
		case docHistory:
			stats.HistoryEventCount++
			stats.HistorySizeBytes += uint64(len(head.EventData))
			if head.EventID == 1 {
				if ev, err := duroxide.UnmarshalEvent([]byte(head.EventData)); err == nil {
					if s, ok := ev.Kind.(duroxide.OrchestrationStarted); ok {
						stats.QueuePendingCount = uint64(len(s.CarryForwardEvents))
					}
				}
			}
		case docKV, docKVDelta:
			var d kvDoc
			if json.Unmarshal(raw, &d) == nil {
				if d.Type == docKV {
					store[d.Key] = d
				} else {
					delta[d.Key] = d
				}
			}
		}
		return true
	})
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	for k, d := range delta {
		store[k] = d
	}
	for _, d := range store {
		if !d.Tombstone {
			stats.KVUserKeyCount++
			stats.KVTotalValueBytes += uint64(len(d.Value))
		}
	}
	return stats, nil
}
