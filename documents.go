package cdb

import (
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/wirejson"
)

// Document types, the "type" discriminator of every document in the
// container (spec §2.2). All documents of an instance share its partition.
const (
	docInstance    = "instance"
	docHistory     = "history"
	docOrchQueue   = "orch_queue"
	docWorkerQueue = "worker_queue"
	docOutbox      = "outbox_intent"
	docSession     = "session"
	docKV          = "kv"
	docKVDelta     = "kv_delta"
	// docKVUndo holds, for one key a failed execution changed, the key's
	// value as of that execution's start (kvbaseline.go).
	docKVUndo = "kv_undo"
	// docReceived marks a cross-instance message the instance consumed, so
	// a late re-delivery of the same outbox intent is a 409, not a
	// duplicate message. It replaces the message document on ack.
	docReceived = "orch_received"
	// docExecution is the summary of an execution too old for the
	// instance document's list (execSummaryDoc).
	docExecution = "execution"
)

// instanceDoc is the per-instance document: metadata, the instance lock
// and custom status. Field names follow the Rust crate (camelCase).
type instanceDoc struct {
	ID                    string     `json:"id"`
	InstanceID            string     `json:"instanceId"`
	Type                  string     `json:"type"`
	OrchestrationName     string     `json:"orchestrationName"`
	OrchestrationVersion  string     `json:"orchestrationVersion"`
	CurrentExecutionID    uint64     `json:"currentExecutionId"`
	Status                string     `json:"status"`
	Output                *string    `json:"output"`
	ParentInstanceID      *string    `json:"parentInstanceId"`
	PinnedDuroxideVersion *semverDoc `json:"pinnedDuroxideVersion"`
	PinnedVersionPacked   *int64     `json:"pinnedVersionPacked"`
	CustomStatus          *string    `json:"customStatus"`
	CustomStatusVersion   uint64     `json:"customStatusVersion"`
	LockToken             *string    `json:"lockToken"`
	LockedUntil           *int64     `json:"lockedUntil"`
	CreatedAt             int64      `json:"createdAt"`
	UpdatedAt             int64      `json:"updatedAt"`
	// Executions summarises the latest executions, at most
	// maxExecSummaries; older summaries are execution documents
	// (execSummaryDoc), counted by ArchivedExecutions and ArchivedEvents.
	Executions []execEntry `json:"executions,omitempty"`
	// ExecutionCount and EventCount total all the summaries, so metrics
	// can project two numbers per instance instead of the whole list.
	ExecutionCount     int `json:"executionCount,omitempty"`
	EventCount         int `json:"eventCount,omitempty"`
	ArchivedExecutions int `json:"archivedExecutions,omitempty"`
	ArchivedEvents     int `json:"archivedEvents,omitempty"`
	// Provisional marks a document a fetch created only to hold the lock
	// of an instance that does not exist yet: an instance exists once an
	// ack has committed its metadata, never before. Readers treat a
	// provisional document as absent.
	Provisional bool `json:"provisional,omitempty"`
	// LastAckToken is the lock token of the last committed turn, so a
	// retried ack (whose first attempt committed but whose response was
	// lost) is recognised as done instead of failing as "lock lost".
	LastAckToken string `json:"lastAckToken,omitempty"`
	// ReceivedUntil is when the last orch_received marker a turn of the
	// instance created expires (ms): until then the instance may hold
	// markers that only the load query finds and removes, so the turn
	// cache defers to it (turncache.go).
	ReceivedUntil *int64 `json:"receivedUntil,omitempty"`
	// CompletedAt is when the current execution reached a terminal status
	// (ms), for bulk deletion's completed_before filter.
	CompletedAt *int64 `json:"completedAt,omitempty"`
	// Deleted is the deletion tombstone (ms): written first by a deletion,
	// it makes every reader treat the instance as gone, makes in-flight
	// acks fail (the ETag changed) and stops fetches from locking it,
	// while the instance's documents are removed in as many batches as
	// needed. A crash part-way is finished by the maintenance loop.
	Deleted *int64 `json:"deleted,omitempty"`
	// DeletedBy is the mark of the call that wrote the tombstone (a
	// UUID): with Deleted it tells one tombstone of an id from the next.
	DeletedBy string `json:"deletedBy,omitempty"`
	// Blocked is why the runtime holds the instance's turns back (its
	// code does not replay the history: BlockOrchestrationItem); the next
	// committed turn clears it.
	Blocked *string `json:"blocked,omitempty"`
	// Suspended holds the instance's turns back (Client.Suspend, through
	// OrchestrationCommit.Suspend) until a message that
	// duroxide.WakesSuspended arrives (suspend.go). Go-only.
	Suspended *suspendedDoc `json:"suspended,omitempty"`
	// Held names messages given back that must come before newer ones,
	// and when they are visible again (the writer's clock). An abandon
	// records the batch it gave back: a fetch that did not lock them all
	// gives the instance back, so that newer messages do not overtake them
	// (releases.go heldBack). A fetch that puts a suspended instance's
	// messages aside marks them (queueDoc.Aside) and sets Held, and the
	// fetch that wakes it locks the marked and the listed messages,
	// however far their visibleAt was moved (suspend.go). The next
	// committed turn clears it.
	Held *heldMessages `json:"held,omitempty"`
	// PendingTurn is set between the commit and the roll-forward of a turn
	// larger than one batch (large.go).
	PendingTurn *pendingTurn `json:"pendingTurn,omitempty"`
	ETag        string       `json:"_etag,omitempty"`
	// RID is the service's resource id of the document. Deleting an
	// instance deletes its document, and starting it again creates a new
	// one with a new RID, so it names the incarnation: a prune acts only on
	// the incarnation it read (prune.go). The service ignores it on writes.
	RID string `json:"_rid,omitempty"`
}

// maxExecSummaries bounds the execution summaries the instance document
// keeps, so an instance that continues as new for ever (a monitor) keeps a
// document of constant size: with one summary per execution it would pass
// Cosmos DB's 2 MB after about 19,000 executions, and every ack after that
// would be refused.
const maxExecSummaries = 32

// execSummaryDoc holds the summary of an execution the instance document
// no longer lists, in the instance's partition.
type execSummaryDoc struct {
	ID         string `json:"id"`
	InstanceID string `json:"instanceId"`
	Type       string `json:"type"`
	execEntry
}

// execEntry summarises one execution for ExecutionInfo and pruning.
type execEntry struct {
	ID          uint64 `json:"executionId"`
	Status      string `json:"status"`
	StartedAt   int64  `json:"startedAt"`
	CompletedAt *int64 `json:"completedAt,omitempty"`
	EventCount  int    `json:"eventCount"`
}

type semverDoc struct {
	Major uint64 `json:"major"`
	Minor uint64 `json:"minor"`
	Patch uint64 `json:"patch"`
}

func (d *instanceDoc) exists() bool { return d != nil && !d.Provisional && d.Deleted == nil }

func (d *instanceDoc) pinned() *duroxide.SemVer {
	if d.PinnedDuroxideVersion == nil {
		return nil
	}
	return &duroxide.SemVer{Major: d.PinnedDuroxideVersion.Major, Minor: d.PinnedDuroxideVersion.Minor, Patch: d.PinnedDuroxideVersion.Patch}
}

// sumExecutions refreshes ExecutionCount and EventCount.
func (d *instanceDoc) sumExecutions() {
	d.ExecutionCount, d.EventCount = len(d.Executions)+d.ArchivedExecutions, d.ArchivedEvents
	for _, e := range d.Executions {
		d.EventCount += e.EventCount
	}
}

// trimExecutions takes the oldest summaries beyond maxExecSummaries out of
// the list (the current execution, the newest, always stays) and returns
// them for the caller to store as execution documents in the same batch.
func (d *instanceDoc) trimExecutions() []execEntry {
	n := len(d.Executions) - maxExecSummaries
	if n <= 0 {
		return nil
	}
	out := append([]execEntry(nil), d.Executions[:n]...)
	d.Executions = append([]execEntry(nil), d.Executions[n:]...)
	for _, e := range out {
		d.ArchivedExecutions++
		d.ArchivedEvents += e.EventCount
	}
	d.sumExecutions()
	return out
}

func (d *instanceDoc) execution(id uint64) *execEntry {
	for i := range d.Executions {
		if d.Executions[i].ID == id {
			return &d.Executions[i]
		}
	}
	return nil
}

// historyDoc holds one event; eventData is the Rust-compatible JSON of the
// event, the only authoritative copy (eventId is a number, so above 2^53
// Cosmos rounds it; it is used for ordering only).
type historyDoc struct {
	ID          string `json:"id"`
	InstanceID  string `json:"instanceId"`
	Type        string `json:"type"`
	ExecutionID uint64 `json:"executionId"`
	EventID     uint64 `json:"eventId"`
	EventData   string `json:"eventData"`
	// Staged is set while the event belongs to a large turn that is not
	// rolled forward yet (large.go).
	Staged *string `json:"staged,omitempty"`
}

// queueDoc is an orchestrator or worker queue message.
type queueDoc struct {
	ID           string  `json:"id"`
	InstanceID   string  `json:"instanceId"`
	Type         string  `json:"type"`
	WorkItem     string  `json:"workItem"`
	DispatchSlot uint8   `json:"dispatchSlot"`
	VisibleAt    int64   `json:"visibleAt"`
	EnqueuedAt   int64   `json:"enqueuedAt"`
	LockToken    *string `json:"lockToken"`
	LockedUntil  *int64  `json:"lockedUntil"`
	AttemptCount uint32  `json:"attemptCount"`
	// EnqueueOrder breaks ties between messages enqueued in the same
	// millisecond: microseconds since the epoch, strictly increasing per
	// process. Documents written by the Rust crate lack it; they order by
	// enqueuedAt.
	EnqueueOrder int64 `json:"enqueueOrder,omitempty"`
	// Worker queue only.
	ExecutionID *uint64 `json:"executionId,omitempty"`
	ActivityID  *uint64 `json:"activityId,omitempty"`
	SessionID   *string `json:"sessionId,omitempty"`
	Tag         *string `json:"tag,omitempty"`
	// OutboxKey is set on messages delivered through the outbox.
	OutboxKey string  `json:"outboxKey,omitempty"`
	Staged    *string `json:"staged,omitempty"`
	// TraceParent is the W3C trace context of the span that enqueued the
	// message (telemetry.go). Provider-side only: the work item JSON is
	// untouched and readers that do not know the field ignore it.
	TraceParent string `json:"traceparent,omitempty"`
	// Aside marks a message a suspended instance's fetch put aside: the
	// wake locks every one so marked (suspend.go).
	Aside bool `json:"aside,omitempty"`
	// Heartbeat is a worker message's last heartbeat, set by the lock
	// renewal that carried it (heartbeat.go) and kept until the item is
	// acked, so the next attempt can resume from it. Go-only.
	Heartbeat *heartbeatDoc `json:"heartbeat,omitempty"`
	ETag      string        `json:"_etag,omitempty"`
}

// heartbeatDoc is an activity's heartbeat as a worker message stores it.
type heartbeatDoc struct {
	Details string `json:"details"`
	At      int64  `json:"at"`
}

func (q *queueDoc) order() int64 {
	if q.EnqueueOrder != 0 {
		return q.EnqueueOrder
	}
	return q.EnqueuedAt * 1000
}

func (q *queueDoc) etag() *azcore.ETag {
	if q.ETag == "" {
		return nil
	}
	e := azcore.ETag(q.ETag)
	return &e
}

// outboxDoc is an intent to create a message in another instance's
// partition, written in the same batch as the turn that produced it.
type outboxDoc struct {
	ID               string `json:"id"`
	InstanceID       string `json:"instanceId"`
	Type             string `json:"type"`
	TargetInstanceID string `json:"targetInstanceId"`
	TargetDocType    string `json:"targetDocumentType"`
	Payload          string `json:"payload"`
	IdempotencyKey   string `json:"idempotencyKey"`
	Status           string `json:"status"`
	CreatedAt        int64  `json:"createdAt"`
	AttemptCount     int    `json:"attemptCount"`
	LastAttemptAt    *int64 `json:"lastAttemptAt"`
	ETag             string `json:"_etag,omitempty"`
}

var lastOrder atomic.Int64

// nextOrder returns a strictly increasing microsecond timestamp.
func nextOrder(now time.Time) int64 {
	us := now.UnixMicro()
	for {
		last := lastOrder.Load()
		v := us
		if v <= last {
			v = last + 1
		}
		if lastOrder.CompareAndSwap(last, v) {
			return v
		}
	}
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func ptr[T any](v T) *T { return &v }

func mustJSON(v any) []byte {
	b, err := wirejson.Marshal(v) // no HTML escaping: payloads keep their size
	if err != nil {
		panic("cdb: marshal document: " + err.Error())
	}
	return b
}

// jsonNull writes an explicit null in a patch: azcosmos drops a nil value
// (omitempty), which the service refuses ("required property 'value'").
var jsonNull = json.RawMessage("null")

func variantOf(w duroxide.WorkItem) string {
	if w == nil {
		return "nil"
	}
	return w.Variant()
}

// heldMessages is instanceDoc.Held.
type heldMessages struct {
	Until int64    `json:"until"`
	IDs   []string `json:"ids"`
}

// pendingTurn is recorded on the instance document between commit and
// roll-forward.
type pendingTurn struct {
	Turn    string `json:"turn"`
	Journal int    `json:"journal"`
	// At is when the turn committed (ms), so the background maintenance
	// loop leaves a turn its acker is still rolling forward alone.
	At int64 `json:"at,omitempty"`
}
