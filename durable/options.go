package durable

import (
	"log/slog"
	"math"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/duroxide-go/cdb/duroxide"
)

// Options configures a Runtime. The zero value (or a nil *Options) gives
// duroxide's defaults; each zero field takes its default.
type Options struct {
	// MinPollInterval is the least time between two fetches of one
	// dispatcher slot while there is no work (Rust: dispatcher_min_poll_interval,
	// 100 ms). After an empty fetch the wait doubles up to MaxIdlePollInterval.
	// It also bounds how long an orchestration loop whose fetch saw
	// nothing else ready waits after its turn before fetching again, and
	// how often, under local work, some loop runs discovery for work other
	// processes enqueued.
	MinPollInterval time.Duration
	// MaxIdlePollInterval caps the idle backoff (default 8 s). While a queue
	// is idle only one of its slots polls, so an idle runtime makes two
	// fetches per MaxIdlePollInterval. It bounds how late work enqueued by
	// another process is noticed; work enqueued through a Client or Runtime
	// in this process, and timers firing, wake the dispatchers at once.
	MaxIdlePollInterval time.Duration
	// LongPollTimeout is passed to providers that long-poll (default 30 s).
	LongPollTimeout time.Duration
	// OrchestrationConcurrency is the number of orchestration turns whose
	// code runs at once (default 2; NoSlots for a worker-only runtime). A
	// turn holds its slot while it replays, not while it is fetched or
	// acked: see OrchestrationFetchAhead.
	OrchestrationConcurrency int
	// WorkerConcurrency is the number of activity functions run at once
	// (default 2; NoSlots for a runtime that runs no activities). An
	// activity holds its slot while its function runs, not while it is
	// fetched or acked: see WorkerFetchAhead.
	WorkerConcurrency int
	// OrchestrationFetchAhead is how many orchestration items the runtime
	// may hold locked beyond its running turns: fetched while every slot
	// runs, or acked after their slot was given back (default 0: as many
	// as OrchestrationConcurrency, at most 4, which nearly doubled
	// throughput at 5 ms per request, docs/performance.md; NoSlots: none,
	// one loop per slot). An item held ahead keeps its instance locked,
	// its lock renewed, until a slot takes it.
	OrchestrationFetchAhead int
	// WorkerFetchAhead is OrchestrationFetchAhead for activities (default
	// 0: as many as WorkerConcurrency, at most 4; NoSlots: none). An activity held
	// ahead is locked to this runtime, its lock renewed, until a slot runs
	// it; other runtimes cannot take it meanwhile. A loop reserves room
	// for a session before a fetch that may claim one, so the loops
	// together hold at most MaxSessionsPerRuntime sessions.
	WorkerFetchAhead int
	// WorkerHandOff is how many activities this runtime's turns may take
	// for its own workers as they commit, on a provider that can write
	// them locked (duroxide.WorkHandOff; the Cosmos DB provider does, in
	// the turn's batch): such an activity costs no fetch. Default 0: 64;
	// NoSlots: none, every activity is fetched. Like an activity fetched
	// ahead, one handed off is locked to this runtime, its lock renewed
	// (a request per WorkerLockTimeout less WorkerLockRenewalBuffer),
	// until a slot runs it, and other runtimes cannot take it meanwhile:
	// where activities are long and runtimes many, a smaller value leaves
	// more of them to whichever runtime is free. Waiting activities run
	// in the order they were enqueued, handed off or fetched.
	WorkerHandOff int
	// OrchestratorLockTimeout is the instance lock per fetch (default 5 s).
	OrchestratorLockTimeout time.Duration
	// OrchestratorLockRenewalBuffer is how long before expiry a lock is
	// renewed when the timeout is at least 15 s (default 2 s); shorter
	// timeouts are renewed at half their length.
	OrchestratorLockRenewalBuffer time.Duration
	// WorkerLockTimeout is the activity lock per fetch (default 30 s).
	WorkerLockTimeout time.Duration
	// WorkerLockRenewalBuffer is as OrchestratorLockRenewalBuffer for
	// activities (default 5 s).
	WorkerLockRenewalBuffer time.Duration
	// MaxAttempts is how many fetches of one message are tried before it is
	// treated as poison (default 10).
	MaxAttempts uint32
	// UnregisteredBackoff is the abandon delay for work whose handler is
	// not registered here (default 1 s doubling to 60 s).
	UnregisteredBackoff Backoff
	// Nondeterminism says what a turn whose code does not match the
	// instance's history does (default NondeterminismBlock).
	Nondeterminism NondeterminismPolicy
	// NondeterminismBackoff is the abandon delay of a blocked instance, by
	// consecutive blocked turns (default 1 s doubling to 60 s).
	NondeterminismBackoff Backoff
	// ActivityCancellationGracePeriod is how long a cancelled activity may
	// keep running before its result is discarded (default 10 s).
	ActivityCancellationGracePeriod time.Duration
	// SupportedReplayVersions restricts which pinned duroxide versions this
	// runtime replays (default: 0.0.0 up to DuroxideVersion).
	SupportedReplayVersions *duroxide.SemVerRange
	// SessionLockTimeout is the session lock per fetch (default 30 s).
	SessionLockTimeout time.Duration
	// SessionLockRenewalBuffer is as WorkerLockRenewalBuffer for sessions
	// (default 5 s).
	SessionLockRenewalBuffer time.Duration
	// SessionIdleTimeout unpins a session nobody used for this long
	// (default 5 min).
	SessionIdleTimeout time.Duration
	// SessionCleanupInterval is how often orphaned sessions are deleted
	// (default 5 min).
	SessionCleanupInterval time.Duration
	// MaxSessionsPerRuntime bounds the distinct sessions this runtime
	// serves at once (default 10).
	MaxSessionsPerRuntime int
	// WorkerNodeID is a stable session owner id, so that a restarted
	// process keeps its sessions. Empty: each worker slot owns its own.
	WorkerNodeID string
	// WorkerTagFilter selects the activities this runtime runs. The zero
	// value runs untagged activities only.
	WorkerTagFilter duroxide.TagFilter
	// Logger receives the runtime's logs (default slog.Default()).
	Logger *slog.Logger
	// TracerProvider traces turns, activities and the runtime's client
	// calls (default: OpenTelemetry's global provider, a no-op unless the
	// service installed an SDK).
	TracerProvider trace.TracerProvider
	// MeterProvider receives the runtime's metrics (default: the global
	// provider). docs/operations.md lists them.
	MeterProvider metric.MeterProvider
	// QueueDepthMetrics exports duroxide.queue.depth, read through the
	// provider's admin QueueDepths at every metric collection. Off by
	// default: on Cosmos DB that is a cross-partition query whose cost
	// grows with the queues, paid by every runtime at every collection;
	// turn it on in one runtime per store.
	QueueDepthMetrics bool
	// HistoryLimits are the history sizes an execution should stay under
	// (default: the Cosmos DB store's, see HistoryLimits):
	// ContinueAsNewSuggested reads them, and the runtime warns when an
	// execution passes 75 % and 90 % of one. Every runtime serving an
	// instance should have the same, or replays may suggest differently.
	HistoryLimits HistoryLimits
}

// NondeterminismPolicy is what the runtime does with an instance whose
// orchestration code no longer matches its history (the code scheduled
// something other than what history recorded, typically because the code
// changed under running instances).
type NondeterminismPolicy int

const (
	// NondeterminismBlock (the default, as Temporal's workers do) holds the
	// instance: the turn is abandoned with NondeterminismBackoff and
	// commits nothing, the attempt does not count towards MaxAttempts, an
	// ERROR log names the mismatching call and event, the
	// duroxide.orchestration.nondeterminism counter counts it and the
	// client's status says StateBlocked. Deploying code that replays the
	// history cleanly resumes the instance where it stopped.
	NondeterminismBlock NondeterminismPolicy = iota
	// NondeterminismFail fails the execution with a Configuration
	// (Nondeterminism) error, as duroxide does.
	NondeterminismFail
)

// String names the policy.
func (p NondeterminismPolicy) String() string {
	if p == NondeterminismFail {
		return "Fail"
	}
	return "Block"
}

// NoSlots, as OrchestrationConcurrency or WorkerConcurrency, runs no
// slots of that kind (zero means the default).
const NoSlots = -1

// Backoff is a delay that doubles per attempt: Base·2^(attempt−1), at most
// Max. The exponent stops growing at 6, as in duroxide.
type Backoff struct {
	Base time.Duration
	Max  time.Duration
}

// Delay returns the delay for attempt (1-based).
func (b Backoff) Delay(attempt uint32) time.Duration {
	exp := uint32(0)
	if attempt > 1 {
		exp = min(attempt-1, 6)
	}
	return min(b.Base*time.Duration(1<<exp), b.Max)
}

// The defaults, duroxide's RuntimeOptions::default.
const (
	defaultMinPollInterval          = 100 * time.Millisecond
	defaultMaxIdlePollInterval      = 8 * time.Second
	defaultLongPollTimeout          = 30 * time.Second
	defaultConcurrency              = 2
	defaultOrchestratorLockTimeout  = 5 * time.Second
	defaultOrchestratorLockBuffer   = 2 * time.Second
	defaultWorkerLockTimeout        = 30 * time.Second
	defaultWorkerLockBuffer         = 5 * time.Second
	defaultMaxAttempts              = 10
	defaultUnregisteredBase         = time.Second
	defaultUnregisteredMax          = time.Minute
	defaultCancellationGrace        = 10 * time.Second
	defaultSessionLockTimeout       = 30 * time.Second
	defaultSessionLockBuffer        = 5 * time.Second
	defaultSessionIdleTimeout       = 5 * time.Minute
	defaultSessionCleanupInterval   = 5 * time.Minute
	defaultMaxSessionsPerRuntime    = 10
	sessionManagerShutdownCheckTime = 5 * time.Second
)

// WithDefaults returns the options a Runtime started with o uses: a copy
// of o with every zero field set to its default (Rust's
// RuntimeOptions::default() for a nil or zero Options).
func (o *Options) WithDefaults() Options { return o.withDefaults() }

// withDefaults returns a copy of o with every zero field defaulted.
func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&r.MinPollInterval, defaultMinPollInterval)
	def(&r.MaxIdlePollInterval, defaultMaxIdlePollInterval)
	r.MaxIdlePollInterval = max(r.MaxIdlePollInterval, r.MinPollInterval)
	def(&r.LongPollTimeout, defaultLongPollTimeout)
	def(&r.OrchestratorLockTimeout, defaultOrchestratorLockTimeout)
	def(&r.OrchestratorLockRenewalBuffer, defaultOrchestratorLockBuffer)
	def(&r.WorkerLockTimeout, defaultWorkerLockTimeout)
	def(&r.WorkerLockRenewalBuffer, defaultWorkerLockBuffer)
	def(&r.UnregisteredBackoff.Base, defaultUnregisteredBase)
	def(&r.UnregisteredBackoff.Max, defaultUnregisteredMax)
	def(&r.NondeterminismBackoff.Base, defaultUnregisteredBase)
	def(&r.NondeterminismBackoff.Max, defaultUnregisteredMax)
	def(&r.ActivityCancellationGracePeriod, defaultCancellationGrace)
	def(&r.SessionLockTimeout, defaultSessionLockTimeout)
	def(&r.SessionLockRenewalBuffer, defaultSessionLockBuffer)
	def(&r.SessionIdleTimeout, defaultSessionIdleTimeout)
	def(&r.SessionCleanupInterval, defaultSessionCleanupInterval)
	r.OrchestrationConcurrency = slots(r.OrchestrationConcurrency)
	r.WorkerConcurrency = slots(r.WorkerConcurrency)
	r.OrchestrationFetchAhead = fetchAhead(r.OrchestrationFetchAhead, r.OrchestrationConcurrency)
	r.WorkerFetchAhead = fetchAhead(r.WorkerFetchAhead, r.WorkerConcurrency)
	r.WorkerHandOff = handOff(r.WorkerHandOff, r.WorkerConcurrency)
	if r.MaxAttempts == 0 {
		r.MaxAttempts = defaultMaxAttempts
	}
	if r.MaxSessionsPerRuntime <= 0 {
		r.MaxSessionsPerRuntime = defaultMaxSessionsPerRuntime
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	if r.HistoryLimits.Bytes == 0 {
		r.HistoryLimits.Bytes = DefaultHistoryBytes
	}
	return r
}

// validate rejects option combinations duroxide rejects at start.
func (o *Options) validate() error {
	renew := renewalInterval(o.WorkerLockTimeout, o.WorkerLockRenewalBuffer)
	if o.SessionIdleTimeout <= renew {
		return &OptionsError{Field: "SessionIdleTimeout", Reason: "must be greater than the worker lock renewal interval " + renew.String() + ", or sessions unpin during long activities"}
	}
	if o.HistoryLimits.Bytes < 0 || o.HistoryLimits.Events < 0 {
		return &OptionsError{Field: "HistoryLimits", Reason: "limits must not be negative"}
	}
	if r := o.SupportedReplayVersions; r != nil && r.Max.Compare(r.Min) < 0 {
		return &OptionsError{Field: "SupportedReplayVersions", Reason: "Max is below Min"}
	}
	return nil
}

// OptionsError reports an invalid Options field.
type OptionsError struct {
	Field, Reason string
}

// Error implements error.
func (e *OptionsError) Error() string { return "durable: invalid Options." + e.Field + ": " + e.Reason }

// renewalInterval is how often a lock of timeout is renewed: buffer before
// expiry for long locks, at half the timeout (whole seconds, at least 1 s)
// for short ones — duroxide's calculate_renewal_interval.
func renewalInterval(timeout, buffer time.Duration) time.Duration {
	if timeout >= 15*time.Second {
		return max(timeout-min(buffer, timeout), time.Second)
	}
	secs := math.Ceil(timeout.Seconds() / 2)
	return max(time.Duration(secs)*time.Second, time.Second)
}

// slots maps a concurrency option to a slot count: 0 is the default,
// negative is none.
func slots(n int) int {
	switch {
	case n == 0:
		return defaultConcurrency
	case n < 0:
		return 0
	}
	return n
}
