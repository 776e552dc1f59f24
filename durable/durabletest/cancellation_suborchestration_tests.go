package durabletest

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// subOptions is Rust's setting for the sub-orchestration cancellation tests.
func subOptions() *durable.Options {
	return fastOptions(func(o *durable.Options) {
		o.OrchestrationConcurrency = 2
		o.WorkerConcurrency = 1
	})
}

// childInstanceOf returns the first SubOrchestrationScheduled instance.
func (e *env) childInstanceOf(parent string) string {
	e.t.Helper()
	_, k, ok := findKind[duroxide.SubOrchestrationScheduled](e.history(parent))
	require.True(e.t, ok, "Child should have been scheduled")
	return k.Instance
}

// waitStatusCancelled waits until instance fails as cancelled; completing
// fails the test.
func (e *env) waitStatusCancelled(instance string) {
	e.t.Helper()
	e.waitFor(instance+" cancelled", func() bool {
		st, err := e.client().Status(e.ctx, instance)
		require.NoError(e.t, err)
		switch st.State {
		case durable.StateFailed:
			require.True(e.t, isCancelled(st.Details, ""), "Child should be cancelled, got: %s", st.FailureMessage())
			return true
		case durable.StateCompleted:
			e.t.Fatalf("Child should NOT complete. Got: %s", st.Output)
		}
		return false
	})
}

func raceChildVsTimer(child func(ctx *durable.OrchestrationContext) *durable.Future[string]) durable.OrchestrationFunc {
	return func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		sub := child(ctx)
		timer := durable.NewTimer(ctx, 100*time.Millisecond)
		if ctx.Select(sub, timer) == 0 {
			v, err := sub.Await()
			if err != nil {
				return "", err
			}
			return "sub_won:" + v, nil
		}
		return "timer_won", nil
	}
}

func select2LoserSubOrchestrationCancelled(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "SlowChild", neverComes)
	orch(e.t, r, "SelectSubOrchParent", raceChildVsTimer(func(ctx *durable.OrchestrationContext) *durable.Future[string] {
		return durable.CallSubOrchestration[string](ctx, "SlowChild", "input")
	}))
	e.start(r, subOptions())
	e.startOrch("inst-select2-suborg-cancel", "SelectSubOrchParent", "")
	require.Equal(e.t, "timer_won", e.completed("inst-select2-suborg-cancel"), "Timer should win the race")
	e.waitStatusCancelled("inst-select2-suborg-cancel::" + e.childInstanceOf("inst-select2-suborg-cancel"))
}

func select2LoserSubOrchestrationExplicitIDCancelled(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "SlowChild", neverComes)
	orch(e.t, r, "SelectExplicitIdParent", raceChildVsTimer(func(ctx *durable.OrchestrationContext) *durable.Future[string] {
		return durable.CallSubOrchestration[string](ctx, "SlowChild", "input", durable.SubOrchestrationOptions{InstanceID: "my-explicit-child-id"})
	}))
	e.start(r, subOptions())
	e.startOrch("inst-select2-explicit-id", "SelectExplicitIdParent", "")
	require.Equal(e.t, "timer_won", e.completed("inst-select2-explicit-id"), "Timer should win the race")
	require.Equal(e.t, "my-explicit-child-id", e.childInstanceOf("inst-select2-explicit-id"))
	e.waitStatusCancelled("my-explicit-child-id")
}

func explicitDropSubOrchestrationCancelled(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "WaitingChild", neverComes)
	orch(e.t, r, "DropSubOrchParent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		durable.CallSubOrchestration[string](ctx, "WaitingChild", "input").Cancel()
		_, _ = durable.NewTimer(ctx, 50*time.Millisecond).Await()
		return "parent_completed_after_drop", nil
	})
	e.start(r, subOptions())
	e.startOrch("inst-drop-suborg", "DropSubOrchParent", "")
	require.Equal(e.t, "parent_completed_after_drop", e.completed("inst-drop-suborg"))
	e.waitStatusCancelled("inst-drop-suborg::" + e.childInstanceOf("inst-drop-suborg"))
}

// dropFutureReason is the CancelInstance reason for a dropped child future.
const dropFutureReason = "parent dropped sub-orchestration future"

// recordedCancel is one CancelInstance seen by recordingProvider.
type recordedCancel struct {
	instance, reason string
	fromAck          bool
}

// recordingProvider records every CancelInstance enqueued (by a client or
// by a turn's commit) and holds back the child "combo-child" until allowed,
// so several cancels land in one of its turns.
type recordingProvider struct {
	duroxide.Provider
	mu         sync.Mutex
	cancels    []recordedCancel
	allowChild atomic.Bool
	// seenBoth is set when a held-back fetch of the child saw both cancels
	// (with an outbox provider they reach the child's queue after the ack).
	seenBoth   atomic.Bool
	childBatch [][]string
}

func (p *recordingProvider) records() []recordedCancel {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]recordedCancel(nil), p.cancels...)
}

func (p *recordingProvider) has(reason string, fromAck bool) bool {
	for _, r := range p.records() {
		if r.instance == "combo-child" && r.reason == reason && r.fromAck == fromAck {
			return true
		}
	}
	return false
}

func (p *recordingProvider) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, f *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	it, err := p.Provider.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, f)
	if err != nil || it == nil || it.Instance != "combo-child" {
		return it, err
	}
	var reasons []string
	for _, m := range it.Messages {
		if c, ok := m.(duroxide.CancelInstanceItem); ok {
			reasons = append(reasons, c.Reason)
		}
	}
	if !p.allowChild.Load() {
		if slices.Contains(reasons, "user_cancel") && slices.Contains(reasons, dropFutureReason) {
			p.seenBoth.Store(true)
		}
		if err := p.Provider.AbandonOrchestrationItem(ctx, it.LockToken, 25*time.Millisecond, true); err != nil {
			return nil, err
		}
		return nil, nil
	}
	p.mu.Lock()
	p.childBatch = append(p.childBatch, reasons)
	p.mu.Unlock()
	return it, nil
}

func (p *recordingProvider) AckOrchestrationItem(ctx context.Context, token string, c duroxide.OrchestrationCommit) error {
	for _, w := range c.OrchestratorItems {
		if ci, ok := w.(duroxide.CancelInstanceItem); ok {
			p.mu.Lock()
			p.cancels = append(p.cancels, recordedCancel{ci.Instance, ci.Reason, true})
			p.mu.Unlock()
		}
	}
	return p.Provider.AckOrchestrationItem(ctx, token, c)
}

func (p *recordingProvider) EnqueueForOrchestrator(ctx context.Context, w duroxide.WorkItem, delay time.Duration) error {
	if ci, ok := w.(duroxide.CancelInstanceItem); ok {
		p.mu.Lock()
		p.cancels = append(p.cancels, recordedCancel{ci.Instance, ci.Reason, false})
		p.mu.Unlock()
	}
	return p.Provider.EnqueueForOrchestrator(ctx, w, delay)
}

func userCancelAndDroppedFutureBothEnqueue(e *env) {
	rec := &recordingProvider{Provider: e.p}
	e.p = rec
	r := durable.NewRegistry()
	orch(e.t, r, "ComboChild", neverComes)
	orch(e.t, r, "ComboParent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		durable.CallSubOrchestration[string](ctx, "ComboChild", "input", durable.SubOrchestrationOptions{InstanceID: "combo-child"}).Cancel()
		_, _ = durable.NewTimer(ctx, 50*time.Millisecond).Await()
		return "parent_done", nil
	})
	e.start(r, subOptions())
	e.startOrch("inst-combo-cancel", "ComboParent", "")
	e.cancel("combo-child", "user_cancel")
	const dropReason = dropFutureReason
	e.waitFor("both CancelInstance enqueues", func() bool {
		return rec.has("user_cancel", false) && rec.has(dropReason, true)
	})
	// Both must also have reached the child's queue before it may run.
	e.waitFlag("both cancels queued for the child", &rec.seenBoth)
	rec.allowChild.Store(true)
	require.Equal(e.t, "parent_done", e.completed("inst-combo-cancel"))
	e.waitStatusCancelled("combo-child")
	rec.mu.Lock()
	batches := append([][]string(nil), rec.childBatch...)
	rec.mu.Unlock()
	require.NotEmpty(e.t, batches)
	require.Contains(e.t, batches[0], "user_cancel")
	require.Contains(e.t, batches[0], dropReason)
	ph := e.history("inst-combo-cancel")
	var sched uint64
	for _, ev := range ph {
		if k, ok := ev.Kind.(duroxide.SubOrchestrationScheduled); ok && k.Instance == "combo-child" {
			sched = ev.EventID
		}
	}
	require.NotZero(e.t, sched, "Expected sub-orchestration to be scheduled")
	require.True(e.t, hasCancelRequested[duroxide.SubOrchestrationCancelRequested](ph, sched, func(k duroxide.SubOrchestrationCancelRequested) string { return k.Reason }), kinds(ph))
}

func subOrchestrationOutOfScopeCancelled(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "WaitingChild", neverComes)
	orch(e.t, r, "OutOfScopeSubOrchParent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		// Rust's block scope is a Go block that returns without awaiting.
		_, _ = durable.Go(ctx, func(ctx *durable.OrchestrationContext) (struct{}, error) {
			_ = durable.CallSubOrchestration[string](ctx, "WaitingChild", "input")
			return struct{}{}, nil
		}).Await()
		_, _ = durable.NewTimer(ctx, 50*time.Millisecond).Await()
		return "parent_completed_without_await", nil
	})
	e.start(r, subOptions())
	e.startOrch("inst-scope-suborg", "OutOfScopeSubOrchParent", "")
	require.Equal(e.t, "parent_completed_without_await", e.completed("inst-scope-suborg"))
	e.waitStatusCancelled("inst-scope-suborg::" + e.childInstanceOf("inst-scope-suborg"))
}

func positionalArrivalBeforeSubOutstanding(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_, _ = durable.NewTimer(ctx, 100*time.Millisecond).Await()
		w := durable.WaitEvent[string](ctx, "MyEvent")
		timeout := durable.NewTimer(ctx, 500*time.Millisecond)
		if ctx.Select(w, timeout) == 0 {
			return "event-received", nil
		}
		return "timeout", nil
	})
	e.start(r, fastOptions(nil))
	e.startOrch("inst-pos-arr", "TestOrch", "")
	e.raise("inst-pos-arr", "MyEvent", "data")
	require.Equal(e.t, "timeout", e.completed("inst-pos-arr"))
	h := e.history("inst-pos-arr")
	require.True(e.t, hasKind(h, func(k duroxide.ExternalSubscribedCancelled) bool { return k.Reason == "dropped_future" }),
		"Missing dropped_future cancellation breadcrumb for positional subscription")
}

func cancelledSubscriptionDoesNotStealFutureEvent(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		w1 := durable.WaitEvent[string](ctx, "Signal")
		t1 := durable.NewTimer(ctx, 50*time.Millisecond)
		if ctx.Select(w1, t1) == 0 {
			return "unexpected_phase1", nil
		}
		d, _ := durable.WaitEvent[string](ctx, "Signal").Await()
		return "got:" + d, nil
	})
	e.start(r, fastOptions(nil))
	e.startOrch("inst-no-steal", "TestOrch", "")
	// Phase 1 settled: the cancelled breadcrumb and the second subscription are recorded.
	e.waitHist("inst-no-steal", "phase 2 subscription", func(h []duroxide.Event) bool {
		return hasKind[duroxide.ExternalSubscribedCancelled](h, nil) && countKind[duroxide.ExternalSubscribed](h) == 2
	})
	e.raise("inst-no-steal", "Signal", "hello")
	require.Equal(e.t, "got:hello", e.completed("inst-no-steal"))
	h := e.history("inst-no-steal")
	require.True(e.t, hasKind(h, func(k duroxide.ExternalSubscribedCancelled) bool { return k.Reason == "dropped_future" }),
		"Missing dropped_future cancellation breadcrumb")
}

func twoWaits(name string) durable.OrchestrationFunc {
	return func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		d1, _ := durable.WaitEvent[string](ctx, name).Await()
		d2, _ := durable.WaitEvent[string](ctx, name).Await()
		return d1 + "," + d2, nil
	}
}

// raiseTwiceInTurns raises name twice, each after the matching subscription.
func (e *env) raiseTwiceInTurns(instance, name, d1, d2 string) {
	e.waitHist(instance, "first subscription", func(h []duroxide.Event) bool { return countKind[duroxide.ExternalSubscribed](h) >= 1 })
	e.raise(instance, name, d1)
	e.waitHist(instance, "second subscription", func(h []duroxide.Event) bool { return countKind[duroxide.ExternalSubscribed](h) >= 2 })
	e.raise(instance, name, d2)
}

func positionalMatchingFIFOWithoutCancellation(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TestOrch", twoWaits("Data"))
	e.start(r, fastOptions(nil))
	e.startOrch("inst-fifo", "TestOrch", "")
	e.raiseTwiceInTurns("inst-fifo", "Data", "first", "second")
	require.Equal(e.t, "first,second", e.completed("inst-fifo"), "FIFO ordering broken")
}

func duplicateExternalEventsNotDeduplicated(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TestOrch", twoWaits("Dup"))
	e.start(r, fastOptions(nil))
	e.startOrch("inst-nodup", "TestOrch", "")
	e.raiseTwiceInTurns("inst-nodup", "Dup", "same_payload", "same_payload")
	require.Equal(e.t, "same_payload,same_payload", e.completed("inst-nodup"))
}
