package durabletest

import (
	"context"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// deletionStrayTests are Go-only: after a tree is deleted and its root's
// id is started again, nothing of the deleted tree may reach the new
// run. The deletion removes what it finds; what was still on its way (a
// child's result or start relayed after the sweep, on a store that cannot
// delete a tree in one transaction) is told apart by the execution id: a
// client start of a deleted id continues the deleted run's execution
// count, so a stray result names another execution of its parent, and
// the new run's auto-named children have ids of their own.
func deletionStrayTests() []sample {
	return []sample{
		{"delete_removes_a_child_that_is_only_a_queued_start", deleteRemovesAChildThatIsOnlyAQueuedStart},
		{"delete_removes_a_running_child_before_the_id_is_reused", deleteRemovesARunningChildBeforeTheIDIsReused},
		{"a_recreated_run_ignores_a_late_result_of_the_deleted_run", aRecreatedRunIgnoresALateResultOfTheDeletedRun},
		{"a_recreated_run_does_not_take_a_stray_child_for_its_own", aRecreatedRunDoesNotTakeAStrayChildForItsOwn},
	}
}

// withheldChildren is a store whose fetches never hand out an instance
// under prefix: a turn that locks one gives it straight back. A runtime
// over it runs a parent while its children stay queued starts, as they
// are between the parent's turn and the first fetch of each child.
type withheldChildren struct {
	duroxide.Provider
	prefix string
}

func (w withheldChildren) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	item, err := w.Provider.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	if err != nil || item == nil || !strings.HasPrefix(item.Instance, w.prefix) {
		return item, err
	}
	return nil, w.Provider.AbandonOrchestrationItem(ctx, item.LockToken, 0, true)
}

// strayRegistry has "Parent" (calls "StrayChild", auto-named, and returns
// "old<-" and its result), "StrayChild" (waits for "Go" when its input is
// "wait", else returns "child") and "Fresh", the program the id is
// started with again (waits for "go", returns "fresh:" and its data).
func strayRegistry(e *env, childInput string) *durable.Registry {
	r := durable.NewRegistry()
	orch(e.t, r, "Parent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		out, err := durable.CallSubOrchestration[string](ctx, "StrayChild", childInput).Await()
		return "old<-" + out, err
	})
	orch(e.t, r, "StrayChild", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if in != "wait" {
			return "child", nil
		}
		_, err := durable.WaitEvent[string](ctx, "Go").Await()
		return "child", err
	})
	orch(e.t, r, "Fresh", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		d, err := durable.WaitEvent[string](ctx, "go").Await()
		return "fresh:" + d, err
	})
	return r
}

// requireNothingQueued fails when any orchestrator message is visible:
// after the deletion of the only tree in the store, whatever is left
// belongs to the deleted tree. A message found is given back.
func (e *env) requireNothingQueued(why string) {
	e.t.Helper()
	item, err := e.p.FetchOrchestrationItem(e.ctx, time.Minute, 0, nil)
	require.NoError(e.t, err)
	if item != nil {
		require.NoError(e.t, e.p.AbandonOrchestrationItem(e.ctx, item.LockToken, 0, true))
	}
	require.Nil(e.t, item, "%s: a message of instance %s outlived the deletion", why, itemInstance(item))
}

func itemInstance(item *duroxide.OrchestrationItem) string {
	if item == nil {
		return ""
	}
	return item.Instance
}

// runFreshLife starts root again with "Fresh" and requires the new run,
// which has the deleted run's event ids, to complete on its own messages
// only; child, of the deleted tree, must stay gone.
func (e *env) runFreshLife(reg *durable.Registry, root, child string) {
	e.t.Helper()
	e.startOrch(root, "Fresh", "")
	e.start(reg, nil)
	require.True(e.t, e.waitSubscription(root, "go"), "the new run should wait for go")
	e.raise(root, "go", "x")
	require.Equal(e.t, "fresh:x", e.completed(root), "the new run must see none of the deleted run's messages")
	require.Equal(e.t, durable.StateNotFound, e.status(child).State, "the deleted tree's child must not run again")
}

// deleteRemovesAChildThatIsOnlyAQueuedStart: the parent's turn scheduled
// a child whose start no runtime has fetched yet, so the child has no
// instance of its own and no tree walk finds it. A forced deletion of the
// parent must remove that start too: left behind, the child would run
// and report to "execution 1" of the id's next life.
func deleteRemovesAChildThatIsOnlyAQueuedStart(e *env) {
	const root = "stray-queued"
	reg := strayRegistry(e, "now")
	rt := e.startOn(withheldChildren{Provider: e.p, prefix: root + "::"}, reg, nil)
	e.startOrch(root, "Parent", "")
	e.waitHist(root, "the call of the child", anyKind[duroxide.SubOrchestrationScheduled])
	shutdownRuntime(e, rt)
	child := root + "::" + e.childInstanceOf(root)
	require.Equal(e.t, durable.StateNotFound, e.status(child).State, "the child is only a queued start")

	_, err := e.client().DeleteInstance(e.ctx, root, durable.DeleteOptions{Force: true})
	require.NoError(e.t, err)
	e.requireNothingQueued("the child's start")
	e.runFreshLife(reg, root, child)
}

// deleteRemovesARunningChildBeforeTheIDIsReused: the child runs (waits
// for "Go") when its parent is deleted with force; the child goes with
// the tree, and the id's next life runs undisturbed.
func deleteRemovesARunningChildBeforeTheIDIsReused(e *env) {
	const root = "stray-running"
	reg := strayRegistry(e, "wait")
	rt := e.startOn(e.p, reg, nil)
	e.startOrch(root, "Parent", "")
	e.waitHist(root, "the call of the child", anyKind[duroxide.SubOrchestrationScheduled])
	child := root + "::" + e.childInstanceOf(root)
	require.True(e.t, e.waitSubscription(child, "Go"), "the child should wait for Go")
	shutdownRuntime(e, rt)

	_, err := e.client().DeleteInstance(e.ctx, root, durable.DeleteOptions{Force: true})
	require.NoError(e.t, err)
	e.requireNothingQueued("the running tree")
	e.runFreshLife(reg, root, child)
}

// deletedParentWithWaitingChild runs "Parent" as root until its child
// waits for "Go", then deletes the tree with force. It returns the
// child's id, the event id that scheduled it and the parent's execution.
func (e *env) deletedParentWithWaitingChild(reg *durable.Registry, root string) (child string, scheduledAt, exec uint64) {
	e.t.Helper()
	e.startOrch(root, "Parent", "")
	h := e.waitHist(root, "the call of the child", anyKind[duroxide.SubOrchestrationScheduled])
	ev, k, _ := findKind[duroxide.SubOrchestrationScheduled](h)
	child = root + "::" + k.Instance
	require.True(e.t, e.waitSubscription(child, "Go"), "the child should wait for Go")
	_, err := e.client().DeleteInstance(e.ctx, root, durable.DeleteOptions{Force: true})
	require.NoError(e.t, err)
	return child, ev.EventID, ev.ExecutionID
}

// newLifeChild starts root's next life with "Parent" and returns its
// child once that waits for "Go".
func (e *env) newLifeChild(root string) string {
	e.t.Helper()
	e.startOrch(root, "Parent", "")
	e.waitHist(root, "the new run's call of its child", anyKind[duroxide.SubOrchestrationScheduled])
	child := root + "::" + e.childInstanceOf(root)
	require.True(e.t, e.waitSubscription(child, "Go"), "the new run's child should wait for Go")
	return child
}

// aRecreatedRunIgnoresALateResultOfTheDeletedRun: the deleted run's child
// result arrives after the sweep (as a relay in flight delivers it),
// addressed to the parent's execution and event id of the deleted run.
// The new run, which called its own child at the same event id, must
// take only its own child's result.
func aRecreatedRunIgnoresALateResultOfTheDeletedRun(e *env) {
	const root = "stray-late-result"
	reg := strayRegistry(e, "wait")
	e.start(reg, nil)
	_, scheduledAt, oldExec := e.deletedParentWithWaitingChild(reg, root)

	child := e.newLifeChild(root)
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.SubOrchCompletedItem{
		ParentInstance: root, ParentExecutionID: oldExec, ParentID: scheduledAt, Result: "stale"}, 0))
	e.waitOrchestratorQueueEmpty()
	require.Equal(e.t, durable.StateRunning, e.status(root).State, "the deleted run's result must not reach the new run")
	e.raise(child, "Go", "")
	require.Equal(e.t, "old<-child", e.completed(root), "the new run completes with its own child's result")
	for _, x := range e.executions(root) {
		require.Greater(e.t, x, oldExec, "the new run continues the deleted run's execution count")
	}
}

// aRecreatedRunDoesNotTakeAStrayChildForItsOwn: the deleted run's child
// start is delivered again after the sweep and runs. The new run calls
// its child at the same event id; it must get a child of its own, not
// the stray (whose result would then be taken for its own child's).
func aRecreatedRunDoesNotTakeAStrayChildForItsOwn(e *env) {
	const root = "stray-child"
	reg := strayRegistry(e, "wait")
	e.start(reg, nil)
	stray, scheduledAt, oldExec := e.deletedParentWithWaitingChild(reg, root)
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.StartOrchestrationItem{Instance: stray, Orchestration: "StrayChild",
		Input: "wait", Version: ptrTo("1.0.0"), ParentInstance: ptrTo(root), ParentID: ptrTo(scheduledAt), ParentExecutionID: ptrTo(oldExec), ExecutionID: 1}, 0))
	require.True(e.t, e.waitSubscription(stray, "Go"), "the stray child runs")

	child := e.newLifeChild(root)
	require.NotEqual(e.t, stray, child, "the new run's child must be its own instance")
	e.raise(stray, "Go", "")
	require.Equal(e.t, "child", e.completed(stray))
	e.waitOrchestratorQueueEmpty()
	require.Equal(e.t, durable.StateRunning, e.status(root).State, "the stray child's result must not reach the new run")
	e.raise(child, "Go", "")
	require.Equal(e.t, "old<-child", e.completed(root))
}
