package duroxide

import (
	"context"
	"time"
)

// MaxHeartbeatDetailsBytes bounds an activity's heartbeat details as
// stored (their JSON-encoded length). A heartbeat rides on every lock
// renewal, so details are meant to be a resume point (an offset, a page
// token), not a payload; larger details are refused with ErrTooLarge.
const MaxHeartbeatDetailsBytes = 64 * 1024

// HeartbeatRecorder is an optional Provider capability: the renewal of
// an activity's lock also records the activity's latest heartbeat
// details on its work item, in the same write, and a later fetch of that
// item (after an abandon, a lock expiry or a crash) returns them in
// LockedWorkItem.Heartbeat. A runtime detects it by type assertion;
// without it heartbeats still renew the lock, and the details live only
// as long as the attempt that recorded them. Go-only.
//
// A provider that wraps another must forward it or leave it out; a
// wrapper that forwards it must apply to it what it applies to
// RenewWorkItemLock.
type HeartbeatRecorder interface {
	// RenewWorkItemLockWithDetails extends the lock exactly as
	// RenewWorkItemLock does (same errors, same effect) and records
	// details as the item's heartbeat, replacing the last one, with the
	// store's time. Details over MaxHeartbeatDetailsBytes, or that would
	// make the item larger than the store holds, are refused with a
	// permanent error matching ErrTooLarge, and the lock is not renewed.
	RenewWorkItemLockWithDetails(ctx context.Context, lockToken string, extendFor time.Duration, details string) error
}

// Heartbeat is the last heartbeat an activity's work item recorded.
type Heartbeat struct {
	// Details are the activity's details, encoded by the runtime.
	Details string
	// AtMs is when the store recorded them (milliseconds since the epoch).
	AtMs int64
}

// HeartbeatReader is an optional Provider capability for operator
// tools: the heartbeats recorded on an instance's outstanding activities
// (HeartbeatRecorder). Go-only.
type HeartbeatReader interface {
	// ActivityHeartbeats returns the heartbeats of instance's worker
	// items that have one, by execution and activity id; none for an
	// unknown instance.
	ActivityHeartbeats(ctx context.Context, instance string) ([]ActivityHeartbeat, error)
}

// ActivityHeartbeat is the last heartbeat of one outstanding activity.
type ActivityHeartbeat struct {
	ExecutionID uint64
	ActivityID  uint64 // the ActivityScheduled event id
	Name        string // the activity's name
	Heartbeat
}
