package durabletest

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// concurrencyTests ports tests/concurrency_tests.rs.
func concurrencyTests() []sample {
	return []sample{
		{name: "concurrent_orchestrations_different_activities_fs", run: concurrentOrchestrationsDifferentActivities},
		{name: "concurrent_orchestrations_same_activities_fs", run: concurrentOrchestrationsSameActivities},
		{name: "single_orchestration_with_join_test", run: singleOrchestrationWithJoin},
	}
}

// joinActivityEventTimer is the Rust tests' join of an activity, the
// external event "Go" and a 1 ms timer; it returns the activity's result
// and the event's data.
func joinActivityEventTimer(ctx *durable.OrchestrationContext, activity, input string) (string, string, error) {
	a := durable.CallActivity[string](ctx, activity, input)
	ev := durable.WaitEvent[string](ctx, "Go")
	tm := durable.NewTimer(ctx, time.Millisecond)
	ctx.WaitAll(a, ev, tm)
	av, err := a.Await()
	if err != nil {
		return "", "", fmt.Errorf("activity result not found")
	}
	evv, _ := ev.Await()
	return av, evv, nil
}

// raiseWhenSubscribed raises "Go" on instance once it subscribed.
func (e *env) raiseWhenSubscribed(instance, name, data string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if e.waitSubscription(instance, name) {
			_ = e.client().RaiseEvent(e.ctx, instance, name, data)
		}
	}()
	return done
}

func addInts(_ durable.ActivityContext, in string) (string, error) {
	parts := strings.SplitN(in, ",", 2)
	a, _ := strconv.ParseInt(parts[0], 10, 64)
	var b int64
	if len(parts) > 1 {
		b, _ = strconv.ParseInt(parts[1], 10, 64)
	}
	return strconv.FormatInt(a+b, 10), nil
}

func procPlusOne(_ durable.ActivityContext, in string) (string, error) {
	n, _ := strconv.ParseInt(in, 10, 64)
	return strconv.FormatInt(n+1, 10), nil
}

func activityCompletedWith(h []duroxide.Event, source uint64, result string) bool {
	return countEvents(h, func(ev duroxide.Event) bool {
		k, ok := ev.Kind.(duroxide.ActivityCompleted)
		return ok && k.Result == result && (source == 0 || (ev.SourceEventID != nil && *ev.SourceEventID == source))
	}) > 0
}

func externalEventWith(h []duroxide.Event, data string) bool {
	return countEvents(h, func(ev duroxide.Event) bool {
		k, ok := ev.Kind.(duroxide.ExternalEvent)
		return ok && k.Data == data
	}) > 0
}

func concurrentOrchestrationsDifferentActivities(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Add", addInts)
	act(e.t, r, "Upper", func(_ durable.ActivityContext, in string) (string, error) { return strings.ToUpper(in), nil })
	orch(e.t, r, "AddOrchestration", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		a, ev, err := joinActivityEventTimer(ctx, "Add", "2,3")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("o1:sum=%s;evt=%s", a, ev), nil
	})
	orch(e.t, r, "UpperOrchestration", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		a, ev, err := joinActivityEventTimer(ctx, "Upper", "hi")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("o2:up=%s;evt=%s", a, ev), nil
	})
	e.start(r, nil)
	e.startOrch("inst-multi-1", "AddOrchestration", "")
	e.startOrch("inst-multi-2", "UpperOrchestration", "")
	d1 := e.raiseWhenSubscribed("inst-multi-1", "Go", "E1")
	d2 := e.raiseWhenSubscribed("inst-multi-2", "Go", "E2")
	require.Contains(e.t, e.completed("inst-multi-1"), "o1:sum=5;evt=E1")
	require.Contains(e.t, e.completed("inst-multi-2"), "o2:up=HI;evt=E2")
	<-d1
	<-d2
	h1 := e.executionHistory("inst-multi-1", 1)
	h2 := e.executionHistory("inst-multi-2", 1)
	require.True(e.t, activityCompletedWith(h1, 2, "5"))
	require.True(e.t, activityCompletedWith(h2, 2, "HI"))
	require.True(e.t, externalEventWith(h1, "E1"))
	require.True(e.t, externalEventWith(h2, "E2"))
	require.True(e.t, anyKind[duroxide.TimerFired](h1))
	require.True(e.t, anyKind[duroxide.TimerFired](h2))
}

func concurrentOrchestrationsSameActivities(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Proc", procPlusOne)
	orch(e.t, r, "ProcOrchestration1", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		a, ev, err := joinActivityEventTimer(ctx, "Proc", "10")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("o1:a=%s;evt=%s", a, ev), nil
	})
	orch(e.t, r, "ProcOrchestration2", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if _, err := ctx.NewGUID().Await(); err != nil {
			return "", err
		}
		a, ev, err := joinActivityEventTimer(ctx, "Proc", "20")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("o2:a=%s;evt=%s", a, ev), nil
	})
	e.start(r, nil)
	e.startOrch("inst-same-acts-1", "ProcOrchestration1", "")
	e.startOrch("inst-same-acts-2", "ProcOrchestration2", "")
	d1 := e.raiseWhenSubscribed("inst-same-acts-1", "Go", "P1")
	d2 := e.raiseWhenSubscribed("inst-same-acts-2", "Go", "P2")
	require.Equal(e.t, "o1:a=11;evt=P1", e.completed("inst-same-acts-1"))
	require.Equal(e.t, "o2:a=21;evt=P2", e.completed("inst-same-acts-2"))
	<-d1
	<-d2
	h1 := e.executionHistory("inst-same-acts-1", 1)
	h2 := e.executionHistory("inst-same-acts-2", 1)
	require.True(e.t, activityCompletedWith(h1, 0, "11"))
	require.True(e.t, activityCompletedWith(h2, 0, "21"))
	require.True(e.t, externalEventWith(h1, "P1"))
	require.True(e.t, externalEventWith(h2, "P2"))
	require.True(e.t, anyKind[duroxide.TimerFired](h1))
	require.True(e.t, anyKind[duroxide.TimerFired](h2))
}

func singleOrchestrationWithJoin(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Proc", procPlusOne)
	orch(e.t, r, "ProcOrchestration1", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		a, ev, err := joinActivityEventTimer(ctx, "Proc", "10")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("o1:a=%s;evt=%s", a, ev), nil
	})
	e.start(r, nil)
	e.startOrch("inst-single", "ProcOrchestration1", "")
	d := e.raiseWhenSubscribed("inst-single", "Go", "P1")
	require.Equal(e.t, "o1:a=11;evt=P1", e.completed("inst-single"))
	<-d
}
