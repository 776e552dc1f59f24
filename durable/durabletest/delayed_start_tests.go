package durabletest

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// delayedStartTests are Go-only: a start delayed by StartOptions.StartAt
// (issue 33), which duroxide does not have.
func delayedStartTests() []sample {
	return []sample{
		{"delayed_start_exists_at_once_and_runs_at_its_time", delayedStartExistsAtOnceAndRunsAtItsTime},
		{"cancel_before_a_delayed_start_never_runs_its_code", cancelBeforeADelayedStartNeverRunsItsCode},
		{"delete_before_a_delayed_start_never_runs_it", deleteBeforeADelayedStartNeverRunsIt},
		{"delayed_start_outlasts_the_runtime", delayedStartOutlastsTheRuntime},
		{"delayed_start_continues_as_new_and_calls_a_child", delayedStartContinuesAsNewAndCallsAChild},
	}
}

// startDelay is how far ahead the samples start: long enough to act on
// the instance before it runs on a loaded machine, short for the suite.
const startDelay = 1500 * time.Millisecond

// countedOrchestration registers "Counted", which counts its replays in
// runs and returns "ran:<input>".
func countedOrchestration(e *env, runs *atomic.Int32) *durable.Registry {
	r := durable.NewRegistry()
	orch(e.t, r, "Counted", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		//durablecheck:ignore counts the code's runs for the test's assertion that it never ran
		runs.Add(1)
		return "ran:" + in, nil
	})
	return r
}

// startAt starts instance of orchestration with input, delayed to at.
func (e *env) startAt(instance, orchestration, input string, at time.Time) {
	e.t.Helper()
	require.NoError(e.t, e.client().StartOrchestration(e.ctx, instance, orchestration, input, durable.StartOptions{StartAt: at}))
}

// The instance exists from the call on: a different start is refused and
// the identical one accepted, its status says when it starts, and its
// code first runs once the start time has passed.
func delayedStartExistsAtOnceAndRunsAtItsTime(e *env) {
	var runs atomic.Int32
	e.start(countedOrchestration(e, &runs), fastOptions(nil))
	const instance = "delayed-start"
	at := time.Now().Add(startDelay)
	e.startAt(instance, "Counted", "a", at)

	st, err := e.client().Status(e.ctx, instance)
	require.NoError(e.t, err)
	require.Equal(e.t, durable.StateNotFound, st.State)
	if _, notes := e.p.(duroxide.PendingNoter); notes {
		require.True(e.t, strings.HasPrefix(st.Waiting, "scheduled to start at "), "Waiting: %q", st.Waiting)
	}
	err = e.client().StartOrchestration(e.ctx, instance, "Counted", "b")
	require.ErrorIs(e.t, err, durable.ErrInstanceExists, "a different start of a delayed instance")
	require.NoError(e.t, e.client().StartOrchestration(e.ctx, instance, "Counted", "a", durable.StartOptions{StartAt: at}),
		"the identical start is a retry")

	require.Equal(e.t, "ran:a", e.completed(instance))
	h := e.history(instance)
	require.GreaterOrEqual(e.t, h[0].TimestampMs, uint64(at.UnixMilli()), "started at %d, asked for %d", h[0].TimestampMs, at.UnixMilli())
	require.Equal(e.t, 1, countKind[duroxide.OrchestrationStarted](h), "the retried start ran nothing more: %s", kinds(h))
}

// A cancellation accepted before the start time waits behind the start
// and ends the instance in its first turn, without running its code.
func cancelBeforeADelayedStartNeverRunsItsCode(e *env) {
	var runs atomic.Int32
	e.start(countedOrchestration(e, &runs), fastOptions(nil))
	const instance = "delayed-cancel"
	e.startAt(instance, "Counted", "a", time.Now().Add(startDelay))
	e.cancel(instance, "not needed")
	st := e.wait(instance)
	require.Equal(e.t, durable.StateFailed, st.State, "output %q", st.Output)
	require.True(e.t, isCancelled(st.Details, "not needed"), "got %s", st.FailureMessage())
	require.Zero(e.t, runs.Load(), "the cancelled instance's code ran")
}

// Deleted before its start time (without Force: it is not running), the
// instance is gone at once with the cancellation queued behind it, its
// start never runs, and the id can be started again.
func deleteBeforeADelayedStartNeverRunsIt(e *env) {
	var runs atomic.Int32
	e.start(countedOrchestration(e, &runs), fastOptions(nil))
	const instance = "delayed-delete"
	at := time.Now().Add(startDelay)
	e.startAt(instance, "Counted", "a", at)
	e.cancel(instance, "queued behind the start")
	res, err := e.client().DeleteInstance(e.ctx, instance)
	require.NoError(e.t, err)
	require.Equal(e.t, uint64(1), res.InstancesDeleted)
	require.Equal(e.t, uint64(2), res.QueueMessagesDeleted, "the start and the cancellation")
	_, err = e.client().DeleteInstance(e.ctx, instance)
	require.ErrorIs(e.t, err, durable.ErrInstanceNotFound, "deleted once")
	require.ErrorIs(e.t, e.client().CancelInstance(e.ctx, instance, "again"), durable.ErrInstanceNotFound, "the instance is gone")
	time.Sleep(time.Until(at) + 500*time.Millisecond)
	require.Empty(e.t, e.history(instance), "the deleted start ran")
	require.Zero(e.t, runs.Load())
	e.startOrch(instance, "Counted", "again")
	require.Equal(e.t, "ran:again", e.completed(instance))
	require.Equal(e.t, 1, int(runs.Load()))
}

// The delayed start is stored, not held by a runtime: one started after
// the first shut down runs it.
func delayedStartOutlastsTheRuntime(e *env) {
	var runs atomic.Int32
	r := countedOrchestration(e, &runs)
	rt := e.start(r, fastOptions(nil))
	const instance = "delayed-restart"
	e.startAt(instance, "Counted", "a", time.Now().Add(startDelay))
	shutdownRuntime(e, rt)
	e.start(r, fastOptions(nil))
	require.Equal(e.t, "ran:a", e.completed(instance))
}

// A delayed instance is an ordinary one once it runs: it calls a child
// and continues as new.
func delayedStartContinuesAsNewAndCallsAChild(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Child", func(_ *durable.OrchestrationContext, in string) (string, error) { return "child(" + in + ")", nil })
	orch(e.t, r, "Parent", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if in == "first" {
			return "", durable.ContinueAsNew(ctx, "second")
		}
		return durable.CallSubOrchestration[string](ctx, "Child", in).Await()
	})
	e.start(r, fastOptions(nil))
	const instance = "delayed-parent"
	e.startAt(instance, "Parent", "first", time.Now().Add(startDelay))
	require.Equal(e.t, "child(second)", e.completed(instance))
	e.requireExecutions(instance, []uint64{1, 2})
}
