package durable

import (
	"slices"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// A client request is judged against the execution it was made for, not
// the one current when a runtime takes it: between the two, the
// execution may have ended and the instance been restarted (issue 29).
// A restart names the terminal execution it replaces
// (ContinueAsNewItem.RestartOf), a cancel the execution it stops
// (CancelInstanceItem.ExecutionID); requests without the field (the
// runtime's own, and those a Rust duroxide client writes) are taken as
// they come. A parent's
// cancel of its child names the parent execution that sent it
// (CancelInstanceItem.ParentExecutionID): a rewind of the parent moves
// the child to report to the parent's new execution, and the cancel the
// failed execution sent is then stale.

// dropStaleRestarts removes from messages the restarts of an execution
// that is not item's current one, or that did not end completed or
// failed: another request already started the next execution (a Rewind,
// or a restart that came first), which such a restart would replace.
func (rt *Runtime) dropStaleRestarts(item *duroxide.OrchestrationItem, messages []duroxide.WorkItem) []duroxide.WorkItem {
	terminal := endedTerminally(item.History)
	out := messages[:0:0]
	for _, m := range messages {
		can, ok := m.(duroxide.ContinueAsNewItem)
		if ok && can.RestartOf != nil && (*can.RestartOf != item.ExecutionID || !terminal) {
			rt.log.Warn("dropping a restart of an execution that is no longer the instance's ended one", "instance_id", item.Instance,
				"restart_of", *can.RestartOf, "execution_id", item.ExecutionID)
			continue
		}
		out = append(out, m)
	}
	return out
}

// endedTerminally reports whether history's last execution ended
// completed or failed (not by continuing as new, nor not at all).
func endedTerminally(history []duroxide.Event) bool {
	for i := len(history) - 1; i >= 0; i-- {
		switch history[i].Kind.(type) {
		case duroxide.OrchestrationCompleted, duroxide.OrchestrationFailed:
			return true
		case duroxide.OrchestrationContinuedAsNew, duroxide.OrchestrationStarted:
			return false
		}
	}
	return false
}

// judgeCancels drops from t's completions the cancels made for an
// earlier execution that did not continue as new into t's: the execution
// they were meant for ended, and t's is a restart. It reads the history
// of executions between only for such a cancel, which is rare. It
// returns false when a read failed and the item went back.
func (rt *Runtime) judgeCancels(t *turn) bool {
	kept := t.completions[:0:0]
	for _, m := range t.completions {
		c, ok := m.(duroxide.CancelInstanceItem)
		if ok && c.ExecutionID != nil && *c.ExecutionID < t.executionID {
			chained, err := rt.continuedAsNew(t, *c.ExecutionID)
			if err != nil {
				rt.log.Warn("reading the executions a cancel spans failed; abandoning the item", "instance_id", t.instance, "error", err)
				rt.abandon(duroxide.OrchestratorQueue, t.instance, t.item.LockToken, time.Second, false)
				return false
			}
			if !chained {
				rt.log.Warn("dropping a cancel meant for an execution that ended", "instance_id", t.instance,
					"cancel_execution_id", *c.ExecutionID, "execution_id", t.executionID)
				continue
			}
		}
		kept = append(kept, m)
	}
	t.completions = kept
	return true
}

// continuedAsNew reports whether every execution of t's instance from
// `from` to the one before t's ended by continuing as new. The fetched
// history answers for the latest of them; earlier ones are read (a
// provider without admin calls, or a pruned execution, cannot tell: the
// cancel is then taken).
func (rt *Runtime) continuedAsNew(t *turn, from uint64) (bool, error) {
	for x := t.executionID - 1; x >= from && x > 0; x-- {
		h := t.item.History
		if x != t.item.ExecutionID {
			a := rt.p.Admin()
			if a == nil {
				return true, nil
			}
			var err error
			if h, err = a.ReadHistoryWithExecutionID(rt.ctx, t.instance, x); err != nil {
				return false, err
			}
		}
		if len(h) == 0 {
			return true, nil
		}
		if !awaitingSuccessor(h) {
			return false, nil
		}
	}
	return true, nil
}

// dropCancelsOfEarlierParents drops from t's completions the cancels a
// parent sent from an execution before the one t's execution reports
// to: that parent execution failed and was rewound, its rewind moved
// this child to report to the new execution, and the cancel is a
// consequence of the failure the rewind undoes.
func (rt *Runtime) dropCancelsOfEarlierParents(t *turn) {
	if t.parentExecID == nil {
		return
	}
	t.completions = slices.DeleteFunc(t.completions, func(m duroxide.WorkItem) bool {
		c, ok := m.(duroxide.CancelInstanceItem)
		if !ok || c.ParentExecutionID == nil || *c.ParentExecutionID >= *t.parentExecID {
			return false
		}
		rt.log.Warn("dropping a cancel sent by a parent execution that was rewound since", "instance_id", t.instance,
			"cancel_parent_execution_id", *c.ParentExecutionID, "parent_execution_id", *t.parentExecID)
		return true
	})
}
