package durabletest

import (
	"context"
	"sync"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// FaultyProvider wraps any duroxide.Provider and injects faults on demand,
// so runtime behaviour under failing infrastructure can be tested on every
// provider. It is the Go form of duroxide's test wrappers
// (tests/common/fault_injection.rs): PoisonInjectingProvider (inflated
// attempt counts), FilterBypassProvider (capability filter ignored) and
// FailingProvider (one-shot fetch/ack failures). Calls without an
// injection armed go straight to the wrapped provider; methods not listed
// here are the wrapped provider's own.
//
// A FaultyProvider is safe for concurrent use.
type FaultyProvider struct {
	duroxide.Provider

	mu           sync.Mutex
	orch         attemptInjection
	activity     attemptInjection
	failNext     map[FaultOp]bool
	transient    map[FaultOp]int
	emptyAcks    int
	allowFailure bool
	ackThenFail  bool
	bypass       bool
}

// FaultOp names a provider call whose next invocation can be failed.
type FaultOp int

// The calls FailNext can fail.
const (
	// FetchOrchestrationItem fails with a retryable error.
	FetchOrchestrationItem FaultOp = iota
	// FetchWorkItem fails with a retryable error.
	FetchWorkItem
	// AckOrchestrationItem fails with a permanent error.
	AckOrchestrationItem
	// AckWorkItem fails with a permanent error.
	AckWorkItem
	// RenewWorkItemLock fails with ErrLockLost (the lock reported gone,
	// though the wrapped store still holds it).
	RenewWorkItemLock
	// RenewOrchestrationItemLock fails with ErrLockLost.
	RenewOrchestrationItemLock
	// RenewSessionLock fails with a permanent error.
	RenewSessionLock
	// AbandonWorkItem fails only transiently (FailTransiently).
	AbandonWorkItem
)

// attemptInjection overrides the attempt count a fetch reports.
type attemptInjection struct {
	count      uint32 // 0 = no injection
	persistent bool   // keep injecting until cleared, else one fetch only
	skip       uint32 // fetches passed through untouched first
}

// apply returns the attempt count to report for one fetch.
func (a *attemptInjection) apply(real uint32) uint32 {
	if a.skip > 0 {
		a.skip--
		return real
	}
	n := a.count
	if !a.persistent {
		a.count = 0
	}
	if n > 0 {
		return n
	}
	return real
}

// NewFaultyProvider wraps inner with no fault armed.
func NewFaultyProvider(inner duroxide.Provider) *FaultyProvider {
	return &FaultyProvider{Provider: inner, failNext: map[FaultOp]bool{}, transient: map[FaultOp]int{}}
}

// Inner returns the wrapped provider.
func (p *FaultyProvider) Inner() duroxide.Provider { return p.Provider }

// InjectOrchestrationAttempts makes the next orchestration fetch report
// attemptCount instead of the real count (Rust: inject_orchestration_poison).
func (p *FaultyProvider) InjectOrchestrationAttempts(attemptCount uint32) {
	p.mu.Lock()
	p.orch = attemptInjection{count: attemptCount}
	p.mu.Unlock()
}

// InjectOrchestrationAttemptsPersistent makes every orchestration fetch
// report attemptCount until ClearInjections.
func (p *FaultyProvider) InjectOrchestrationAttemptsPersistent(attemptCount uint32) {
	p.mu.Lock()
	p.orch = attemptInjection{count: attemptCount, persistent: true}
	p.mu.Unlock()
}

// InjectOrchestrationAttemptsAfterSkip lets skip orchestration fetches
// through unchanged, then makes the next one report attemptCount (e.g. to
// poison a child after its parent's first turn).
func (p *FaultyProvider) InjectOrchestrationAttemptsAfterSkip(skip, attemptCount uint32) {
	p.mu.Lock()
	p.orch = attemptInjection{count: attemptCount, skip: skip}
	p.mu.Unlock()
}

// InjectActivityAttempts makes the next work-item fetch report
// attemptCount.
func (p *FaultyProvider) InjectActivityAttempts(attemptCount uint32) {
	p.mu.Lock()
	p.activity = attemptInjection{count: attemptCount}
	p.mu.Unlock()
}

// InjectActivityAttemptsPersistent makes every work-item fetch report
// attemptCount until ClearInjections.
func (p *FaultyProvider) InjectActivityAttemptsPersistent(attemptCount uint32) {
	p.mu.Lock()
	p.activity = attemptInjection{count: attemptCount, persistent: true}
	p.mu.Unlock()
}

// ClearInjections disarms every attempt-count injection.
func (p *FaultyProvider) ClearInjections() {
	p.mu.Lock()
	p.orch, p.activity = attemptInjection{}, attemptInjection{}
	p.mu.Unlock()
}

// FailNext makes the next call of op fail: fetches with a retryable
// error, acks with a permanent one (as duroxide's FailingProvider).
func (p *FaultyProvider) FailNext(op FaultOp) {
	p.mu.Lock()
	p.failNext[op] = true
	p.mu.Unlock()
}

// FailTransiently makes the next n calls of op fail with a retryable
// error (a 503 or a throttle, as a real store produces every day) without
// reaching the wrapped provider.
func (p *FaultyProvider) FailTransiently(op FaultOp, n int) {
	p.mu.Lock()
	p.transient[op] = n
	p.mu.Unlock()
}

// TransientLeft is how many armed transient failures of op are left.
func (p *FaultyProvider) TransientLeft(op FaultOp) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.transient[op]
}

// EmptyAcks counts AckWorkItem calls without a completion that reached
// the wrapped provider.
func (p *FaultyProvider) EmptyAcks() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.emptyAcks
}

// takeTransient reports and consumes one armed transient failure of op.
func (p *FaultyProvider) takeTransient(op FaultOp) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.transient[op] <= 0 {
		return false
	}
	p.transient[op]--
	return true
}

// transientError is the retryable error an armed transient failure
// returns.
func transientError(op string) error {
	return duroxide.Retryable(op, "simulated transient failure (503 Service Unavailable)")
}

// SetAllowFailureCommits lets an armed AckOrchestrationItem failure pass
// an ack whose history delta holds OrchestrationFailed.
func (p *FaultyProvider) SetAllowFailureCommits(allow bool) {
	p.mu.Lock()
	p.allowFailure = allow
	p.mu.Unlock()
}

// SetAckThenFail makes an armed AckWorkItem failure ack for real first, so
// the caller sees an error for an ack that happened.
func (p *FaultyProvider) SetAckThenFail(enabled bool) {
	p.mu.Lock()
	p.ackThenFail = enabled
	p.mu.Unlock()
}

// SetBypassCapabilityFilter makes orchestration fetches ignore the
// runtime's capability filter, to exercise the runtime's own check.
func (p *FaultyProvider) SetBypassCapabilityFilter(bypass bool) {
	p.mu.Lock()
	p.bypass = bypass
	p.mu.Unlock()
}

// takeFail reports and disarms an armed failure of op.
func (p *FaultyProvider) takeFail(op FaultOp) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	armed := p.failNext[op]
	delete(p.failNext, op)
	return armed
}

// FetchOrchestrationItem fetches from the wrapped provider, applying an
// armed failure, filter bypass or attempt-count injection.
func (p *FaultyProvider) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	if p.takeFail(FetchOrchestrationItem) {
		return nil, duroxide.Retryable("fetch_orchestration_item", "simulated transient infrastructure failure")
	}
	p.mu.Lock()
	if p.bypass {
		filter = nil
	}
	p.mu.Unlock()
	item, err := p.Provider.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	if err != nil || item == nil {
		return item, err
	}
	p.mu.Lock()
	item.AttemptCount = p.orch.apply(item.AttemptCount)
	p.mu.Unlock()
	return item, nil
}

// FetchWorkItem fetches from the wrapped provider, applying an armed
// failure or attempt-count injection.
func (p *FaultyProvider) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *duroxide.SessionFetchConfig, tags duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	if p.takeFail(FetchWorkItem) {
		return nil, duroxide.Retryable("fetch_work_item", "simulated transient infrastructure failure")
	}
	item, err := p.Provider.FetchWorkItem(ctx, lockTimeout, pollTimeout, session, tags)
	if err != nil || item == nil {
		return item, err
	}
	p.mu.Lock()
	item.AttemptCount = p.activity.apply(item.AttemptCount)
	p.mu.Unlock()
	return item, nil
}

// AckOrchestrationItem commits through the wrapped provider unless a
// failure is armed.
func (p *FaultyProvider) AckOrchestrationItem(ctx context.Context, lockToken string, commit duroxide.OrchestrationCommit) error {
	if p.takeTransient(AckOrchestrationItem) {
		return transientError("ack_orchestration_item")
	}
	if p.takeFail(AckOrchestrationItem) {
		p.mu.Lock()
		allow := p.allowFailure
		p.mu.Unlock()
		if !(allow && failsOrchestration(commit.HistoryDelta)) {
			return duroxide.Permanent("ack_orchestration_item", "simulated infrastructure failure")
		}
	}
	return p.Provider.AckOrchestrationItem(ctx, lockToken, commit)
}

func failsOrchestration(delta []duroxide.Event) bool {
	for _, e := range delta {
		if _, ok := e.Kind.(duroxide.OrchestrationFailed); ok {
			return true
		}
	}
	return false
}

// AckWorkItem acks through the wrapped provider unless a failure is armed.
func (p *FaultyProvider) AckWorkItem(ctx context.Context, lockToken string, completion duroxide.WorkItem) error {
	if p.takeTransient(AckWorkItem) {
		return transientError("ack_work_item")
	}
	if completion == nil {
		p.mu.Lock()
		p.emptyAcks++
		p.mu.Unlock()
	}
	if p.takeFail(AckWorkItem) {
		p.mu.Lock()
		ackFirst := p.ackThenFail
		p.mu.Unlock()
		if ackFirst {
			if err := p.Provider.AckWorkItem(ctx, lockToken, completion); err != nil {
				return err
			}
		}
		return duroxide.Permanent("ack_work_item", "simulated infrastructure failure")
	}
	return p.Provider.AckWorkItem(ctx, lockToken, completion)
}

// RenewWorkItemLock renews through the wrapped provider unless a failure
// is armed.
func (p *FaultyProvider) RenewWorkItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	const op = "renew_work_item_lock"
	if p.takeTransient(RenewWorkItemLock) {
		return transientError(op)
	}
	if p.takeFail(RenewWorkItemLock) {
		return duroxide.Kinded(duroxide.ErrLockLost, op, "simulated lost lock")
	}
	return p.Provider.RenewWorkItemLock(ctx, lockToken, extendFor)
}

// RenewWorkItemLockWithDetails implements duroxide.HeartbeatRecorder
// with RenewWorkItemLock's faults: a RenewWorkItemLock failure armed
// fails this call too. Over a provider that records no heartbeats it
// renews without them, as the runtime does.
func (p *FaultyProvider) RenewWorkItemLockWithDetails(ctx context.Context, lockToken string, extendFor time.Duration, details string) error {
	const op = "renew_work_item_lock_with_details"
	if p.takeTransient(RenewWorkItemLock) {
		return transientError(op)
	}
	if p.takeFail(RenewWorkItemLock) {
		return duroxide.Kinded(duroxide.ErrLockLost, op, "simulated lost lock")
	}
	if r, ok := p.Provider.(duroxide.HeartbeatRecorder); ok {
		return r.RenewWorkItemLockWithDetails(ctx, lockToken, extendFor, details)
	}
	return p.Provider.RenewWorkItemLock(ctx, lockToken, extendFor)
}

// RenewOrchestrationItemLock renews through the wrapped provider unless a
// failure is armed.
func (p *FaultyProvider) RenewOrchestrationItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	const op = "renew_orchestration_item_lock"
	if p.takeTransient(RenewOrchestrationItemLock) {
		return transientError(op)
	}
	if p.takeFail(RenewOrchestrationItemLock) {
		return duroxide.Kinded(duroxide.ErrLockLost, op, "simulated lost lock")
	}
	return p.Provider.RenewOrchestrationItemLock(ctx, lockToken, extendFor)
}

// RenewSessionLock renews through the wrapped provider unless a failure
// is armed.
func (p *FaultyProvider) RenewSessionLock(ctx context.Context, ownerIDs []string, extendFor, idleTimeout time.Duration) (int, error) {
	const op = "renew_session_lock"
	if p.takeTransient(RenewSessionLock) {
		return 0, transientError(op)
	}
	if p.takeFail(RenewSessionLock) {
		return 0, duroxide.Permanent(op, "simulated permanent failure")
	}
	return p.Provider.RenewSessionLock(ctx, ownerIDs, extendFor, idleTimeout)
}

// AbandonWorkItem abandons through the wrapped provider unless a transient
// failure is armed.
func (p *FaultyProvider) AbandonWorkItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	if p.takeTransient(AbandonWorkItem) {
		return transientError("abandon_work_item")
	}
	return p.Provider.AbandonWorkItem(ctx, lockToken, delay, ignoreAttempt)
}
