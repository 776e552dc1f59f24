package duroxide

import (
	"context"
	"time"
)

// Provider is the storage contract the duroxide runtime drives. It mirrors
// Rust duroxide's Provider trait: an append-only history per instance, an
// orchestrator queue and a worker queue with peek-lock semantics, atomic
// commit of each orchestration turn, sessions, KV state and custom status.
//
// Every method takes a context first. "Nothing available" is reported as a
// nil result and a nil error. Errors are *ProviderError values (possibly
// wrapped); use IsRetryable or errors.Is(err, ErrPermanent) to classify them.
// A method that returns an error holds no lock on the caller's behalf.
type Provider interface {
	// Name identifies the provider implementation (e.g. "cosmosdb").
	Name() string
	// Version is the provider implementation's version.
	Version() string

	// FetchOrchestrationItem locks the oldest visible orchestrator message's
	// instance that is unlocked and compatible with filter (nil = any),
	// together with all of that instance's visible messages, and returns
	// them with the current execution's history and the KV snapshot.
	// pollTimeout may be ignored by short-polling providers.
	FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *DispatcherCapabilityFilter) (*OrchestrationItem, error)
	// AckOrchestrationItem atomically commits one orchestration turn and
	// releases the lock. An invalid or expired token is a permanent error
	// and leaves the lock in place.
	AckOrchestrationItem(ctx context.Context, lockToken string, commit OrchestrationCommit) error
	// AbandonOrchestrationItem releases the lock; the messages become
	// visible after delay. ignoreAttempt undoes the fetch's attempt
	// increment (never below zero).
	AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error
	// RenewOrchestrationItemLock extends a live lock to now+extendFor.
	RenewOrchestrationItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error
	// BlockOrchestrationItem releases the lock as AbandonOrchestrationItem
	// with ignoreAttempt does (the fetch does not count towards poison)
	// and records reason on the instance: the runtime holds its turns
	// back because the code does not replay its history. The instance's
	// next committed turn clears it. Not in duroxide's trait: a Go
	// addition for the runtime's NondeterminismBlock policy.
	BlockOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, reason string) error
	// BlockedReason returns the reason BlockOrchestrationItem recorded,
	// "" when the instance is not blocked or does not exist.
	BlockedReason(ctx context.Context, instance string) (string, error)

	// Read returns the latest execution's history ordered by event id.
	// It fails if any event cannot be decoded.
	Read(ctx context.Context, instance string) ([]Event, error)
	// ReadWithExecution returns one execution's history.
	ReadWithExecution(ctx context.Context, instance string, executionID uint64) ([]Event, error)
	// AppendWithExecution appends events outside a turn (tests and fault
	// injection). Duplicate event ids are rejected, never overwritten.
	AppendWithExecution(ctx context.Context, instance string, executionID uint64, events []Event) error

	// EnqueueForOrchestrator enqueues item, visible after delay. It does not
	// create the instance and ignores TimerFired.FireAtMs.
	EnqueueForOrchestrator(ctx context.Context, item WorkItem, delay time.Duration) error
	// EnqueueForWorker enqueues an activity, visible immediately.
	EnqueueForWorker(ctx context.Context, item WorkItem) error

	// FetchWorkItem locks the oldest visible worker item matching tags.
	// With session == nil only items without a session are returned.
	FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *SessionFetchConfig, tags TagFilter) (*LockedWorkItem, error)
	// AckWorkItem deletes the item and enqueues completion (nil = the
	// activity was cancelled; enqueue nothing), atomically. A missing item
	// or an expired lock is a permanent error.
	AckWorkItem(ctx context.Context, lockToken string, completion WorkItem) error
	// AbandonWorkItem unlocks the item; it becomes visible after delay.
	AbandonWorkItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error
	// RenewWorkItemLock extends a live item lock. It fails permanently when
	// the item was deleted (the activity's cancellation signal) or acked.
	RenewWorkItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error

	// RenewSessionLock extends every session owned by one of ownerIDs that
	// is still locked and not idle for idleTimeout; it returns the count.
	RenewSessionLock(ctx context.Context, ownerIDs []string, extendFor, idleTimeout time.Duration) (int, error)
	// CleanupOrphanedSessions deletes expired sessions with no pending items.
	CleanupOrphanedSessions(ctx context.Context, idleTimeout time.Duration) (int, error)

	// CustomStatus returns the custom status if its version is newer
	// than lastSeenVersion, else nil (also nil for an unknown instance).
	// The Get prefixes of Rust's names (get_custom_status, get_kv_value,
	// get_kv_all_values, get_instance_stats) are dropped here and in
	// ProviderAdmin, as Go names getters.
	CustomStatus(ctx context.Context, instance string, lastSeenVersion uint64) (*CustomStatus, error)
	// KVValue reads one key of the merged KV view.
	KVValue(ctx context.Context, instance, key string) (value string, found bool, err error)
	// KVValues reads the merged KV view.
	KVValues(ctx context.Context, instance string) (map[string]string, error)
	// InstanceStats returns stats for the instance, nil if unknown.
	InstanceStats(ctx context.Context, instance string) (*InstanceStats, error)

	// Admin returns the management capability, or nil if unsupported.
	Admin() ProviderAdmin
}

// OrchestrationItem is a locked batch of orchestrator messages for one
// instance, with the current execution's history.
type OrchestrationItem struct {
	Instance          string
	OrchestrationName string
	// ExecutionID is the instance's current execution, not the message's.
	ExecutionID uint64
	Version     string
	History     []Event
	Messages    []WorkItem
	// HistoryError is set (and History empty) when stored history could not
	// be decoded; the item is still locked and must be acked or abandoned.
	HistoryError *string
	// KVSnapshot holds the KV store as of the previous execution; the
	// current execution's changes are not included.
	KVSnapshot map[string]KVEntry
	// KVBaseline is, when the current execution ended Failed, the KV as
	// of that execution's start: the snapshot its own turns saw (nil
	// otherwise). A rewind replays the failed execution's prefix in the
	// next one, so it must replay against this, not against the KV the
	// failed execution left. The provider keeps it until that execution
	// is no longer the current one (a rewind's RestoreKV restores it; a
	// restart, a later execution or a delete drops it). Go-only: duroxide
	// has no rewind. The validation suite requires it (providertest's
	// kv_baseline module); the runtime tolerates a provider that leaves it
	// nil, whose rewinds replay against the KV the failed execution left,
	// so a prefix that read keys the execution later changed (updates
	// among them: their records are KV keys) fails the rewound execution
	// as nondeterministic.
	KVBaseline map[string]KVEntry

	// LockToken identifies the lock for ack, abandon and renew.
	LockToken string
	// AttemptCount is the maximum attempt count across Messages.
	AttemptCount uint32
	// TraceParent is the W3C traceparent stored with the batch's first
	// traced message ("" when none was traced or the provider does not
	// store trace context); the runtime parents the turn's span on it.
	TraceParent string
	// NoMoreReady is set by a provider whose fetch saw no other instance
	// ready for this dispatcher, so the runtime need not fetch again until
	// something is enqueued or its poll interval passes. False means
	// unknown: the runtime fetches again after the turn.
	NoMoreReady bool
}

// LockedWorkItem is a worker item with its lock.
type LockedWorkItem struct {
	Item         WorkItem
	LockToken    string
	AttemptCount uint32
	// TraceParent is the W3C traceparent stored with the item ("" when
	// none); the runtime parents the activity's span on it.
	TraceParent string
	// Heartbeat is the last heartbeat an earlier attempt recorded on the
	// item (HeartbeatRecorder); nil when none did or the provider does
	// not record them.
	Heartbeat *Heartbeat
	// EnqueuedAt is when the item was enqueued, by its enqueuer's clock
	// (zero when the provider does not say). Go-only: a runtime gives a
	// freed slot to the item enqueued first, whether it was fetched or
	// handed to it by an ack (WorkHandOff).
	EnqueuedAt time.Time
}

// OrchestrationCommit is everything one orchestration turn commits.
//
// A commit that Drains (no history, metadata, items, cancellations or
// suspension change) for an instance whose current execution has ended
// is the runtime draining messages that came too late (a timer that lost
// a Select, an event sent after the end): the provider removes the
// consumed messages and releases the lock, but leaves the instance's
// updatedAt alone, so that an ended instance's UpdatedAt stays its
// completion time. Go-only: duroxide's providers stamp every ack.
type OrchestrationCommit struct {
	ExecutionID  uint64
	HistoryDelta []Event
	WorkerItems  []WorkItem
	// OrchestratorItems are enqueued on the orchestrator queue. One for
	// the committing instance that is one of the fetched messages (the
	// same encoded work item; each fetched message matches once) is that
	// message handed back to a later turn: it keeps its place in the
	// instance's queue, ahead of messages that arrived after it, so a
	// turn that leaves messages to the next (the Go runtime does so
	// after a rewind request) never reorders a FIFO queue. Go-only:
	// duroxide's runtime hands nothing back.
	OrchestratorItems   []WorkItem
	Metadata            ExecutionMetadata
	CancelledActivities []ScheduledActivityIdentifier
	// Suspend changes whether the instance is suspended; nil keeps it.
	// Not in duroxide's trait: a Go addition for Client.Suspend (see
	// SuspendInstanceItem and SuspensionReader).
	Suspend *SuspendChange
	// RestoreKV marks the commit that starts the execution rewinding the
	// failed current one: the provider first drops the failed
	// execution's KV changes (the KV becomes the item's KVBaseline, which
	// is also the new execution's KVSnapshot) and then applies
	// HistoryDelta's KV events as usual. The runtime sets it only for an
	// item that had a KVBaseline; a provider without a baseline of the
	// execution ExecutionID-1 ignores it. Go-only, as KVBaseline.
	RestoreKV bool
}

// Drains reports whether c writes nothing but the removal of the consumed
// messages: no history, metadata, items, cancelled activities or
// suspension change.
func (c *OrchestrationCommit) Drains() bool {
	return len(c.HistoryDelta) == 0 && len(c.WorkerItems) == 0 && len(c.OrchestratorItems) == 0 &&
		c.Metadata == (ExecutionMetadata{}) && len(c.CancelledActivities) == 0 && c.Suspend == nil && !c.RestoreKV
}

// SuspendChange is a turn's change to its instance's suspension. While
// an instance is suspended the provider's FetchOrchestrationItem skips
// it unless a visible message of the instance WakesSuspended; such a
// fetch returns, with it, every message the instance holds (timers that
// fired and messages that arrived while it was suspended), oldest first.
// A commit that ends the execution (Metadata.Status Completed, Failed or
// ContinuedAsNew) clears the suspension whatever its Suspend says: a
// suspension holds a running execution, and what follows the end (a
// rewind, re-drive or restart, the next execution) must not be held
// back. A poison failure of a woken turn, which changes nothing else,
// relies on this.
type SuspendChange struct {
	Suspended bool
	Reason    string // why it was suspended; kept until resumed
}

// SuspensionReader is the optional Provider capability that tells
// whether an instance is suspended: a provider has it when it honours
// OrchestrationCommit.Suspend. Go-only.
type SuspensionReader interface {
	// Suspension reports whether instance is suspended and the reason
	// given; false for an unknown instance.
	Suspension(ctx context.Context, instance string) (suspended bool, reason string, err error)
}

// Execution statuses as stored and reported by providers.
const (
	StatusRunning        = "Running"
	StatusCompleted      = "Completed"
	StatusFailed         = "Failed"
	StatusContinuedAsNew = "ContinuedAsNew"
)

// ExecutionMetadata is what the runtime tells the provider about the
// execution in an ack; providers never derive it from events. Nil fields
// keep the stored value.
type ExecutionMetadata struct {
	Status                *string
	Output                *string
	OrchestrationName     *string
	OrchestrationVersion  *string
	ParentInstanceID      *string
	PinnedDuroxideVersion *SemVer
}

// ScheduledActivityIdentifier names an activity to remove from the worker
// queue (it was cancelled).
type ScheduledActivityIdentifier struct {
	Instance    string
	ExecutionID uint64
	ActivityID  uint64
}

// KVEntry is one key's value in a KV snapshot.
type KVEntry struct {
	Value           string
	LastUpdatedAtMs uint64
}

// CustomStatus is a custom status value with its version.
type CustomStatus struct {
	Status  *string // nil when cleared
	Version uint64
}

// SessionFetchConfig enables session-affine fetching for one owner.
type SessionFetchConfig struct {
	OwnerID     string
	LockTimeout time.Duration
}

// InstanceStats describes one instance's current execution (Rust's
// SystemStats, returned by get_orchestration_stats).
type InstanceStats struct {
	HistoryEventCount uint64 `json:"history_event_count"`
	HistorySizeBytes  uint64 `json:"history_size_bytes"`
	QueuePendingCount uint64 `json:"queue_pending_count"`
	KVUserKeyCount    uint64 `json:"kv_user_key_count"`
	KVTotalValueBytes uint64 `json:"kv_total_value_bytes"`
}
