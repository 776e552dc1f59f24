// Package memprovider is an in-memory duroxide.Provider: the Go
// counterpart of duroxide's SQLite reference provider. It exists to prove
// the provider validation suite (duroxide/providertest) against a second,
// independent implementation, and to back the Go runtime's unit tests.
//
// Start with [New] and its options, [WithRelaxedLimits] and [WithClock]
// among them.
//
// All state lives in maps and slices guarded by one mutex, so every
// method is trivially atomic. History is stored as the events themselves;
// CorruptHistory marks stored events as undecodable so the corrupted
// history paths of the contract can be tested.
//
// By default it refuses the input the Cosmos DB provider refuses (ids it
// cannot store, documents over 2 MiB), with the same errors, so that unit
// tests meet those refusals before production does; WithRelaxedLimits
// turns that off.
//
// WithClock gives it a clock of your own; WorkState reports the work ready,
// in flight and next due at that clock's now, which durable/testenv reads
// to run orchestrations on a virtual clock.
package memprovider

import (
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/enqueuenotify"
)

// Provider is an in-memory duroxide.Provider. The zero value is not
// usable; call New.
type Provider struct {
	// mu guards every field below it. Admin methods take it too.
	mu sync.Mutex

	clock func() time.Time
	// enqueues are this provider's duroxide.EnqueueNotifier subscribers
	// (notify.go); they have their own lock.
	enqueues enqueuenotify.Subscribers
	// ends are the duroxide.InstanceEndNotifier subscribers (notify.go);
	// they have their own lock.
	ends        enqueuenotify.Ends
	longPolling bool
	// relaxedLimits turns the store limits off (limits.go).
	relaxedLimits bool
	// wake is closed (and replaced) whenever work may have become
	// available; long-polling fetches wait on it.
	wake chan struct{}

	// instances holds every instance record, keyed by instance id. An
	// instance is created by the first successful ack for it, never by an
	// enqueue.
	instances map[string]*instanceState
	// history holds stored events per instance and execution id, sorted
	// by event id. It is independent of instances: AppendWithExecution can
	// write history for an instance that has no record.
	history map[string]map[uint64][]storedEvent
	// orchQueue is the orchestrator queue in enqueue order (seq ascending).
	orchQueue []*orchMessage
	// workQueue is the worker queue in enqueue order (seq ascending).
	workQueue []*workMessage
	// instanceLocks holds the lock of each instance that has been fetched
	// and not yet acked or abandoned (it may have expired).
	instanceLocks map[string]*instanceLock
	// sessions holds worker session ownership, keyed by session id.
	sessions map[string]*sessionState
	// seq numbers queue messages in enqueue order.
	seq uint64

	edge edgeState // clientwrites.go
}

// instanceState is one instance record.
type instanceState struct {
	id               string
	name             string
	version          string
	currentExecution uint64
	// parent is the parent instance id of a sub-orchestration, nil for a
	// root (ExecutionMetadata.ParentInstanceID).
	parent    *string
	createdAt time.Time
	updatedAt time.Time
	// executions holds every execution of the instance by id.
	executions map[uint64]*executionState

	customStatus        *string
	customStatusVersion uint64
	// blocked is the reason the runtime holds the instance's turns back
	// (BlockOrchestrationItem), "" when it does not; an ack clears it.
	blocked string
	// suspended holds the instance's turns back until a message that
	// WakesSuspended arrives (OrchestrationCommit.Suspend); nil when it
	// is not suspended.
	suspended *duroxide.SuspendChange

	// kvStore is the KV state as of the last terminal ack (Completed,
	// Failed or ContinuedAsNew): what fetches return as the snapshot.
	kvStore map[string]duroxide.KVEntry
	// kvDelta holds the current execution's changes; a nil value is a
	// tombstone. Reads see kvStore overridden by kvDelta.
	kvDelta map[string]*duroxide.KVEntry
	// kvBaseline is the KV as of the start of execution kvBaselineOf,
	// kept when that execution's Failed ack merged its changes: a rewind
	// of it restores it (OrchestrationCommit.RestoreKV).
	kvBaseline   map[string]duroxide.KVEntry
	kvBaselineOf uint64
}

// status is the status of the instance's current execution.
func (s *instanceState) status() string {
	if ex := s.executions[s.currentExecution]; ex != nil {
		return ex.status
	}
	return duroxide.StatusRunning
}

// executionState is one execution of an instance.
type executionState struct {
	id          uint64
	status      string // duroxide.StatusRunning, StatusCompleted, ...
	output      *string
	startedAt   time.Time
	completedAt *time.Time // set when an ack gives a non-Running status
	pinned      *duroxide.SemVer
}

// storedEvent is one history row.
type storedEvent struct {
	eventID uint64
	event   duroxide.Event
	// corrupt marks a row whose content was overwritten by CorruptHistory;
	// reading it fails as a decode error would.
	corrupt bool
}

// orchMessage is one orchestrator-queue message.
type orchMessage struct {
	seq         uint64
	instance    string
	item        duroxide.WorkItem
	visibleAt   time.Time
	lockToken   string // "" when unlocked
	lockedUntil time.Time
	attempts    uint32
	// held marks a message an abandon put back with a delay: until it is
	// visible again its instance's newer messages wait for it.
	held bool
}

// workMessage is one worker-queue message.
type workMessage struct {
	seq         uint64
	enqueuedAt  time.Time
	item        duroxide.ActivityExecuteItem
	visibleAt   time.Time
	lockToken   string // "" when unlocked
	lockedUntil time.Time
	attempts    uint32
	heartbeat   *duroxide.Heartbeat // the last recorded; kept across abandons and lock expiries
}

// instanceLock is an instance's orchestration lock.
type instanceLock struct {
	token       string
	lockedUntil time.Time
}

// sessionState is a worker session's ownership.
type sessionState struct {
	id           string
	owner        string
	lockedUntil  time.Time
	lastActivity time.Time
}

// lockedAt reports whether a message lock is live at now.
func lockedAt(token string, until, now time.Time) bool {
	return token != "" && until.After(now)
}

// Option configures a Provider.
type Option func(*Provider)

// WithClock makes the provider read time from now instead of time.Now.
func WithClock(now func() time.Time) Option {
	return func(p *Provider) { p.clock = now }
}

// WithLongPolling makes fetches with a positive poll timeout wait (up to
// that timeout) for work to arrive, instead of returning at once.
func WithLongPolling() Option {
	return func(p *Provider) { p.longPolling = true }
}

// New returns an empty provider. It refuses what the Cosmos DB provider
// refuses (see WithRelaxedLimits).
func New(opts ...Option) *Provider {
	p := &Provider{
		clock:         time.Now,
		wake:          make(chan struct{}),
		instances:     map[string]*instanceState{},
		history:       map[string]map[uint64][]storedEvent{},
		instanceLocks: map[string]*instanceLock{},
		sessions:      map[string]*sessionState{},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

var _ duroxide.Provider = (*Provider)(nil)

// Name implements duroxide.Provider.
func (p *Provider) Name() string { return "memory" }

// Version implements duroxide.Provider.
func (p *Provider) Version() string { return "0.1.0" }

// Admin implements duroxide.Provider.
func (p *Provider) Admin() duroxide.ProviderAdmin { return &admin{p: p} }

// SupportsLongPolling reports whether the provider was built with
// WithLongPolling.
func (p *Provider) SupportsLongPolling() bool { return p.longPolling }

// now reads the clock. Callers hold p.mu.
func (p *Provider) now() time.Time { return p.clock() }

// nextSeq returns the next queue sequence number. Callers hold p.mu.
func (p *Provider) nextSeq() uint64 {
	p.seq++
	return p.seq
}

// notify wakes long-polling fetches. Callers hold p.mu.
func (p *Provider) notify() {
	close(p.wake)
	p.wake = make(chan struct{})
}

func newToken() string { return uuid.NewString() }

// CorruptHistory overwrites every stored history event of instance (all
// executions) with undecodable content: Read and ReadWithExecution then
// fail, and fetches return the item with HistoryError set. Events
// appended afterwards are stored normally. It is the hook behind
// providertest.Factory.CorruptInstanceHistory.
func (p *Provider) CorruptHistory(instance string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, events := range p.history[instance] {
		for i := range events {
			events[i].corrupt = true
		}
	}
}

// MaxAttemptCount returns the maximum attempt count over instance's
// orchestrator-queue messages (0 if it has none). It is the hook behind
// providertest.Factory.MaxAttemptCount.
func (p *Provider) MaxAttemptCount(instance string) uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var maxAttempts uint32
	for _, m := range p.orchQueue {
		if m.instance == instance {
			maxAttempts = max(maxAttempts, m.attempts)
		}
	}
	return maxAttempts
}
