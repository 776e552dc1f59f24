package durabletest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// futuresTests ports tests/futures_tests.rs.
func futuresTests() []sample {
	return []sample{
		{"select2_two_externals_first_delivery_wins", select2TwoExternalsFirstDeliveryWins},
		{"select3_mixed_branch_order_winner", select3MixedBranchOrderWinner},
		{"join_returns_schedule_order", joinReturnsScheduleOrder},
		{"test_select2_loser_event_consumed_during_replay", testSelect2LoserEventConsumedDuringReplay},
		{"test_select2_schedule_after_winner_returns", testSelect2ScheduleAfterWinnerReturns},
		{"simplified_futures_unawaited_completion_does_not_block", simplifiedFuturesUnawaitedCompletionDoesNotBlock},
	}
}

// raceExternals runs fn, waits for subscriptions A and B, stops the
// runtime, enqueues B then A, restarts and returns the completed history.
func (e *env) raceExternals(instance, name string, fn durable.OrchestrationFunc) []duroxide.Event {
	e.t.Helper()
	reg := func() *durable.Registry {
		r := durable.NewRegistry()
		orch(e.t, r, name, fn)
		return r
	}
	stop := e.startManual(reg(), nil)
	e.startOrch(instance, name, "")
	e.waitHist(instance, "subscriptions A and B", func(h []duroxide.Event) bool { return hasKind(h, extSub("A")) && hasKind(h, extSub("B")) })
	stop()
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.ExternalRaisedItem{Instance: instance, Name: "B", Data: "vb"}, 0))
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.ExternalRaisedItem{Instance: instance, Name: "A", Data: "va"}, 0))
	e.start(reg(), nil)
	return e.waitHist(instance, "completion", func(h []duroxide.Event) bool { return hasKind[duroxide.OrchestrationCompleted](h, nil) })
}

// requireBFirstAndWins checks B's event precedes A's and B won.
func requireBFirstAndWins(e *env, h []duroxide.Event) {
	e.t.Helper()
	bi, ai := -1, -1
	for i, ev := range h {
		if k, ok := ev.Kind.(duroxide.ExternalEvent); ok {
			if k.Name == "B" && bi < 0 {
				bi = i
			}
			if k.Name == "A" && ai < 0 {
				ai = i
			}
		}
	}
	require.GreaterOrEqual(e.t, bi, 0, "expected ExternalEvent B in history: %s", kinds(h))
	if ai >= 0 {
		require.Less(e.t, bi, ai, "expected B before A in history order")
	}
	k, ok := h[len(h)-1].Kind.(duroxide.OrchestrationCompleted)
	require.True(e.t, ok)
	require.Equal(e.t, "B:vb", k.Output, "expected B to win since it is delivered first (history order)")
}

func select2TwoExternalsFirstDeliveryWins(e *env) {
	h := e.raceExternals("inst-ab2", "ABSelect2", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		a, b := durable.WaitEvent[string](ctx, "A"), durable.WaitEvent[string](ctx, "B")
		if ctx.Select(a, b) == 0 {
			v, _ := a.Await()
			return "A:" + v, nil
		}
		v, _ := b.Await()
		return "B:" + v, nil
	})
	requireBFirstAndWins(e, h)
}

func select3MixedBranchOrderWinner(e *env) {
	h := e.raceExternals("inst-atb", "ATBSelect", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		a := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
			return durable.WaitEvent[string](ctx, "A").Await()
		})
		t := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
			_, err := durable.NewTimer(ctx, 500*time.Millisecond).Await()
			return "", err
		})
		b := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
			return durable.WaitEvent[string](ctx, "B").Await()
		})
		switch ctx.Select(a, t, b) {
		case 0:
			v, _ := a.Await()
			return "A:" + v, nil
		case 1:
			return "T", nil
		}
		v, _ := b.Await()
		return "B:" + v, nil
	})
	requireBFirstAndWins(e, h)
}

func joinReturnsScheduleOrder(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Delay", func(_ durable.ActivityContext, in string) (string, error) {
		var v [2]json.RawMessage
		if err := json.Unmarshal([]byte(in), &v); err != nil {
			return "", err
		}
		var name string
		var ms int
		_ = json.Unmarshal(v[0], &name)
		_ = json.Unmarshal(v[1], &ms)
		time.Sleep(time.Duration(ms) * time.Millisecond)
		return name, nil
	})
	orch(e.t, r, "JoinAB", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		a := durable.CallActivity[string](ctx, "Delay", `["A",100]`)
		b := durable.CallActivity[string](ctx, "Delay", `["B",10]`)
		var outs []string
		for _, o := range durable.Join(ctx, a, b) {
			if o.Err != nil {
				outs = append(outs, o.Err.Error())
			} else {
				outs = append(outs, o.Value)
			}
		}
		return strings.Join(outs, ","), nil
	})
	e.start(r, nil)
	e.startOrch("inst-join", "JoinAB", "")
	require.Equal(e.t, "A,B", e.completed("inst-join"), "join should return results in schedule order")
}

func testSelect2LoserEventConsumedDuringReplay(e *env) {
	var attempts atomic.Uint32
	r := durable.NewRegistry()
	act(e.t, r, "FastFailActivity", func(durable.ActivityContext, string) (string, error) {
		return "", fmt.Errorf("fast failure on attempt %d", attempts.Add(1))
	})
	orch(e.t, r, "SelectLoserOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		timer1 := durable.NewTimer(ctx, 500*time.Millisecond)
		a1 := durable.CallActivity[string](ctx, "FastFailActivity", "")
		if ctx.Select(a1, timer1) != 0 {
			return "", fmt.Errorf("timer won unexpectedly")
		}
		_, err := a1.Await()
		if err == nil {
			return "unexpected success", nil
		}
		_, err2 := durable.CallActivity[string](ctx, "FastFailActivity", "").Await()
		return fmt.Sprintf("first: %s, second: Err(%q)", err.Error(), err2.Error()), nil
	})
	e.start(r, nil)
	e.startOrch("select-loser-1", "SelectLoserOrch", "")
	require.Contains(e.t, e.completed("select-loser-1"), "first:")
	require.EqualValues(e.t, 2, attempts.Load())
	time.Sleep(600 * time.Millisecond) // let the loser timer fire (Rust waits 600 ms)
	h := e.history("select-loser-1")
	require.Equal(e.t, 1, countKind[duroxide.TimerCreated](h), "expected 1 loser timer scheduled")
	require.LessOrEqual(e.t, countKind[duroxide.TimerFired](h), 1)
	require.True(e.t, hasKind[duroxide.OrchestrationCompleted](h, nil))
}

func testSelect2ScheduleAfterWinnerReturns(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Instant", func(durable.ActivityContext, string) (string, error) { return "done", nil })
	orch(e.t, r, "MinimalOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		timer := durable.NewTimer(ctx, time.Second)
		a := durable.CallActivity[string](ctx, "Instant", "")
		if ctx.Select(a, timer) != 0 {
			return "", fmt.Errorf("timer won unexpectedly")
		}
		return durable.CallActivity[string](ctx, "Instant", "").Await()
	})
	e.start(r, nil)
	e.startOrch("minimal-1", "MinimalOrch", "")
	require.Equal(e.t, "done", e.completed("minimal-1"))
}

func simplifiedFuturesUnawaitedCompletionDoesNotBlock(e *env) {
	var aCount, bCount atomic.Int32
	r := durable.NewRegistry()
	act(e.t, r, "ActivityA", func(_ durable.ActivityContext, in string) (string, error) {
		aCount.Add(1)
		time.Sleep(5 * time.Millisecond)
		return "A:" + in, nil
	})
	act(e.t, r, "ActivityB", func(_ durable.ActivityContext, in string) (string, error) {
		bCount.Add(1)
		time.Sleep(200 * time.Millisecond)
		return "B:" + in, nil
	})
	orch(e.t, r, "UnawaitedFirst", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		af := durable.CallActivity[string](ctx, "ActivityA", "first")
		b, err := durable.CallActivity[string](ctx, "ActivityB", "second").Await()
		if err != nil {
			return "", err
		}
		a, err := af.Await()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("B=%s,A=%s", b, a), nil
	})
	e.start(r, conc(1, 2))
	e.startOrch("unawaited-first-1", "UnawaitedFirst", "")
	out := e.completed("unawaited-first-1")
	require.Contains(e.t, out, "B=B:second")
	require.Contains(e.t, out, "A=A:first")
	require.EqualValues(e.t, 1, aCount.Load(), "A should run once")
	require.EqualValues(e.t, 1, bCount.Load(), "B should run once")
	var aID, bID uint64
	for _, ev := range e.history("unawaited-first-1") {
		if k, ok := ev.Kind.(duroxide.ActivityScheduled); ok {
			switch k.Name {
			case "ActivityA":
				aID = ev.EventID
			case "ActivityB":
				bID = ev.EventID
			}
		}
	}
	require.True(e.t, aID != 0 && bID != 0 && aID < bID, "A should be scheduled before B: A=%d, B=%d", aID, bID)
}
