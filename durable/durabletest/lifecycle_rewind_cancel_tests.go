package durabletest

import (
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// A parent fails while its child runs, so its end cancels the child
// ("parent dropped sub-orchestration future"); the parent is then
// rewound, and its new execution asks the child to rewind. The child
// receives the two in either order, in one batch or two (the Cosmos
// provider's outbox lets the later request overtake the cancel), while
// it still runs or after it failed on its own. Whichever it sees, the
// cancel, a consequence of the failure the rewind undoes, must not end
// the child's execution that reports to the parent's new execution, and
// the child's result must reach that execution.

const (
	rewoundParent = "forking-parent"
	rewoundChild  = "forked-child"
)

// parentDroppedCancel is the cancel the parent's failed execution 1 sent
// its child; rewoundParentRequest is the request its rewind, execution
// 2, sent.
var (
	parentDroppedCancel  = duroxide.CancelInstanceItem{Instance: rewoundChild, Reason: "parent dropped sub-orchestration future", ParentExecutionID: u64p(1)}
	rewoundParentRequest = duroxide.RewindInstanceItem{Instance: rewoundChild, Reason: "parent rewound", ParentExecutionID: u64p(2)}
)

// The child's ends: still running, failed on its own, or ended by the
// parent's cancel taken in one turn with a completion after it.
const (
	childRunning = iota
	childFailed
	childCancelled
	childSuperseded
)

// seedRewoundParent seeds parent execution 1, failed with its child
// running (it recorded the child's cancellation), and execution 2, its
// rewind, waiting for the child. The child's execution 1 reports to
// parent execution 1: it ran activity X and waits for event "go"
// (childRunning), or X failed it (childFailed), or it took the cancel
// and then X's completion in one batch, which leaves the cancellation
// before the completion in its history (childCancelled).
func (e *env) seedRewoundParent(childEnd int) {
	scheduled := duroxide.SubOrchestrationScheduled{Name: "Stepper", Instance: rewoundChild, Input: "in"}
	broken := duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppOrchestrationFailed}, Message: "broken"}
	e.seedHistory(rewoundParent, []duroxide.Event{
		seedEvent(rewoundParent, 1, 1, nil, duroxide.OrchestrationStarted{Name: "Delegator", Version: "1.0.0", Input: "in"}),
		seedEvent(rewoundParent, 1, 2, nil, scheduled),
		seedEvent(rewoundParent, 1, 3, u64p(2), duroxide.SubOrchestrationCancelRequested{Reason: parentDroppedCancel.Reason}),
		seedEvent(rewoundParent, 1, 4, nil, duroxide.OrchestrationFailed{Details: broken}),
	}, duroxide.StatusFailed)
	e.seedNextExecution(rewoundParent, []duroxide.Event{
		seedEvent(rewoundParent, 2, 1, nil, duroxide.OrchestrationStarted{Name: "Delegator", Version: "1.0.0", Input: "in"}),
		seedEvent(rewoundParent, 2, 2, nil, scheduled),
	}, duroxide.StatusRunning)
	child := []duroxide.Event{
		seedEvent(rewoundChild, 1, 1, nil, duroxide.OrchestrationStarted{Name: "Stepper", Version: "1.0.0", Input: "in",
			ParentInstance: ptrTo(rewoundParent), ParentID: u64p(2), ParentExecutionID: u64p(1)}),
		seedEvent(rewoundChild, 1, 2, nil, duroxide.ActivityScheduled{Name: "X", Input: "in"}),
	}
	status := duroxide.StatusFailed
	switch childEnd {
	case childRunning:
		status = duroxide.StatusRunning
		child = append(child,
			seedEvent(rewoundChild, 1, 3, u64p(2), duroxide.ActivityCompleted{Result: "x"}),
			seedEvent(rewoundChild, 1, 4, nil, duroxide.ExternalSubscribed{Name: "go"}))
	case childFailed:
		child = append(child,
			seedEvent(rewoundChild, 1, 3, u64p(2), duroxide.ActivityFailed{Details: broken}),
			seedEvent(rewoundChild, 1, 4, nil, duroxide.OrchestrationFailed{Details: broken}))
	case childCancelled:
		cancelled := duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppCancelled, Reason: parentDroppedCancel.Reason}}
		child = append(child,
			seedEvent(rewoundChild, 1, 3, nil, duroxide.OrchestrationCancelRequested{Reason: parentDroppedCancel.Reason}),
			seedEvent(rewoundChild, 1, 4, u64p(2), duroxide.ActivityCompleted{Result: "x"}),
			seedEvent(rewoundChild, 1, 5, nil, duroxide.OrchestrationFailed{Details: cancelled}))
	case childSuperseded:
		// What the runtime writes when a rewound parent's request reaches
		// its running child: the running execution ends, failed with the
		// "supersede" operation, and the request waits in the queue for
		// the turn that rewinds it.
		superseded := duroxide.InfrastructureError{Operation: "supersede", Message: "superseded"}
		child = append(child,
			seedEvent(rewoundChild, 1, 3, u64p(2), duroxide.ActivityCompleted{Result: "x"}),
			seedEvent(rewoundChild, 1, 4, nil, duroxide.ExternalSubscribed{Name: "go"}),
			seedEvent(rewoundChild, 1, 5, nil, duroxide.OrchestrationFailed{Details: superseded}))
	}
	e.seedHistory(rewoundChild, child, status)
}

// rewoundParentRegistry: "Delegator" returns its child's result;
// "Stepper" runs X, then waits for "go".
func rewoundParentRegistry(e *env) *durable.Registry {
	r := durable.NewRegistry()
	act(e.t, r, "X", func(durable.ActivityContext, string) (string, error) { return "x", nil })
	orch(e.t, r, "Stepper", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		v, err := durable.CallActivity[string](ctx, "X", in).Await()
		if err != nil {
			return "", err
		}
		d, err := durable.WaitEvent[string](ctx, "go").Await()
		return v + ":" + d, err
	})
	orch(e.t, r, "Delegator", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallSubOrchestration[string](ctx, "Stepper", in, durable.SubOrchestrationOptions{InstanceID: rewoundChild}).Await()
	})
	return r
}

// deliverInBatches hands the child each batch in its own turn: a runtime
// takes a batch, and is shut down (which waits for the turn's commit)
// before the next batch is enqueued. The runtime that takes the last
// batch keeps running.
func (e *env) deliverInBatches(r *durable.Registry, batches ...[]duroxide.WorkItem) {
	e.t.Helper()
	a := e.admin()
	for i, batch := range batches {
		for _, m := range batch {
			require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, m, 0))
		}
		rt := e.start(r, fastOptions(nil))
		if i == len(batches)-1 {
			return
		}
		e.waitFor("the batch to be taken", func() bool {
			d, err := a.QueueDepths(e.ctx)
			return err == nil && d.OrchestratorQueue == 0
		})
		shutdownRuntime(e, rt)
	}
}

// requireRewoundChildReachesTheParent requires the child to wait for
// "go" again in an execution reporting to parent execution 2, not ended
// by the stale cancel, and the parent to complete with its result.
func (e *env) requireRewoundChildReachesTheParent() {
	e.t.Helper()
	h := e.waitHist(rewoundChild, "a later execution of the child to wait again or end", func(h []duroxide.Event) bool {
		return len(h) > 0 && h[0].ExecutionID >= 2 && (anyKind[duroxide.OrchestrationFailed](h) ||
			anyKind[duroxide.OrchestrationCompleted](h) || anyKind[duroxide.ExternalSubscribed](h))
	})
	require.False(e.t, anyKind[duroxide.OrchestrationFailed](h), "the child's execution %d failed: %s", h[0].ExecutionID, kinds(h))
	require.Equal(e.t, uint64(2), h[0].ExecutionID, "the child's execution: %s", kinds(h))
	_, started, ok := findKind[duroxide.OrchestrationStarted](h)
	require.True(e.t, ok)
	require.Equal(e.t, u64p(2), started.ParentExecutionID, "the child reports to the parent's new execution")
	e.requireEndedBeforeTheNext(rewoundChild)
	e.raise(rewoundChild, "go", "go")
	require.Equal(e.t, "x:go", e.completed(rewoundParent))
	e.requireExecutions(rewoundParent, []uint64{1, 2}, "the parent did not fail again")
}

// The running child takes the rewind request, then, in a later turn,
// the cancel from the parent's failed execution.
func rewindReachesARunningChildBeforeTheStaleCancel(e *env) {
	e.seedRewoundParent(childRunning)
	e.deliverInBatches(rewoundParentRegistry(e), []duroxide.WorkItem{rewoundParentRequest}, []duroxide.WorkItem{parentDroppedCancel})
	e.requireRewoundChildReachesTheParent()
}

// The running child takes the rewind request and the cancel after it
// in one batch.
func rewindReachesARunningChildWithTheStaleCancelAfterIt(e *env) {
	e.seedRewoundParent(childRunning)
	e.deliverInBatches(rewoundParentRegistry(e), []duroxide.WorkItem{rewoundParentRequest, parentDroppedCancel})
	e.requireRewoundChildReachesTheParent()
}

// The running child is suspended; the cancel after the rewind request
// wakes it, and the request moves it to a new execution, which keeps
// the suspension the provider clears when an execution ends.
func rewindReachesASuspendedRunningChild(e *env) {
	e.seedRewoundParent(childRunning)
	hold := duroxide.SuspendInstanceItem{Instance: rewoundChild, Reason: "hold"}
	e.deliverInBatches(rewoundParentRegistry(e), []duroxide.WorkItem{hold}, []duroxide.WorkItem{rewoundParentRequest, parentDroppedCancel})
	e.waitHist(rewoundChild, "the child's execution 2 to wait again", func(h []duroxide.Event) bool {
		return len(h) > 0 && h[0].ExecutionID == 2 && anyKind[duroxide.ExternalSubscribed](h)
	})
	st := e.waitState(rewoundChild, durable.StateSuspended)
	require.Equal(e.t, "hold", st.SuspendedReason, "the new execution keeps the reason")
	require.NoError(e.t, e.client().Resume(e.ctx, rewoundChild, "released"))
	e.requireRewoundChildReachesTheParent()
}

// A client rewinds the superseded child before the turn that rewinds it
// for its parent: the two requests meet in one batch, the client's
// first, and the parent's wins, so the child reports to the parent's
// new execution.
func rewindOfASupersededChildKeepsTheParentsRequest(e *env) {
	e.seedRewoundParent(childSuperseded)
	require.NoError(e.t, e.client().Rewind(e.ctx, rewoundChild, durable.RewindOptions{Reason: "operator"}))
	e.deliverInBatches(rewoundParentRegistry(e), []duroxide.WorkItem{rewoundParentRequest})
	e.requireRewoundChildReachesTheParent()
}

// The running child takes the cancel, which fails it, then the rewind
// request, which rewinds it.
func rewindReachesAChildTheStaleCancelFailed(e *env) {
	e.seedRewoundParent(childRunning)
	e.deliverInBatches(rewoundParentRegistry(e), []duroxide.WorkItem{parentDroppedCancel}, []duroxide.WorkItem{rewoundParentRequest})
	e.requireRewoundChildReachesTheParent()
}

// The child failed on its own; the rewind request rewinds it, and the
// cancel from the parent's failed execution reaches the rewound
// execution in a later turn.
func rewoundChildDropsTheStaleCancelAfterItsRewind(e *env) {
	e.seedRewoundParent(childFailed)
	e.deliverInBatches(rewoundParentRegistry(e), []duroxide.WorkItem{rewoundParentRequest}, []duroxide.WorkItem{parentDroppedCancel})
	e.requireRewoundChildReachesTheParent()
}

// The child failed on its own; the rewind request and the cancel after
// it come in one batch, so the cancel is among the rewind turn's own
// messages.
func rewoundChildDropsTheStaleCancelInItsRewindBatch(e *env) {
	e.seedRewoundParent(childFailed)
	e.deliverInBatches(rewoundParentRegistry(e), []duroxide.WorkItem{rewoundParentRequest, parentDroppedCancel})
	e.requireRewoundChildReachesTheParent()
}

// The cancel ended the child in a turn that also took X's completion,
// after the cancel: the cancellation is not just before the failure in
// the child's history. The rewind request then rewinds the child, which
// must not meet the cancellation again.
func rewoundChildLeavesACancellationFollowedByACompletion(e *env) {
	e.seedRewoundParent(childCancelled)
	e.deliverInBatches(rewoundParentRegistry(e), []duroxide.WorkItem{rewoundParentRequest})
	e.requireRewoundChildReachesTheParent()
}
