package durabletest

import (
	"fmt"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// recoveryTests ports tests/recovery_tests.rs. Rust reopens a SQLite file
// with a second provider; here the second runtime runs on the same
// provider object (the store outlives the first runtime, as the file
// does), and "a fresh in-memory database" is a second store from the
// factory.
func recoveryTests() []sample {
	return []sample{
		{name: "recovery_across_restart_sqlite_provider", run: recoveryAcrossRestartSameStore},
		{name: "recovery_across_restart_sqlite_memory", run: recoveryAcrossRestartFreshStores},
		{name: "recovery_multiple_orchestrations_sqlite_provider", run: recoveryMultipleOrchestrations},
	}
}

func recoveryRegistry(e *env) *durable.Registry {
	r := durable.NewRegistry()
	act(e.t, r, "Step", func(_ durable.ActivityContext, in string) (string, error) { return in, nil })
	orch(e.t, r, "RecoveryTest", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		s1, err := durable.CallActivity[string](ctx, "Step", "1").Await()
		if err != nil {
			return "", err
		}
		s2, err := durable.CallActivity[string](ctx, "Step", "2").Await()
		if err != nil {
			return "", err
		}
		if _, err := durable.WaitEvent[string](ctx, "Resume").Await(); err != nil {
			return "", err
		}
		s3, err := durable.CallActivity[string](ctx, "Step", "3").Await()
		if err != nil {
			return "", err
		}
		s4, err := durable.CallActivity[string](ctx, "Step", "4").Await()
		if err != nil {
			return "", err
		}
		return s1 + s2 + s3 + s4, nil
	})
	return r
}

// countStep counts ActivityScheduled{Step, input} in h.
func countStep(h []duroxide.Event, name, input string) int {
	return countEvents(h, func(ev duroxide.Event) bool {
		k, ok := ev.Kind.(duroxide.ActivityScheduled)
		return ok && k.Name == name && k.Input == input
	})
}

// recoveryAcrossRestartCore is Rust's recovery_across_restart_core: run
// until the instance waits for "Resume", stop the runtime, start a second
// one on store2, start the instance again and raise "Resume".
func recoveryAcrossRestartCore(e *env, store1, store2 duroxide.Provider, instance string) {
	reg := recoveryRegistry(e)
	rt1 := e.startOn(store1, reg, nil)
	c1 := durable.NewClient(store1)
	require.NoError(e.t, c1.StartOrchestration(e.ctx, instance, "RecoveryTest", ""))
	on1 := &env{t: e.t, p: store1, ctx: e.ctx}
	require.True(e.t, on1.waitSubscription(instance, "Resume"))
	pre := on1.history(instance)
	require.Equal(e.t, 1, countStep(pre, "Step", "1"))
	require.Equal(e.t, 1, countStep(pre, "Step", "2"))
	require.Equal(e.t, 0, countStep(pre, "Step", "3"))
	shutdownRuntime(e, rt1)

	e.startOn(store2, reg, nil)
	on2 := &env{t: e.t, p: store2, ctx: e.ctx}
	d := on2.raiseWhenSubscribed(instance, "Resume", "go")
	require.NoError(e.t, on2.client().StartOrchestration(e.ctx, instance, "RecoveryTest", ""))
	require.Equal(e.t, "1234", on2.completed(instance))
	<-d
	final := on2.history(instance)
	require.Equal(e.t, 1, countStep(final, "Step", "3"))
	require.Equal(e.t, 1, countStep(final, "Step", "4"))
}

func recoveryAcrossRestartSameStore(e *env) {
	const instance = "inst-recover-sqlite-1"
	recoveryAcrossRestartCore(e, e.p, e.p, instance)
	h := e.history(instance)
	for _, in := range []string{"1", "2", "3", "4"} {
		require.Equal(e.t, 1, countStep(h, "Step", in), "Step %s", in)
	}
}

// Each stage gets its own empty store: the second runtime knows nothing of
// the first's progress and runs the instance from the start; further fresh
// stores hold no trace of it.
func recoveryAcrossRestartFreshStores(e *env) {
	const instance = "inst-recover-mem-1"
	recoveryAcrossRestartCore(e, e.p, e.f.NewProvider(e.t), instance)
	for _, p := range []duroxide.Provider{e.f.NewProvider(e.t), e.f.NewProvider(e.t)} {
		h, err := p.Read(e.ctx, instance)
		if err != nil {
			h = nil // Rust: unwrap_or_default
		}
		require.Equal(e.t, 0, countStep(h, "Step", "1"))
		require.Equal(e.t, 0, countStep(h, "Step", "2"))
	}
}

func recoveryMultipleOrchestrations(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Echo", func(_ durable.ActivityContext, in string) (string, error) { return in, nil })
	act(e.t, r, "Upper", func(_ durable.ActivityContext, in string) (string, error) { return strings.ToUpper(in), nil })
	act(e.t, r, "Add", addInts)
	orch(e.t, r, "EchoWait", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if _, err := durable.CallActivity[string](ctx, "Echo", in).Await(); err != nil {
			return "", err
		}
		// Rust waits 200 ms; the timer must still be pending when the
		// first runtime stops, so it is longer here (the assertion is
		// Rust's: TimerCreated without TimerFired).
		if _, err := durable.NewTimer(ctx, 3*time.Second).Await(); err != nil {
			return "", err
		}
		if _, err := durable.CallActivity[string](ctx, "Echo", in).Await(); err != nil {
			return "", err
		}
		return "done:" + in, nil
	})
	orch(e.t, r, "UpperOnly", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		up, err := durable.CallActivity[string](ctx, "Upper", in).Await()
		return "upper:" + up, err
	})
	orch(e.t, r, "WaitEvent", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if _, err := durable.WaitEvent[string](ctx, "Go").Await(); err != nil {
			return "", err
		}
		echoed, err := durable.CallActivity[string](ctx, "Echo", in).Await()
		return "acked:" + echoed, err
	})
	orch(e.t, r, "ComputeSum", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		sum, err := durable.CallActivity[string](ctx, "Add", in).Await()
		return "sum=" + sum, err
	})
	orch(e.t, r, "TwoTimers", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		// Rust: 150 ms each; the second must be created before the first
		// runtime stops, so only the first is long enough to matter.
		if _, err := durable.NewTimer(ctx, 150*time.Millisecond).Await(); err != nil {
			return "", err
		}
		if _, err := durable.NewTimer(ctx, 150*time.Millisecond).Await(); err != nil {
			return "", err
		}
		if _, err := durable.CallActivity[string](ctx, "Echo", in).Await(); err != nil {
			return "", err
		}
		return "twodone:" + in, nil
	})
	rt1 := e.start(r, nil)
	cases := []struct{ inst, name, input string }{
		{"inst-echo-wait", "EchoWait", "i1"},
		{"inst-upper", "UpperOnly", "hi"},
		{"inst-wait", "WaitEvent", "evt"},
		{"inst-sum", "ComputeSum", "2,3"},
		{"inst-2timers", "TwoTimers", "z"},
	}
	for _, c := range cases {
		e.startOrch(c.inst, c.name, c.input)
	}
	require.True(e.t, e.waitHistory("inst-echo-wait", func(h []duroxide.Event) bool {
		return anyKind[duroxide.TimerCreated](h) && !anyKind[duroxide.TimerFired](h)
	}))
	require.True(e.t, e.waitHistory("inst-upper", anyKind[duroxide.ActivityCompleted]))
	require.True(e.t, e.waitSubscription("inst-wait", "Go"))
	require.True(e.t, e.waitHistory("inst-sum", func(h []duroxide.Event) bool {
		return countEvents(h, func(ev duroxide.Event) bool {
			k, ok := ev.Kind.(duroxide.ActivityScheduled)
			return ok && k.Name == "Add"
		}) > 0 || anyKind[duroxide.ActivityCompleted](h)
	}))
	require.True(e.t, e.waitHistory("inst-2timers", func(h []duroxide.Event) bool {
		return countKind[duroxide.TimerCreated](h) >= 2
	}))
	shutdownRuntime(e, rt1)

	e.start(r, nil)
	d := e.raiseWhenSubscribed("inst-wait", "Go", "ok")
	for _, c := range cases {
		out := e.completed(c.inst)
		var want string
		switch c.name {
		case "EchoWait":
			want = "done:" + c.input
		case "UpperOnly":
			want = "upper:" + strings.ToUpper(c.input)
		case "WaitEvent":
			want = "acked:" + c.input
		case "ComputeSum":
			want = "sum=5"
		case "TwoTimers":
			want = "twodone:" + c.input
		}
		require.Equal(e.t, want, out, fmt.Sprintf("%s output", c.inst))
	}
	<-d
}
