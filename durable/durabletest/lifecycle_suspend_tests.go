package durabletest

import (
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// The suspend and resume cases of the lifecycle module (lifecycleTests).

// suspendable is "Steps": it waits for event "go", runs activity Step
// (counted), waits on a 50 ms timer, then for event "go" again.
func suspendable(e *env, steps *atomic.Int32) *durable.Registry {
	r := durable.NewRegistry()
	counted(e, r, "Step", steps, nil)
	orch(e.t, r, "Steps", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		first, err := durable.WaitEvent[string](ctx, "go").Await()
		if err != nil {
			return "", err
		}
		v, err := durable.CallActivity[string](ctx, "Step", in+first).Await()
		if err != nil {
			return "", err
		}
		if _, err := durable.NewTimer(ctx, 50*time.Millisecond).Await(); err != nil {
			return "", err
		}
		second, err := durable.WaitEvent[string](ctx, "go").Await()
		return v + ":" + second, err
	})
	return r
}

// waitState waits until instance's status is state.
func (e *env) waitState(instance string, state durable.State) *durable.OrchestrationStatus {
	e.t.Helper()
	var st *durable.OrchestrationStatus
	e.waitFor(instance+" "+state.String(), func() bool {
		var err error
		st, err = e.client().Status(e.ctx, instance)
		return err == nil && st.State == state
	})
	return st
}

// suspend suspends instance for reason and waits until its status says
// so.
func (e *env) suspend(instance, reason string) *durable.OrchestrationStatus {
	e.t.Helper()
	require.NoError(e.t, e.client().Suspend(e.ctx, instance, reason))
	return e.waitState(instance, durable.StateSuspended)
}

// requireNoTurn requires that instance's history does not grow while
// the runtime keeps polling: each check waits for the runtime's own idle
// poll to pass, by starting and completing another instance.
func (e *env) requireNoTurn(instance string, probe func()) {
	e.t.Helper()
	before := len(e.history(instance))
	probe()
	require.Len(e.t, e.history(instance), before, "a suspended instance took a turn: %s", kinds(e.history(instance)))
}

func suspendedInstanceTakesNoTurnsUntilResumed(e *env) {
	var steps atomic.Int32
	r := suspendable(e, &steps)
	orch(e.t, r, "Probe", func(*durable.OrchestrationContext, string) (string, error) { return "probe", nil })
	e.start(r, fastOptions(nil))
	const instance = "suspend-steps"
	e.startOrch(instance, "Steps", "in")
	e.waitSubscription(instance, "go")
	st := e.suspend(instance, "maintenance")
	require.Equal(e.t, "maintenance", st.SuspendedReason)
	require.False(e.t, st.IsTerminal())
	e.waitFor("a search by the suspended state to find it", func() bool {
		page, err := e.client().Search(e.ctx, duroxide.InstanceQuery{States: []duroxide.InstanceState{duroxide.InstanceSuspended}})
		return err == nil && len(page.Instances) == 1 && page.Instances[0].InstanceID == instance &&
			page.Instances[0].State == duroxide.InstanceSuspended
	})
	e.raise(instance, "go", "1")
	probes := 0
	e.requireNoTurn(instance, func() {
		for range 3 {
			probes++
			id := "probe-" + string(rune('a'+probes))
			e.startOrch(id, "Probe", "")
			require.Equal(e.t, "probe", e.completed(id))
		}
	})
	require.Zero(e.t, steps.Load(), "no turn: the activity was not scheduled")
	require.NoError(e.t, e.client().Resume(e.ctx, instance, "done"))
	e.waitFor("the held event to run the activity", func() bool { return steps.Load() == 1 })
	// Suspended again while the timer runs: it fires, and waits.
	e.waitHist(instance, "the timer", anyKind[duroxide.TimerCreated])
	e.suspend(instance, "again")
	e.requireNoTurn(instance, func() {
		e.startOrch("probe-timer", "Probe", "")
		require.Equal(e.t, "probe", e.completed("probe-timer"))
	})
	require.NoError(e.t, e.client().Resume(e.ctx, instance, ""))
	e.raiseOnSecondWait(instance, "2")
	require.Equal(e.t, "Step(in1):2", e.completed(instance))
}

// raiseOnSecondWait raises "go" once the orchestration waits for it a
// second time (an event raised before its wait is dropped).
func (e *env) raiseOnSecondWait(instance, data string) {
	e.t.Helper()
	e.waitHist(instance, "the second wait", func(h []duroxide.Event) bool { return countKind[duroxide.ExternalSubscribed](h) == 2 })
	e.raise(instance, "go", data)
}

func suspensionOutlastsTheRuntime(e *env) {
	var steps atomic.Int32
	rt := e.start(suspendable(e, &steps), fastOptions(nil))
	const instance = "suspend-restart"
	e.startOrch(instance, "Steps", "in")
	e.waitSubscription(instance, "go")
	e.suspend(instance, "across restarts")
	shutdownRuntime(e, rt)
	e.raise(instance, "go", "1")
	var probe atomic.Int32
	r := suspendable(e, &steps)
	counted(e, r, "Probe", &probe, nil)
	orch(e.t, r, "Probe", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallActivity[string](ctx, "Probe", in).Await()
	})
	e.start(r, fastOptions(nil))
	e.requireNoTurn(instance, func() {
		e.startOrch("suspend-restart-probe", "Probe", "x")
		require.Equal(e.t, "Probe(x)", e.completed("suspend-restart-probe"))
	})
	st := e.waitState(instance, durable.StateSuspended)
	require.Equal(e.t, "across restarts", st.SuspendedReason)
	require.NoError(e.t, e.client().Resume(e.ctx, instance, ""))
	e.waitFor("the held event to run the activity", func() bool { return steps.Load() == 1 })
	e.raiseOnSecondWait(instance, "2")
	require.Equal(e.t, "Step(in1):2", e.completed(instance))
}

func cancelEndsASuspendedInstance(e *env) {
	var steps atomic.Int32
	e.start(suspendable(e, &steps), fastOptions(nil))
	const instance = "suspend-cancel"
	e.startOrch(instance, "Steps", "in")
	e.waitSubscription(instance, "go")
	e.suspend(instance, "hold")
	e.cancel(instance, "stop")
	e.waitStatusCancelled(instance)
	// Restarted, it is not suspended.
	e.restart(instance, durable.RestartOptions{}, 2)
	e.waitState(instance, durable.StateRunning)
}

// The event that makes an orchestration continue as new and a
// suspension arrive in one batch: the suspension is the next
// execution's, which is Suspended and Running, so Resume lets it go on.
func suspendTakenWithAContinueAsNewSuspendsTheNextExecution(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Cycler", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		d, err := durable.WaitEvent[string](ctx, "go").Await()
		if err != nil || in != "first" {
			return "done:" + in + ":" + d, err
		}
		return "", durable.ContinueAsNew(ctx, "second")
	})
	const instance = "suspend-continued"
	rt := e.start(r, fastOptions(nil))
	e.startOrch(instance, "Cycler", "first")
	e.waitSubscription(instance, "go")
	shutdownRuntime(e, rt)
	// Both wait for the next runtime, so its first turn takes them together.
	e.raise(instance, "go", "1")
	require.NoError(e.t, e.client().Suspend(e.ctx, instance, "hold"))
	e.start(r, fastOptions(nil))
	st := e.waitState(instance, durable.StateSuspended)
	require.Equal(e.t, "hold", st.SuspendedReason)
	require.NoError(e.t, e.client().Resume(e.ctx, instance, ""), "the suspended execution is the running one")
	e.waitHist(instance, "the next execution to wait", func(h []duroxide.Event) bool {
		return len(h) > 0 && h[0].ExecutionID == 2 && anyKind[duroxide.ExternalSubscribed](h)
	})
	e.raise(instance, "go", "2")
	require.Equal(e.t, "done:second:2", e.completed(instance))
	e.requireExecutions(instance, []uint64{1, 2})
}

// A suspended instance's wake (here the resume) is poisoned: the poison
// fails the instance, which ends its suspension, so the re-drive is not
// held back. The FaultyProvider is no SuspensionReader: suspending goes
// through a client of the provider it wraps.
func poisonedWakeOfASuspendedInstanceEndsItsSuspension(e *env) {
	fp := e.faulty()
	inner := fp.Inner()
	suspender := durable.NewClient(inner)
	e.start(edgeRegistry(e), fastPoisonOptions(10))
	const instance = "suspend-poisoned"
	e.startOrch(instance, "Echo", "in")
	e.waitSubscription(instance, "go")
	require.NoError(e.t, suspender.Suspend(e.ctx, instance, "hold"))
	e.waitFor("the suspension", func() bool {
		st, err := suspender.Status(e.ctx, instance)
		return err == nil && st.State == durable.StateSuspended
	})
	fp.InjectOrchestrationAttempts(11) // the next batch fetched: the resume's
	require.NoError(e.t, suspender.Resume(e.ctx, instance, ""))
	e.requirePoisonedOrchestration(instance)
	suspended, _, err := inner.(duroxide.SuspensionReader).Suspension(e.ctx, instance)
	require.NoError(e.t, err)
	require.False(e.t, suspended, "an instance that ended is not suspended")
	e.redrive(instance)
	e.waitSubscription(instance, "go")
	e.raise(instance, "go", "d")
	require.Equal(e.t, "echo:in:d", e.completed(instance))
}

func suspendAndResumeRefuseTheWrongState(e *env) {
	e.start(edgeRegistry(e), fastOptions(nil))
	require.ErrorIs(e.t, e.client().Suspend(e.ctx, "suspend-missing", ""), durable.ErrInstanceNotFound)
	require.ErrorIs(e.t, e.client().Resume(e.ctx, "suspend-missing", ""), durable.ErrInstanceNotFound)
	const instance = "suspend-states"
	e.startOrch(instance, "Echo", "in")
	e.waitRunning(instance)
	require.ErrorIs(e.t, e.client().Resume(e.ctx, instance, ""), durable.ErrInvalidState, "not suspended")
	e.suspend(instance, "x")
	require.ErrorIs(e.t, e.client().Suspend(e.ctx, instance, "y"), durable.ErrInvalidState, "already suspended")
	require.NoError(e.t, e.client().Resume(e.ctx, instance, ""))
	e.waitState(instance, durable.StateRunning)
	e.raise(instance, "go", "d")
	require.Equal(e.t, "echo:in:d", e.completed(instance))
	require.ErrorIs(e.t, e.client().Suspend(e.ctx, instance, ""), durable.ErrInvalidState, "completed")
}
