package durabletest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// queueEventTests ports tests/queue_event_tests.rs.
func queueEventTests() []sample {
	return []sample{
		{"persistent_event_basic_delivery", persistentEventBasicDelivery},
		{"persistent_event_arrives_before_subscription", persistentEventArrivesBeforeSubscription},
		{"persistent_event_fifo_ordering", persistentEventFIFOOrdering},
		{"persistent_event_survives_select_cancellation_same_batch", persistentEventSurvivesSelectCancellationSameBatch},
		{"persistent_event_survives_select_cancellation_late_extra_discarded", persistentEventSurvivesSelectCancellationLateExtraDiscarded},
		{"persistent_and_positional_are_independent", persistentAndPositionalAreIndependent},
		{"persistent_cancelled_subscription_emits_breadcrumb", persistentCancelledSubscriptionEmitsBreadcrumb},
		{"persistent_outstanding_subscription_cancelled_on_completion", persistentOutstandingSubscriptionCancelledOnCompletion},
		{"persistent_multiple_cancelled_subscriptions_only_active_receives", persistentMultipleCancelledSubscriptionsOnlyActiveReceives},
		{"complex_multi_turn_persistent_and_positional_with_activities", complexMultiTurnPersistentAndPositionalWithActivities},
		{"select_then_join_persistent_and_positional", selectThenJoinPersistentAndPositional},
		{"raise_event_typed_round_trip", raiseEventTypedRoundTrip},
		{"enqueue_event_typed_round_trip", enqueueEventTypedRoundTrip},
		{"multi_queue_isolation_and_independent_fifo", multiQueueIsolationAndIndependentFIFO},
		{"multi_queue_staggered_delivery", multiQueueStaggeredDelivery},
		{"events_enqueued_before_start_orchestration_are_dropped", eventsEnqueuedBeforeStartOrchestrationAreDropped},
	}
}

// startManual starts a runtime the test stops itself, as Rust's
// shutdown(None) does: wait a grace period for work in flight, then cancel
// it (activities that never return are abandoned, as a crash would).
func (e *env) startManual(reg *durable.Registry, o *durable.Options) func() {
	e.t.Helper()
	rt, err := durable.Start(e.ctx, e.p, reg, testOptions(o))
	require.NoError(e.t, err)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
		defer cancel()
		if err := rt.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			require.NoError(e.t, err)
		}
	}
}

// stopGrace is how long startManual's stop waits for work in flight.
const stopGrace = 3 * time.Second

func queueSubs(h []duroxide.Event, name string) int {
	n := 0
	for _, ev := range h {
		if k, ok := ev.Kind.(duroxide.ExternalSubscribedPersistent); ok && k.Name == name {
			n++
		}
	}
	return n
}

func queueDelivered(h []duroxide.Event, name string) int {
	n := 0
	for _, ev := range h {
		if k, ok := ev.Kind.(duroxide.ExternalEventPersistent); ok && k.Name == name {
			n++
		}
	}
	return n
}

func queueCancelled(h []duroxide.Event, reason string) int {
	n := 0
	for _, ev := range h {
		if k, ok := ev.Kind.(duroxide.ExternalSubscribedPersistentCancelled); ok && (reason == "" || k.Reason == reason) {
			n++
		}
	}
	return n
}

func persistentEventBasicDelivery(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		d, _ := durable.DequeueEvent[string](ctx, "Signal").Await()
		return "got:" + d, nil
	})
	e.start(r, fastOptions(nil))
	e.startOrch("inst-pers-basic", "TestOrch", "")
	require.True(e.t, e.waitSubscription("inst-pers-basic", "Signal"), "Subscription was never registered")
	e.enqueue("inst-pers-basic", "Signal", "hello")
	require.Equal(e.t, "got:hello", e.completed("inst-pers-basic"))
}

func persistentEventArrivesBeforeSubscription(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_, _ = durable.NewTimer(ctx, 200*time.Millisecond).Await()
		d, _ := durable.DequeueEvent[string](ctx, "Signal").Await()
		return "got:" + d, nil
	})
	e.start(r, fastOptions(nil))
	e.startOrch("inst-pers-before", "TestOrch", "")
	e.enqueue("inst-pers-before", "Signal", "early_bird")
	require.Equal(e.t, "got:early_bird", e.completed("inst-pers-before"))
}

func persistentEventFIFOOrdering(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		d1, _ := durable.DequeueEvent[string](ctx, "Data").Await()
		d2, _ := durable.DequeueEvent[string](ctx, "Data").Await()
		return d1 + "," + d2, nil
	})
	e.start(r, fastOptions(nil))
	e.startOrch("inst-pers-fifo", "TestOrch", "")
	require.True(e.t, e.waitSubscription("inst-pers-fifo", "Data"))
	e.enqueue("inst-pers-fifo", "Data", "first")
	e.waitHist("inst-pers-fifo", "second subscription", func(h []duroxide.Event) bool { return queueSubs(h, "Data") == 2 })
	e.enqueue("inst-pers-fifo", "Data", "second")
	require.Equal(e.t, "first,second", e.completed("inst-pers-fifo"))
}

func cancelThenDequeue(ctx *durable.OrchestrationContext, _ string) (string, error) {
	w1 := durable.DequeueEvent[string](ctx, "Signal")
	t1 := durable.NewTimer(ctx, 50*time.Millisecond)
	if ctx.Select(w1, t1) == 0 {
		return "unexpected_phase1", nil
	}
	d, _ := durable.DequeueEvent[string](ctx, "Signal").Await()
	return "got:" + d, nil
}

func assertOneCancelledOfTwo(e *env, h []duroxide.Event, delivered int) {
	require.Equal(e.t, 1, queueCancelled(h, "dropped_future"), "Missing QueueSubscriptionCancelled(dropped_future) for first wait")
	require.Equal(e.t, delivered, queueDelivered(h, "Signal"))
	require.Equal(e.t, 2, queueSubs(h, "Signal"), "Expected 2 total persistent subscriptions")
	require.Equal(e.t, 1, queueCancelled(h, ""), "Expected 1 cancelled persistent subscription")
}

func persistentEventSurvivesSelectCancellationSameBatch(e *env) {
	reg := func() *durable.Registry {
		r := durable.NewRegistry()
		orch(e.t, r, "TestOrch", cancelThenDequeue)
		return r
	}
	stop := e.startManual(reg(), fastOptions(nil))
	e.startOrch("inst-pers-cancel-same", "TestOrch", "")
	e.waitHist("inst-pers-cancel-same", "second QueueSubscribed", func(h []duroxide.Event) bool { return queueSubs(h, "Signal") >= 2 })
	stop()
	e.enqueue("inst-pers-cancel-same", "Signal", "survived")
	e.enqueue("inst-pers-cancel-same", "Signal", "extra")
	e.start(reg(), fastOptions(nil))
	require.Equal(e.t, "got:survived", e.completed("inst-pers-cancel-same"))
	assertOneCancelledOfTwo(e, e.history("inst-pers-cancel-same"), 2)
}

func persistentEventSurvivesSelectCancellationLateExtraDiscarded(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TestOrch", cancelThenDequeue)
	e.start(r, fastOptions(nil))
	e.startOrch("inst-pers-cancel-late", "TestOrch", "")
	e.waitHist("inst-pers-cancel-late", "second QueueSubscribed", func(h []duroxide.Event) bool { return queueSubs(h, "Signal") >= 2 })
	e.enqueue("inst-pers-cancel-late", "Signal", "survived")
	require.Equal(e.t, "got:survived", e.completed("inst-pers-cancel-late"))
	e.enqueue("inst-pers-cancel-late", "Signal", "extra")
	e.waitOrchestratorQueueEmpty()
	time.Sleep(500 * time.Millisecond) // Rust's settle time
	assertOneCancelledOfTwo(e, e.history("inst-pers-cancel-late"), 1)
}

// waitOrchestratorQueueEmpty waits until the orchestrator queue is empty
// when the provider can report it.
func (e *env) waitOrchestratorQueueEmpty() {
	e.t.Helper()
	if a := e.p.Admin(); a != nil {
		e.waitFor("orchestrator queue drained", func() bool {
			d, err := a.QueueDepths(e.ctx)
			return err == nil && d.OrchestratorQueue == 0
		})
	}
}

func persistentAndPositionalAreIndependent(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		pos := durable.WaitEvent[string](ctx, "Signal")
		pers := durable.DequeueEvent[string](ctx, "Signal")
		res := durable.Join(ctx, pos, pers)
		return fmt.Sprintf("pos:%s,pers:%s", res[0].Value, res[1].Value), nil
	})
	e.start(r, fastOptions(nil))
	e.startOrch("inst-pers-indep", "TestOrch", "")
	e.waitHist("inst-pers-indep", "subscriptions", func(h []duroxide.Event) bool {
		return hasKind[duroxide.ExternalSubscribed](h, nil) && queueSubs(h, "Signal") == 1
	})
	e.raise("inst-pers-indep", "Signal", "positional_data")
	e.enqueue("inst-pers-indep", "Signal", "persistent_data")
	require.Equal(e.t, "pos:positional_data,pers:persistent_data", e.completed("inst-pers-indep"))
}

func persistentCancelledSubscriptionEmitsBreadcrumb(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		w := durable.DequeueEvent[string](ctx, "Signal")
		if ctx.Select(w, durable.NewTimer(ctx, 50*time.Millisecond)) == 0 {
			return "unexpected", nil
		}
		return "timer_won", nil
	})
	e.start(r, fastOptions(nil))
	e.startOrch("inst-pers-breadcrumb", "TestOrch", "")
	require.Equal(e.t, "timer_won", e.completed("inst-pers-breadcrumb"))
	require.Equal(e.t, 1, queueCancelled(e.history("inst-pers-breadcrumb"), "dropped_future"))
}

func persistentOutstandingSubscriptionCancelledOnCompletion(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_ = durable.DequeueEvent[string](ctx, "NeverResolved")
		_, _ = durable.NewTimer(ctx, 50*time.Millisecond).Await()
		return "done_early", nil
	})
	e.start(r, fastOptions(nil))
	e.startOrch("inst-pers-terminal", "TestOrch", "")
	require.Equal(e.t, "done_early", e.completed("inst-pers-terminal"))
	h := e.history("inst-pers-terminal")
	require.Equal(e.t, 1, queueSubs(h, "NeverResolved"), "Missing QueueSubscribed event")
	require.True(e.t, queueCancelled(h, "dropped_future")+queueCancelled(h, "orchestration_terminal") > 0,
		"Missing QueueSubscriptionCancelled breadcrumb for outstanding subscription")
}

func persistentMultipleCancelledSubscriptionsOnlyActiveReceives(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		for i := 1; i <= 2; i++ {
			w := durable.DequeueEvent[string](ctx, "Signal")
			if ctx.Select(w, durable.NewTimer(ctx, 30*time.Millisecond)) == 0 {
				return fmt.Sprintf("unexpected%d", i), nil
			}
		}
		d, _ := durable.DequeueEvent[string](ctx, "Signal").Await()
		return "got:" + d, nil
	})
	e.start(r, fastOptions(nil))
	e.startOrch("inst-pers-multi-cancel", "TestOrch", "")
	e.waitHist("inst-pers-multi-cancel", "third subscription", func(h []duroxide.Event) bool { return queueSubs(h, "Signal") == 3 })
	e.enqueue("inst-pers-multi-cancel", "Signal", "winner")
	require.Equal(e.t, "got:winner", e.completed("inst-pers-multi-cancel"))
	require.Equal(e.t, 2, queueCancelled(e.history("inst-pers-multi-cancel"), "dropped_future"))
}

func complexMultiTurnPersistentAndPositionalWithActivities(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Echo", func(_ durable.ActivityContext, in string) (string, error) { return "echo:" + in, nil })
	orch(e.t, r, "ComplexOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		var res []string
		pos1, _ := durable.WaitEvent[string](ctx, "PosFirst").Await()
		res = append(res, "pos1:"+pos1)
		a1, err := durable.CallActivity[string](ctx, "Echo", "step2").Await()
		if err != nil {
			return "", err
		}
		res = append(res, a1)
		p1, _ := durable.DequeueEvent[string](ctx, "PersA").Await()
		res = append(res, "pers1:"+p1)
		a2, err := durable.CallActivity[string](ctx, "Echo", "step3").Await()
		if err != nil {
			return "", err
		}
		res = append(res, a2)
		doomed := durable.WaitEvent[string](ctx, "PosDoomed")
		if ctx.Select(doomed, durable.NewTimer(ctx, 50*time.Millisecond)) == 0 {
			d, _ := doomed.Await()
			res = append(res, "pos_doomed_unexpected:"+d)
		} else {
			res = append(res, "pos_cancelled")
		}
		p2, _ := durable.DequeueEvent[string](ctx, "PersB").Await()
		res = append(res, "pers2:"+p2)
		a3, err := durable.CallActivity[string](ctx, "Echo", "step4").Await()
		if err != nil {
			return "", err
		}
		res = append(res, a3)
		p3, _ := durable.DequeueEvent[string](ctx, "PersC").Await()
		res = append(res, "pers3:"+p3)
		return strings.Join(res, ","), nil
	})
	e.start(r, fastOptions(nil))
	const id = "inst-complex-multi"
	e.startOrch(id, "ComplexOrch", "")
	require.True(e.t, e.waitSubscription(id, "PosFirst"))
	e.raise(id, "PosFirst", "alpha")
	require.True(e.t, e.waitSubscription(id, "PersA"))
	e.enqueue(id, "PersA", "beta")
	require.True(e.t, e.waitSubscription(id, "PersB"))
	e.enqueue(id, "PersB", "gamma")
	require.True(e.t, e.waitSubscription(id, "PersC"))
	e.enqueue(id, "PersC", "delta")
	require.Equal(e.t, "pos1:alpha,echo:step2,pers1:beta,echo:step3,pos_cancelled,pers2:gamma,echo:step4,pers3:delta", e.completed(id))
	h := e.history(id)
	require.True(e.t, hasKind(h, func(k duroxide.ExternalSubscribedCancelled) bool { return k.Reason == "dropped_future" }))
	require.Equal(e.t, 0, queueCancelled(h, ""))
}

func selectThenJoinPersistentAndPositional(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TestOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		var res []string
		pos := durable.WaitEvent[string](ctx, "RacePos")
		pers := durable.DequeueEvent[string](ctx, "RacePers")
		if ctx.Select(pos, pers) == 0 {
			d, _ := pos.Await()
			res = append(res, "select_pos:"+d)
		} else {
			d, _ := pers.Await()
			res = append(res, "select_pers:"+d)
		}
		j := durable.Join(ctx, durable.WaitEvent[string](ctx, "JoinPos"), durable.DequeueEvent[string](ctx, "JoinPers"))
		res = append(res, "join_pos:"+j[0].Value, "join_pers:"+j[1].Value)
		return strings.Join(res, ","), nil
	})
	e.start(r, fastOptions(nil))
	const id = "inst-sel-join"
	e.startOrch(id, "TestOrch", "")
	require.True(e.t, e.waitSubscription(id, "RacePers"))
	e.enqueue(id, "RacePers", "fast")
	require.True(e.t, e.waitSubscription(id, "JoinPos"))
	e.raise(id, "JoinPos", "left")
	e.enqueue(id, "JoinPers", "right")
	require.Equal(e.t, "select_pers:fast,join_pos:left,join_pers:right", e.completed(id))
	h := e.history(id)
	require.True(e.t, hasKind(h, func(k duroxide.ExternalSubscribedCancelled) bool { return k.Reason == "dropped_future" }))
	require.Equal(e.t, 0, queueCancelled(h, ""), "No persistent subscriptions should be cancelled")
}

type typedPayload struct {
	ID  uint32 `json:"id"`
	Msg string `json:"msg"`
}

func raiseEventTypedRoundTrip(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TypedWait", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		p, err := durable.WaitEvent[typedPayload](ctx, "Signal").Await()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("id=%d,msg=%s", p.ID, p.Msg), nil
	})
	e.start(r, nil)
	e.startOrch("inst-typed-wait", "TypedWait", "")
	require.True(e.t, e.waitSubscription("inst-typed-wait", "Signal"))
	require.NoError(e.t, e.client().RaiseEvent(e.ctx, "inst-typed-wait", "Signal", typedPayload{ID: 42, Msg: "hello"}))
	require.Equal(e.t, "id=42,msg=hello", e.completed("inst-typed-wait"))
}

type typedCommand struct {
	Action string `json:"action"`
	Value  int64  `json:"value"`
}

func enqueueEventTypedRoundTrip(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TypedQueue", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		c, err := durable.DequeueEvent[typedCommand](ctx, "commands").Await()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s:%d", c.Action, c.Value), nil
	})
	e.start(r, nil)
	e.startOrch("inst-typed-queue", "TypedQueue", "")
	require.True(e.t, e.waitSubscription("inst-typed-queue", "commands"))
	require.NoError(e.t, e.client().EnqueueEvent(e.ctx, "inst-typed-queue", "commands", typedCommand{Action: "increment", Value: 99}))
	require.Equal(e.t, "increment:99", e.completed("inst-typed-queue"))
}

func multiQueueIsolationAndIndependentFIFO(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "MultiQueue", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		var v []string
		for _, q := range []string{"orders", "orders", "payments", "payments", "notifications"} {
			d, _ := durable.DequeueEvent[string](ctx, q).Await()
			v = append(v, d)
		}
		return fmt.Sprintf("%s,%s|%s,%s|%s", v[0], v[1], v[2], v[3], v[4]), nil
	})
	e.start(r, fastOptions(nil))
	e.startOrch("inst-multi-q", "MultiQueue", "")
	for _, m := range [][2]string{{"payments", "pay_first"}, {"orders", "order_first"}, {"notifications", "alert_1"}, {"orders", "order_second"}, {"payments", "pay_second"}} {
		e.enqueue("inst-multi-q", m[0], m[1])
	}
	require.Equal(e.t, "order_first,order_second|pay_first,pay_second|alert_1", e.completed("inst-multi-q"))
}

func multiQueueStaggeredDelivery(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Noop", func(durable.ActivityContext, string) (string, error) { return "ok", nil })
	orch(e.t, r, "StaggeredQ", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		c1, _ := durable.DequeueEvent[string](ctx, "commands").Await()
		if _, err := durable.CallActivity[string](ctx, "Noop", "x").Await(); err != nil {
			return "", err
		}
		s1, _ := durable.DequeueEvent[string](ctx, "status").Await()
		c2, _ := durable.DequeueEvent[string](ctx, "commands").Await()
		s2, _ := durable.DequeueEvent[string](ctx, "status").Await()
		return fmt.Sprintf("cmd:%s,%s|stat:%s,%s", c1, c2, s1, s2), nil
	})
	e.start(r, fastOptions(nil))
	const id = "inst-staggered-q"
	e.startOrch(id, "StaggeredQ", "")
	e.enqueue(id, "commands", "c1")
	e.enqueue(id, "commands", "c2")
	e.enqueue(id, "status", "s1")
	require.True(e.t, e.waitSubscription(id, "status"))
	e.enqueue(id, "status", "s2")
	require.Equal(e.t, "cmd:c1,c2|stat:s1,s2", e.completed(id))
}

func eventsEnqueuedBeforeStartOrchestrationAreDropped(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "OrphanTest", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ev := durable.DequeueEvent[string](ctx, "pre-start-q")
		if ctx.Select(ev, durable.NewTimer(ctx, 500*time.Millisecond)) == 0 {
			d, _ := ev.Await()
			return "unexpected:" + d, nil
		}
		return "timeout_as_expected", nil
	})
	e.start(r, fastOptions(nil))
	// Straight to the provider: the client refuses a missing instance
	// (ErrInstanceNotFound); the provider's orphan rule is under test.
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.QueueMessageItem{
		Instance: "inst-orphan", Name: "pre-start-q", Data: "should-be-dropped"}, 0))
	// The runtime drops the orphan message; wait for that where the
	// provider reports queue depths, as well as Rust's 200 ms.
	e.waitOrchestratorQueueEmpty()
	time.Sleep(200 * time.Millisecond)
	e.startOrch("inst-orphan", "OrphanTest", "")
	require.Equal(e.t, "timeout_as_expected", e.completed("inst-orphan"), "Pre-start event should have been dropped; dequeue should have timed out")
}
