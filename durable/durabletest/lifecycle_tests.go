package durabletest

import (
	"errors"
	"sync/atomic"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// lifecycleTests are Go-only: the Client's operations on an instance's
// life (rewind, re-drive, restart), which duroxide does not have.
func lifecycleTests() []sample {
	return append([]sample{
		{"rewind_reruns_the_failed_activity_and_keeps_the_others", rewindRerunsTheFailedActivityAndKeepsTheOthers},
		{"rewind_reruns_a_failed_sub_orchestration", rewindRerunsAFailedSubOrchestration},
		{"rewind_keeps_a_handled_failure_and_its_retry", rewindKeepsAHandledFailureAndItsRetry},
		{"rewind_reaches_a_child_that_outlived_the_failure", rewindReachesAChildThatOutlivedTheFailure},
		{"rewound_parent_gets_the_result_of_a_completed_child_again", rewoundParentGetsTheResultOfACompletedChildAgain},
		{"rewind_is_judged_after_the_cancellation_before_it", rewindIsJudgedAfterTheCancellationBeforeIt},
		{"rewind_reaches_a_running_child_before_the_stale_cancel", rewindReachesARunningChildBeforeTheStaleCancel},
		{"rewind_reaches_a_running_child_with_the_stale_cancel_after_it", rewindReachesARunningChildWithTheStaleCancelAfterIt},
		{"rewind_reaches_a_suspended_running_child", rewindReachesASuspendedRunningChild},
		{"rewind_of_a_superseded_child_keeps_the_parents_request", rewindOfASupersededChildKeepsTheParentsRequest},
		{"rewind_reaches_a_child_the_stale_cancel_failed", rewindReachesAChildTheStaleCancelFailed},
		{"rewound_child_drops_the_stale_cancel_after_its_rewind", rewoundChildDropsTheStaleCancelAfterItsRewind},
		{"rewound_child_drops_the_stale_cancel_in_its_rewind_batch", rewoundChildDropsTheStaleCancelInItsRewindBatch},
		{"rewound_child_leaves_a_cancellation_followed_by_a_completion", rewoundChildLeavesACancellationFollowedByACompletion},
		{"rewind_refuses_instances_that_did_not_fail", rewindRefusesInstancesThatDidNotFail},
		{"rewind_of_a_long_history", rewindOfALongHistory},
		{"rewind_keeps_kv_and_custom_status", rewindKeepsKVAndCustomStatus},
		{"restart_runs_a_terminal_instance_again", restartRunsATerminalInstanceAgain},
		{"restart_refuses_a_running_instance", restartRefusesARunningInstance},
		{"restart_pins_a_version", restartPinsAVersion},
		{"restart_after_a_rewind_is_refused", restartAfterARewindIsRefused},
		{"stale_restart_is_dropped_by_the_runtime", staleRestartIsDroppedByTheRuntime},
		{"cancel_of_an_ended_execution_spares_the_restarted_one", cancelOfAnEndedExecutionSparesTheRestartedOne},
		{"cancel_reaches_the_execution_that_continued_as_new", cancelReachesTheExecutionThatContinuedAsNew},
		{"redrive_delivers_the_poisoned_messages_again", redriveDeliversThePoisonedMessagesAgain},
		{"redrive_reruns_a_poisoned_activity", redriveRerunsAPoisonedActivity},
		{"redrive_starts_an_instance_poisoned_before_its_first_turn", redriveStartsAnInstancePoisonedBeforeItsFirstTurn},
		{"redrive_refuses_a_failure_that_is_not_poison", redriveRefusesAFailureThatIsNotPoison},
		{"suspended_instance_takes_no_turns_until_resumed", suspendedInstanceTakesNoTurnsUntilResumed},
		{"suspension_outlasts_the_runtime", suspensionOutlastsTheRuntime},
		{"cancel_ends_a_suspended_instance", cancelEndsASuspendedInstance},
		{"suspend_taken_with_a_continue_as_new_suspends_the_next_execution", suspendTakenWithAContinueAsNewSuspendsTheNextExecution},
		{"poisoned_wake_of_a_suspended_instance_ends_its_suspension", poisonedWakeOfASuspendedInstanceEndsItsSuspension},
		{"suspend_and_resume_refuse_the_wrong_state", suspendAndResumeRefuseTheWrongState},
	}, restartMessagesTests()...)
}

// counted registers activity name, counting its runs; it fails with
// "broken" until fixed is set (nil: never fails).
func counted(e *env, r *durable.Registry, name string, runs *atomic.Int32, fixed *atomic.Bool) {
	act(e.t, r, name, func(_ durable.ActivityContext, in string) (string, error) {
		runs.Add(1)
		if fixed != nil && !fixed.Load() {
			return "", errors.New("broken")
		}
		return name + "(" + in + ")", nil
	})
}

// requireFailedExecution requires instance's execution exec to have kept
// its failure.
func (e *env) requireFailedExecution(instance string, exec uint64) {
	e.t.Helper()
	h := e.executionHistory(instance, exec)
	require.True(e.t, anyKind[duroxide.OrchestrationFailed](h), "execution %d keeps its failure: %s", exec, kinds(h))
}

// requireBroken waits for instance to fail with the "broken" of an
// activity registered by counted.
func (e *env) requireBroken(instance string) {
	e.t.Helper()
	require.Contains(e.t, e.failed(instance), "broken")
}

// startBroken starts a runtime over r and instance as orchestration
// name with input, and waits for it to fail with "broken".
func (e *env) startBroken(r *durable.Registry, instance, name, input string) {
	e.t.Helper()
	e.start(r, fastOptions(nil))
	e.startOrch(instance, name, input)
	e.requireBroken(instance)
}

// fixAndRewind sets fixed, rewinds instance (failed in its first
// execution) with o, and waits for the second execution the rewind
// starts.
func (e *env) fixAndRewind(instance string, fixed *atomic.Bool, o durable.RewindOptions) {
	e.t.Helper()
	fixed.Store(true)
	require.NoError(e.t, e.client().Rewind(e.ctx, instance, o))
	e.waitExecutions(instance, 2)
}

func rewindRerunsTheFailedActivityAndKeepsTheOthers(e *env) {
	var a, b, c atomic.Int32
	var fixed atomic.Bool
	r := durable.NewRegistry()
	counted(e, r, "A", &a, nil)
	counted(e, r, "B", &b, nil)
	counted(e, r, "C", &c, &fixed)
	orch(e.t, r, "ABC", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		out := in
		for _, name := range []string{"A", "B", "C"} {
			v, err := durable.CallActivity[string](ctx, name, out).Await()
			if err != nil {
				return "", err
			}
			out = v
		}
		return out, nil
	})
	const instance = "rewind-abc"
	e.startBroken(r, instance, "ABC", "x")
	e.fixAndRewind(instance, &fixed, durable.RewindOptions{Reason: "C fixed"})
	require.Equal(e.t, "C(B(A(x)))", e.completed(instance))
	require.Equal(e.t, int32(1), a.Load(), "A succeeded before the failure: not run again")
	require.Equal(e.t, int32(1), b.Load(), "B succeeded before the failure: not run again")
	require.Equal(e.t, int32(2), c.Load(), "C failed: run again")
	e.requireExecutions(instance, []uint64{1, 2})
	e.requireFailedExecution(instance, 1)
	h := e.executionHistory(instance, 2)
	require.Equal(e.t, 3, countKind[duroxide.ActivityScheduled](h), "the new execution holds the three schedules once: %s", kinds(h))
	require.Zero(e.t, countKind[duroxide.ActivityFailed](h), "the failure is not part of the new execution: %s", kinds(h))
	// Rewinding again: the instance no longer failed.
	require.ErrorIs(e.t, e.client().Rewind(e.ctx, instance, durable.RewindOptions{}), durable.ErrInvalidState)
}

func rewindRerunsAFailedSubOrchestration(e *env) {
	var a, x atomic.Int32
	var fixed atomic.Bool
	r := durable.NewRegistry()
	counted(e, r, "A", &a, nil)
	counted(e, r, "X", &x, &fixed)
	orch(e.t, r, "Child", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallActivity[string](ctx, "X", in).Await()
	})
	orch(e.t, r, "Parent", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		v, err := durable.CallActivity[string](ctx, "A", in).Await()
		if err != nil {
			return "", err
		}
		return durable.CallSubOrchestration[string](ctx, "Child", v).Await()
	})
	const instance = "rewind-parent"
	e.startBroken(r, instance, "Parent", "p")
	e.fixAndRewind(instance, &fixed, durable.RewindOptions{})
	require.Equal(e.t, "X(A(p))", e.completed(instance))
	require.Equal(e.t, int32(1), a.Load(), "A is kept")
	require.Equal(e.t, int32(2), x.Load(), "the child's failed activity ran again")
	child := instance + "::" + e.childInstanceOf(instance) // an auto id, relative to the parent
	e.requireExecutions(child, []uint64{1, 2}, "the child was rewound too")
	e.requireFailedExecution(child, 1)
}

// The parent fails while its child still waits for an event; the
// parent's end cancels the child ("parent dropped sub-orchestration
// future"). Rewinding the parent rewinds the child too, which waits
// again and reports to the parent's new execution.
func rewindReachesAChildThatOutlivedTheFailure(e *env) {
	var a atomic.Int32
	var fixed atomic.Bool
	r := durable.NewRegistry()
	counted(e, r, "A", &a, &fixed)
	orch(e.t, r, "Waiter", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		d, err := durable.WaitEvent[string](ctx, "go").Await()
		return "waited(" + in + d + ")", err
	})
	orch(e.t, r, "Parent", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		child := durable.CallSubOrchestration[string](ctx, "Waiter", in)
		v, err := durable.CallActivity[string](ctx, "A", in).Await()
		if err != nil {
			return "", err
		}
		c, err := child.Await()
		return v + "+" + c, err
	})
	const instance = "rewind-outlived"
	e.startBroken(r, instance, "Parent", "p")
	child := instance + "::" + e.childInstanceOf(instance)
	e.waitStatusCancelled(child)
	e.fixAndRewind(instance, &fixed, durable.RewindOptions{})
	e.waitExecutions(child, 2)
	e.waitFor("the rewound child to wait again", func() bool {
		h := e.history(child)
		return len(h) > 0 && h[0].ExecutionID == 2 && anyKind[duroxide.ExternalSubscribed](h)
	})
	e.raise(child, "go", "!")
	require.Equal(e.t, "A(p)+waited(p!)", e.completed(instance))
	require.Equal(e.t, int32(2), a.Load())
	_, started, ok := findKind[duroxide.OrchestrationStarted](e.executionHistory(child, 2))
	require.True(e.t, ok)
	require.Equal(e.t, u64p(2), started.ParentExecutionID, "the rewound child reports to the parent's new execution")
}

// A child completed after its parent failed, so its result went to the
// failed execution. The rewound parent asks it to rewind (a
// RewindInstanceItem naming the parent's new execution); a completed
// child answers with its result again. Seeded: parent execution 1 waits
// for child "outlived-child", which completed.
func rewoundParentGetsTheResultOfACompletedChildAgain(e *env) {
	const parent, child = "outlived-parent", "outlived-child"
	ev := func(instance string, id uint64, source *uint64, k duroxide.EventKind) duroxide.Event {
		return seedEvent(instance, 1, id, source, k)
	}
	e.seedHistory(parent, []duroxide.Event{
		ev(parent, 1, nil, duroxide.OrchestrationStarted{Name: "Holder", Version: "1.0.0", Input: "in"}),
		ev(parent, 2, nil, duroxide.SubOrchestrationScheduled{Name: "Child", Instance: child, Input: "in"}),
	}, duroxide.StatusRunning)
	e.seedHistory(child, []duroxide.Event{
		ev(child, 1, nil, duroxide.OrchestrationStarted{Name: "Child", Version: "1.0.0", Input: "in", ParentInstance: ptrTo(parent), ParentID: u64p(2)}),
		ev(child, 2, nil, duroxide.OrchestrationCompleted{Output: "child-out"}),
	}, duroxide.StatusCompleted)
	r := durable.NewRegistry()
	orch(e.t, r, "Holder", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallSubOrchestration[string](ctx, "Child", in, durable.SubOrchestrationOptions{InstanceID: child}).Await()
	})
	orch(e.t, r, "Child", func(*durable.OrchestrationContext, string) (string, error) { return "", errors.New("must not run") })
	e.start(r, fastOptions(nil))
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.RewindInstanceItem{Instance: child, Reason: "parent rewound",
		ParentExecutionID: u64p(1)}, 0))
	require.Equal(e.t, "child-out", e.completed(parent))
	e.requireExecutions(child, []uint64{1}, "a completed child is not rewound")
}

// A parent was cancelled, which cancels its child, and rewound before
// the child took the cancellation: the child's next batch holds the
// cancellation and then the rewound parent's request to rewind. The
// rewind is judged against what the cancellation leaves, a failed
// child, so the child is rewound and reports to the parent's new
// execution. Seeded: parent execution 1 cancelled, execution 2 its
// rewind waiting for the child; the child waiting for an event.
func rewindIsJudgedAfterTheCancellationBeforeIt(e *env) {
	const parent, child = "cancelled-parent", "cancelled-child"
	cancelled := duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppCancelled, Reason: "stop"}}
	scheduled := duroxide.SubOrchestrationScheduled{Name: "Waiter", Instance: child, Input: "in"}
	e.seedHistory(parent, []duroxide.Event{
		seedEvent(parent, 1, 1, nil, duroxide.OrchestrationStarted{Name: "Delegator", Version: "1.0.0", Input: "in"}),
		seedEvent(parent, 1, 2, nil, scheduled),
		seedEvent(parent, 1, 3, nil, duroxide.OrchestrationCancelRequested{Reason: "stop"}),
		seedEvent(parent, 1, 4, nil, duroxide.OrchestrationFailed{Details: cancelled}),
	}, duroxide.StatusFailed)
	e.seedNextExecution(parent, []duroxide.Event{
		seedEvent(parent, 2, 1, nil, duroxide.OrchestrationStarted{Name: "Delegator", Version: "1.0.0", Input: "in"}),
		seedEvent(parent, 2, 2, nil, scheduled),
	}, duroxide.StatusRunning)
	e.seedHistory(child, []duroxide.Event{
		seedEvent(child, 1, 1, nil, duroxide.OrchestrationStarted{Name: "Waiter", Version: "1.0.0", Input: "in", ParentInstance: ptrTo(parent), ParentID: u64p(2)}),
		seedEvent(child, 1, 2, nil, duroxide.ExternalSubscribed{Name: "go"}),
	}, duroxide.StatusRunning)
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.CancelInstanceItem{Instance: child, Reason: "parent canceled"}, 0))
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.RewindInstanceItem{Instance: child, Reason: "parent rewound",
		ParentExecutionID: u64p(2)}, 0))
	r := durable.NewRegistry()
	orch(e.t, r, "Waiter", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		d, err := durable.WaitEvent[string](ctx, "go").Await()
		return "waited(" + in + d + ")", err
	})
	orch(e.t, r, "Delegator", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallSubOrchestration[string](ctx, "Waiter", in, durable.SubOrchestrationOptions{InstanceID: child}).Await()
	})
	e.start(r, fastOptions(nil))
	e.waitExecutions(child, 2)
	require.True(e.t, failedCancelled(e.executionHistory(child, 1), "parent canceled"), "the cancellation ended execution 1: %s",
		kinds(e.executionHistory(child, 1)))
	_, started, ok := findKind[duroxide.OrchestrationStarted](e.executionHistory(child, 2))
	require.True(e.t, ok)
	require.Equal(e.t, u64p(2), started.ParentExecutionID, "the rewound child reports to the parent's new execution")
	e.waitHist(child, "the rewound child to wait again", func(h []duroxide.Event) bool {
		return len(h) > 0 && h[0].ExecutionID == 2 && anyKind[duroxide.ExternalSubscribed](h)
	})
	e.raise(child, "go", "!")
	require.Equal(e.t, "waited(in!)", e.completed(parent))
	e.requireExecutions(parent, []uint64{1, 2}, "the parent did not fail again")
}

// A failure the orchestration handled (a retry) is kept: only the
// failure it did not move on from runs again.
func rewindKeepsAHandledFailureAndItsRetry(e *env) {
	var flaky, final atomic.Int32
	var fixed atomic.Bool
	r := durable.NewRegistry()
	act(e.t, r, "Flaky", func(_ durable.ActivityContext, in string) (string, error) {
		if flaky.Add(1) == 1 {
			return "", errors.New("first attempt fails")
		}
		return "flaky(" + in + ")", nil
	})
	counted(e, r, "Final", &final, &fixed)
	orch(e.t, r, "Retrying", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		v, err := durable.CallActivity[string](ctx, "Flaky", in).Await()
		if err != nil {
			if v, err = durable.CallActivity[string](ctx, "Flaky", in).Await(); err != nil {
				return "", err
			}
		}
		return durable.CallActivity[string](ctx, "Final", v).Await()
	})
	const instance = "rewind-retry"
	e.startBroken(r, instance, "Retrying", "i")
	e.fixAndRewind(instance, &fixed, durable.RewindOptions{})
	require.Equal(e.t, "Final(flaky(i))", e.completed(instance))
	require.Equal(e.t, int32(2), flaky.Load(), "the handled failure and its retry are kept")
	require.Equal(e.t, int32(2), final.Load())
	h := e.executionHistory(instance, 2)
	require.Equal(e.t, 1, countKind[duroxide.ActivityFailed](h), "the handled failure stays in the history: %s", kinds(h))
}

// A prefix of more events than one Cosmos DB batch holds is committed
// in one turn all the same.
func rewindOfALongHistory(e *env) {
	const steps = 80
	var runs, last atomic.Int32
	var fixed atomic.Bool
	r := durable.NewRegistry()
	counted(e, r, "Step", &runs, nil)
	counted(e, r, "Last", &last, &fixed)
	orch(e.t, r, "Long", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		for range steps {
			if _, err := durable.CallActivity[string](ctx, "Step", in).Await(); err != nil {
				return "", err
			}
		}
		return durable.CallActivity[string](ctx, "Last", in).Await()
	})
	const instance = "rewind-long"
	e.startBroken(r, instance, "Long", "x")
	e.fixAndRewind(instance, &fixed, durable.RewindOptions{})
	require.Equal(e.t, "Last(x)", e.completed(instance))
	require.Equal(e.t, int32(steps), runs.Load(), "no step ran again")
	require.Equal(e.t, int32(2), last.Load())
	require.Len(e.t, e.executionHistory(instance, 2), 2*steps+4, "started, the steps, Last scheduled and completed, completed")
}

func rewindKeepsKVAndCustomStatus(e *env) {
	var a, c atomic.Int32
	var fixed atomic.Bool
	r := durable.NewRegistry()
	counted(e, r, "A", &a, nil)
	counted(e, r, "C", &c, &fixed)
	orch(e.t, r, "Stateful", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		ctx.SetKVValue("step", "started")
		v, err := durable.CallActivity[string](ctx, "A", in).Await()
		if err != nil {
			return "", err
		}
		ctx.SetCustomStatus("after " + v)
		ctx.SetKVValue("step", v)
		if v, err = durable.CallActivity[string](ctx, "C", v).Await(); err != nil {
			return "", err
		}
		ctx.SetKVValue("done", v)
		return v, nil
	})
	const instance = "rewind-state"
	e.startBroken(r, instance, "Stateful", "x")
	e.fixAndRewind(instance, &fixed, durable.RewindOptions{})
	require.Equal(e.t, "C(A(x))", e.completed(instance))
	e.requireKV(instance, "step", "A(x)")
	e.requireKV(instance, "done", "C(A(x))")
	st, err := e.client().Status(e.ctx, instance)
	require.NoError(e.t, err)
	require.Equal(e.t, ptrTo("after A(x)"), st.CustomStatus)
	require.Equal(e.t, int32(1), a.Load())
}

func rewindRefusesInstancesThatDidNotFail(e *env) {
	e.start(edgeRegistry(e), fastOptions(nil))
	require.ErrorIs(e.t, e.client().Rewind(e.ctx, "rewind-missing", durable.RewindOptions{}), durable.ErrInstanceNotFound)
	e.startOrch("rewind-running", "Echo", "in")
	e.waitRunning("rewind-running")
	err := e.client().Rewind(e.ctx, "rewind-running", durable.RewindOptions{})
	require.ErrorIs(e.t, err, durable.ErrInvalidState)
	require.Contains(e.t, err.Error(), "Running")
	e.raise("rewind-running", "go", "d")
	require.Equal(e.t, "echo:in:d", e.completed("rewind-running"))
	require.ErrorIs(e.t, e.client().Rewind(e.ctx, "rewind-running", durable.RewindOptions{}), durable.ErrInvalidState)
	require.ErrorIs(e.t, e.client().Rewind(e.ctx, "", durable.RewindOptions{}), durable.ErrInvalidInput)
}

func restartRunsATerminalInstanceAgain(e *env) {
	var runs atomic.Int32
	var fixed atomic.Bool
	r := durable.NewRegistry()
	counted(e, r, "Step", &runs, &fixed)
	orch(e.t, r, "Once", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallActivity[string](ctx, "Step", in).Await()
	})
	const instance = "restart-once"
	e.startBroken(r, instance, "Once", "first")
	fixed.Store(true)
	e.restart(instance, durable.RestartOptions{}, 2)
	require.Equal(e.t, "Step(first)", e.completed(instance), "restarted with the original input")
	e.restart(instance, durable.RestartOptions{Input: "second", Version: "1.0.0"}, 3)
	require.Equal(e.t, "Step(second)", e.completed(instance), "restarted with a new input")
	require.Equal(e.t, int32(3), runs.Load(), "every restart runs from the beginning")
	e.requireExecutions(instance, []uint64{1, 2, 3}, "earlier executions are kept")
	e.requireFailedExecution(instance, 1)
	require.ErrorIs(e.t, e.client().Restart(e.ctx, instance, durable.RestartOptions{Version: "not-a-version"}), durable.ErrInvalidInput)
}

func restartPinsAVersion(e *env) {
	r := durable.NewRegistry()
	must(e.t, r.AddOrchestrationVersion("Versioned", "1.0.0", func(_ *durable.OrchestrationContext, in string) (string, error) { return "v1:" + in, nil }))
	must(e.t, r.AddOrchestrationVersion("Versioned", "2.0.0", func(_ *durable.OrchestrationContext, in string) (string, error) { return "v2:" + in, nil }))
	e.start(r, fastOptions(nil))
	const instance = "restart-versioned"
	e.startOrch(instance, "Versioned", "a")
	require.Equal(e.t, "v2:a", e.completed(instance), "a start runs the latest version")
	e.restart(instance, durable.RestartOptions{Version: "1.0.0"}, 2)
	require.Equal(e.t, "v1:a", e.completed(instance), "the restart runs the pinned version")
	e.restart(instance, durable.RestartOptions{}, 3)
	require.Equal(e.t, "v2:a", e.completed(instance), "without a pin the registry chooses again")
}

func restartRefusesARunningInstance(e *env) {
	e.start(edgeRegistry(e), fastOptions(nil))
	require.ErrorIs(e.t, e.client().Restart(e.ctx, "restart-missing", durable.RestartOptions{}), durable.ErrInstanceNotFound)
	e.startOrch("restart-running", "Echo", "in")
	e.waitRunning("restart-running")
	require.ErrorIs(e.t, e.client().Restart(e.ctx, "restart-running", durable.RestartOptions{}), durable.ErrInvalidState)
	e.cancel("restart-running", "stop")
	e.waitStatusCancelled("restart-running")
	e.restart("restart-running", durable.RestartOptions{Input: "again"}, 2)
	e.waitRunning("restart-running")
	e.raise("restart-running", "go", "d")
	e.waitFor("the restarted execution to complete", func() bool {
		st, err := e.client().Status(e.ctx, "restart-running")
		return err == nil && st.State == durable.StateCompleted && st.Output == "echo:again:d"
	})
}

// restartAfterARewindIsRefused (issue 29, 6): a Rewind and then a
// Restart of the same failed execution, both before any runtime took the
// first: the Restart is refused (the Rewind already claimed the next
// execution), and only execution 2 runs.
func restartAfterARewindIsRefused(e *env) {
	var runs atomic.Int32
	var fixed atomic.Bool
	const instance = "rewind-then-restart"
	rt := e.start(oneStep(e, &runs, &fixed), fastOptions(nil))
	e.startOrch(instance, "OneStep", "in")
	e.requireBroken(instance)
	shutdownRuntime(e, rt)
	fixed.Store(true)
	require.NoError(e.t, e.client().Rewind(e.ctx, instance, durable.RewindOptions{}))
	require.ErrorIs(e.t, e.client().Restart(e.ctx, instance, durable.RestartOptions{Input: "again"}), durable.ErrInvalidState,
		"the rewind already starts the next execution")
	require.ErrorIs(e.t, e.client().Redrive(e.ctx, instance), durable.ErrInvalidState)
	e.start(oneStep(e, &runs, &fixed), fastOptions(nil))
	e.waitExecutions(instance, 2)
	require.Equal(e.t, "Work(in)", e.completed(instance))
	e.requireExecutions(instance, []uint64{1, 2})
	// Once the rewound execution ended, it can be restarted.
	e.restart(instance, durable.RestartOptions{Input: "again"}, 3)
	require.Equal(e.t, "Work(again)", e.completed(instance))
}

// staleRestartIsDroppedByTheRuntime: a restart of execution 1 that
// reaches the queue after execution 2 started (a client whose provider
// cannot check the claim atomically) is dropped by the runtime, which
// judges it against the execution it names.
func staleRestartIsDroppedByTheRuntime(e *env) {
	const instance = "stale-restart"
	rt := e.start(edgeRegistry(e), fastOptions(nil))
	e.startOrch(instance, "Other", "")
	require.Equal(e.t, "other", e.completed(instance))
	e.restart(instance, durable.RestartOptions{}, 2)
	require.Equal(e.t, "other", e.completed(instance))
	shutdownRuntime(e, rt)
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.ContinueAsNewItem{Instance: instance, Orchestration: "Echo",
		Input: "stale", CarryForwardEvents: []duroxide.CarryForwardEvent{}, RestartOf: ptrTo[uint64](1)}, 0))
	require.NoError(e.t, e.client().Restart(e.ctx, instance, durable.RestartOptions{}))
	e.start(edgeRegistry(e), fastOptions(nil))
	e.waitExecutions(instance, 3)
	require.Equal(e.t, "other", e.completed(instance), "execution 3 is the restart of execution 2, not the stale one")
	e.requireExecutions(instance, []uint64{1, 2, 3})
}

// cancelOfAnEndedExecutionSparesTheRestartedOne (issue 29, 7): a cancel
// made while execution 1 had ended, then a Restart, both taken by one
// turn: the cancel targets execution 1, so execution 2 runs on.
func cancelOfAnEndedExecutionSparesTheRestartedOne(e *env) {
	const instance = "cancel-then-restart"
	rt := e.start(edgeRegistry(e), fastOptions(nil))
	e.startOrch(instance, "Echo", "one")
	e.waitSubscription(instance, "go")
	e.raise(instance, "go", "x")
	require.Equal(e.t, "echo:one:x", e.completed(instance))
	shutdownRuntime(e, rt)
	e.cancel(instance, "too late")
	require.NoError(e.t, e.client().Restart(e.ctx, instance, durable.RestartOptions{Input: "two"}))
	e.start(edgeRegistry(e), fastOptions(nil))
	e.waitExecutions(instance, 2)
	e.waitSubscription(instance, "go")
	e.raise(instance, "go", "y")
	require.Equal(e.t, "echo:two:y", e.completed(instance), "the cancel was meant for execution 1")
	// A cancel made while execution 2 runs still ends it.
	require.NoError(e.t, e.client().Restart(e.ctx, instance, durable.RestartOptions{Input: "three"}))
	e.waitExecutions(instance, 3)
	e.waitSubscription(instance, "go")
	e.cancel(instance, "stop")
	e.waitStatusCancelled(instance)
}

// cancelReachesTheExecutionThatContinuedAsNew: a cancel made for
// execution 1 that a runtime takes only in a later turn of execution 2,
// which execution 1 continued as new into, still ends it (the runtime
// reads execution 1's end to tell a continuation from a restart).
func cancelReachesTheExecutionThatContinuedAsNew(e *env) {
	const instance = "cancel-chain"
	r := edgeRegistry(e)
	orch(e.t, r, "Twice", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if in == "first" {
			return "", durable.ContinueAsNew(ctx, "second")
		}
		d, err := durable.WaitEvent[string](ctx, "go").Await()
		return in + ":" + d, err
	})
	e.start(r, fastOptions(nil))
	e.startOrch(instance, "Twice", "first")
	e.waitExecutions(instance, 2)
	e.waitSubscription(instance, "go")
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.CancelInstanceItem{Instance: instance, Reason: "stop",
		ExecutionID: ptrTo[uint64](1)}, 0))
	e.waitStatusCancelled(instance)
	e.requireExecutions(instance, []uint64{1, 2})
}

// oneStep is "OneStep": it runs activity Work (counted, failing until
// fixed) once.
func oneStep(e *env, runs *atomic.Int32, fixed *atomic.Bool) *durable.Registry {
	r := durable.NewRegistry()
	counted(e, r, "Work", runs, fixed)
	orch(e.t, r, "OneStep", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallActivity[string](ctx, "Work", in).Await()
	})
	return r
}

// requirePoisonedOrchestration waits for instance to fail with Poison
// details naming an orchestration message.
func (e *env) requirePoisonedOrchestration(instance string) {
	e.t.Helper()
	p := poisonDetails(e, e.wait(instance))
	require.Equal(e.t, duroxide.PoisonOrchestration, p.MessageType.Kind)
}

// redrive re-drives instance (poisoned in its first execution) and waits
// for the second execution the re-drive starts.
func (e *env) redrive(instance string) {
	e.t.Helper()
	require.NoError(e.t, e.client().Redrive(e.ctx, instance))
	e.waitExecutions(instance, 2)
}

// The orchestration's turn that takes the activity's result is poisoned;
// after the re-drive the result arrives again, and the activity is not
// run a second time.
func redriveDeliversThePoisonedMessagesAgain(e *env) {
	fp := e.faulty()
	var runs atomic.Int32
	fp.InjectOrchestrationAttemptsAfterSkip(1, 11)
	e.start(oneStep(e, &runs, nil), fastPoisonOptions(10))
	const instance = "redrive-orch"
	e.startOrch(instance, "OneStep", "in")
	e.requirePoisonedOrchestration(instance)
	e.redrive(instance)
	require.Equal(e.t, "Work(in)", e.completed(instance))
	require.Equal(e.t, int32(1), runs.Load(), "the activity's result was delivered again, not recomputed")
	e.requireFailedExecution(instance, 1)
}

func redriveStartsAnInstancePoisonedBeforeItsFirstTurn(e *env) {
	fp := e.faulty()
	var runs atomic.Int32
	fp.InjectOrchestrationAttempts(11)
	e.start(oneStep(e, &runs, nil), fastPoisonOptions(10))
	const instance = "redrive-start"
	e.startOrch(instance, "OneStep", "in")
	e.requirePoisonedOrchestration(instance)
	require.Zero(e.t, runs.Load())
	e.redrive(instance)
	require.Equal(e.t, "Work(in)", e.completed(instance))
	require.Equal(e.t, int32(1), runs.Load())
}

func redriveRerunsAPoisonedActivity(e *env) {
	fp := e.faulty()
	var runs atomic.Int32
	fp.InjectActivityAttempts(11)
	e.start(oneStep(e, &runs, nil), fastPoisonOptions(10))
	const instance = "redrive-activity"
	e.startOrch(instance, "OneStep", "in")
	require.Contains(e.t, e.failed(instance), "poison")
	require.Zero(e.t, runs.Load(), "a poisoned activity does not run")
	e.redrive(instance)
	require.Equal(e.t, "Work(in)", e.completed(instance))
	require.Equal(e.t, int32(1), runs.Load())
}

func redriveRefusesAFailureThatIsNotPoison(e *env) {
	var runs atomic.Int32
	var fixed atomic.Bool
	e.start(oneStep(e, &runs, &fixed), fastOptions(nil))
	require.ErrorIs(e.t, e.client().Redrive(e.ctx, "redrive-missing"), durable.ErrInstanceNotFound)
	const instance = "redrive-not-poison"
	e.startOrch(instance, "OneStep", "in")
	e.requireBroken(instance)
	err := e.client().Redrive(e.ctx, instance)
	require.ErrorIs(e.t, err, durable.ErrInvalidState)
	require.Contains(e.t, err.Error(), "Rewind")
}
