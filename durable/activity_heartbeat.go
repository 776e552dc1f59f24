package durable

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/limits"
)

// Activity heartbeats. Heartbeat only records the details in memory: the
// attempt's next lock renewal (locklease.go) carries them to the store
// when the provider is a duroxide.HeartbeatRecorder, so a heartbeat costs
// no request of its own, and a later attempt of the same work item (after
// a crash, a lost lock or a runtime restart) reads them back with
// HeartbeatDetails. A heartbeat timeout fails an attempt that stops
// heartbeating although its process is alive.

// ErrHeartbeatTimeout is matched (errors.Is) by the failure of an
// activity attempt that did not heartbeat within its
// ActivityPolicy.HeartbeatTimeout: the *TaskFailedError the
// orchestration's CallActivity gets (whose text starts with
// "timeout: activity heartbeat", so it matches ErrTimedOut too), and the
// cause (context.Cause) of the attempt's cancelled ActivityContext.
var ErrHeartbeatTimeout = errors.New("durable: activity heartbeat timed out")

// heartbeatTimeoutPrefix starts the failure text of a heartbeat timeout.
const heartbeatTimeoutPrefix = timeoutPrefix + "activity heartbeat"

func isHeartbeatTimeoutMessage(msg string) bool {
	return strings.HasPrefix(msg, heartbeatTimeoutPrefix)
}

// ActivityPolicy is how workers run one registered activity, set with
// Registry.SetActivityPolicy. It is the worker's, not the caller's: the
// work item, in duroxide's format, carries no such settings, and only the
// worker sees the heartbeats.
type ActivityPolicy struct {
	// HeartbeatTimeout, when positive, fails an attempt that goes that
	// long without calling Heartbeat (counted from its start, then from
	// each heartbeat): its context is cancelled with ErrHeartbeatTimeout
	// as the cause and, after ActivityCancellationGracePeriod, the
	// attempt fails with a "timeout: activity heartbeat ..." failure, so
	// a RetryPolicy retries it. 0 = none: an activity that never
	// heartbeats is unaffected. Negative is refused.
	HeartbeatTimeout time.Duration
}

// SetActivityPolicy sets name's policy; it applies to the attempts
// fetched after the call. name need not be registered yet.
func (r *Registry) SetActivityPolicy(name string, p ActivityPolicy) error {
	if p.HeartbeatTimeout < 0 {
		return &RegistrationError{Kind: "activity policy", Name: name, Reason: "negative HeartbeatTimeout"}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.activityPolicies == nil {
		r.activityPolicies = map[string]ActivityPolicy{}
	}
	r.activityPolicies[name] = p
	return nil
}

func (r *Registry) activityPolicy(name string) ActivityPolicy {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.activityPolicies[name]
}

// Heartbeat records that the activity is making progress, with details
// (encoded with the typed codec; nil for none) that a later attempt of
// this activity can resume from (HeartbeatDetails). It never blocks on
// the store: the attempt's next lock renewal writes the latest details,
// so a crash loses at most the details of the last renewal interval
// (Options.WorkerLockTimeout and WorkerLockRenewalBuffer set it). With a
// provider that is not a duroxide.HeartbeatRecorder the details are not
// stored and no later attempt sees them. Details that cannot be encoded
// (ErrUnsupportedType) or that are larger than
// duroxide.MaxHeartbeatDetailsBytes (duroxide.ErrTooLarge) are refused
// at once and not recorded; the heartbeat still counts for the
// HeartbeatTimeout only when it is recorded. Once the attempt's lock is
// gone (its work item was deleted because the orchestration was
// cancelled, deleted or no longer waits for it; or its lock expired and
// another worker may hold the item) Heartbeat returns an error matching
// duroxide.ErrLockLost, which is also the cause of the attempt's
// cancelled context: the attempt should return, as nothing it returns
// is kept.
func (a ActivityContext) Heartbeat(details any) error {
	enc, err := Encode(details)
	if err != nil {
		return fmt.Errorf("%w: heartbeat details: %v", ErrUnsupportedType, err)
	}
	if !utf8.ValidString(enc) {
		return duroxide.Kinded(duroxide.ErrInvalidInput, "heartbeat", "heartbeat details are not valid UTF-8")
	}
	if n := limits.EncodedLen(enc); n > duroxide.MaxHeartbeatDetailsBytes {
		return duroxide.TooLarge("heartbeat", "heartbeat details", n, duroxide.MaxHeartbeatDetailsBytes)
	}
	return a.info.heartbeat.record(enc)
}

// HeartbeatDetails decodes the details the last heartbeat of an earlier
// attempt of this activity recorded (a crashed, timed-out-lock or
// restarted attempt of the same work item); ok is false on a first
// attempt, or when no earlier attempt heartbeated with details the store
// kept. An attempt that a RetryPolicy schedules is a new activity and
// starts without details. The current attempt's own heartbeats do not
// change what it returns.
func HeartbeatDetails[T any](ctx ActivityContext) (details T, ok bool, err error) {
	prev := ctx.info.heartbeat.previous
	if prev == nil {
		return details, false, nil
	}
	details, err = Decode[T](prev.Details)
	if err != nil {
		return details, false, err
	}
	return details, true, nil
}

// LastHeartbeat is when the store recorded the details HeartbeatDetails
// returns; ok is false when there are none.
func (a ActivityContext) LastHeartbeat() (at time.Time, ok bool) {
	prev := a.info.heartbeat.previous
	if prev == nil {
		return time.Time{}, false
	}
	return time.UnixMilli(prev.AtMs), true
}

// heartbeatState is one attempt's heartbeats.
type heartbeatState struct {
	previous *duroxide.Heartbeat // from the fetch; read-only

	mu      sync.Mutex
	details string
	seq     uint64 // heartbeats with details recorded
	sentSeq uint64 // the latest seq a renewal stored

	// The watchdog: expired is closed when timeout passes without a
	// heartbeat.
	timeout time.Duration
	timer   *time.Timer
	stopped bool  // the attempt is over: a late heartbeat rearms nothing
	lost    error // the lock is gone: what Heartbeat returns from then on
	expired chan struct{}
	once    sync.Once
}

// newHeartbeatState is an attempt's state before it runs; previous is
// the heartbeat its fetch returned.
func newHeartbeatState(previous *duroxide.Heartbeat) *heartbeatState {
	return &heartbeatState{previous: previous, expired: make(chan struct{})}
}

// start arms the watchdog when timeout > 0.
func (h *heartbeatState) start(timeout time.Duration) {
	if timeout <= 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.timeout = timeout
	h.timer = time.AfterFunc(timeout, func() { h.once.Do(func() { close(h.expired) }) })
}

// record keeps details as the latest and rearms the watchdog, unless the
// attempt's lock is gone.
func (h *heartbeatState) record(details string) error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost != nil {
		return h.lost
	}
	h.details = details
	h.seq++
	if h.timer != nil && !h.stopped {
		h.timer.Reset(h.timeout)
	}
	return nil
}

// lose makes every later heartbeat fail with err.
func (h *heartbeatState) lose(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lost = err
}

// pending returns the details no renewal has stored yet.
func (h *heartbeatState) pending() (details string, seq uint64, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.details, h.seq, h.seq > h.sentSeq
}

// stored notes that a renewal stored the details of seq.
func (h *heartbeatState) stored(seq uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sentSeq = max(h.sentSeq, seq)
}

// stop ends the watchdog.
func (h *heartbeatState) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	if h.timer != nil {
		h.timer.Stop()
	}
}

// heartbeatExpired is the watchdog's channel (nil, never ready, without
// a timeout).
func (h *heartbeatState) heartbeatExpired() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.timer == nil {
		return nil
	}
	return h.expired
}
