package cdb

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Activity heartbeats. The details ride on the lock renewal: the patch
// that moves the work item's lockedUntil also sets its heartbeat field,
// so a heartbeat costs no request of its own (only the patch's larger
// body). Abandons and lock expiries leave the field alone, so the item's
// next fetch, whose lock patch returns the whole document, hands them
// to the next attempt; the ack deletes them with the item.

var _ duroxide.HeartbeatRecorder = (*Provider)(nil)

// RenewWorkItemLockWithDetails implements duroxide.HeartbeatRecorder.
func (p *Provider) RenewWorkItemLockWithDetails(ctx context.Context, lockToken string, extendFor time.Duration, details string) error {
	return p.renewWorkItemLock(ctx, "renew_work_item_lock_with_details", lockToken, extendFor, &details)
}

// lockedHeartbeat is the heartbeat a fetched work item carries.
func lockedHeartbeat(doc *queueDoc) *duroxide.Heartbeat {
	if doc.Heartbeat == nil {
		return nil
	}
	return &duroxide.Heartbeat{Details: doc.Heartbeat.Details, AtMs: doc.Heartbeat.At}
}

var _ duroxide.HeartbeatReader = (*Provider)(nil)

// ActivityHeartbeats implements duroxide.HeartbeatReader: one query in
// the instance's partition, of the worker messages that have a heartbeat.
func (p *Provider) ActivityHeartbeats(ctx context.Context, inst string) ([]duroxide.ActivityHeartbeat, error) {
	const op = "activity_heartbeats"
	if err := validateInstanceID(op, inst); err != nil {
		return nil, err
	}
	q := "SELECT c.workItem, c.heartbeat FROM c WHERE c.type = @type AND IS_DEFINED(c.heartbeat) AND NOT IS_NULL(c.heartbeat)"
	var out []duroxide.ActivityHeartbeat
	_, err := p.st.Query(ctx, q, cosmos.QueryParams{}.Add("@type", docWorkerQueue), cosmos.QueryOptions{Partition: &inst}, func(b []byte) bool {
		var d queueDoc
		if json.Unmarshal(b, &d) != nil || d.Heartbeat == nil {
			return true
		}
		w, err := duroxide.UnmarshalWorkItem([]byte(d.WorkItem))
		if a, ok := w.(duroxide.ActivityExecuteItem); err == nil && ok {
			out = append(out, duroxide.ActivityHeartbeat{ExecutionID: a.ExecutionID, ActivityID: a.ID, Name: a.Name, Heartbeat: *lockedHeartbeat(&d)})
		}
		return true
	})
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	slices.SortFunc(out, func(a, b duroxide.ActivityHeartbeat) int {
		return cmp.Or(cmp.Compare(a.ExecutionID, b.ExecutionID), cmp.Compare(a.ActivityID, b.ActivityID))
	})
	return out, nil
}
