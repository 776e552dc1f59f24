package cdb

import (
	"context"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
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
