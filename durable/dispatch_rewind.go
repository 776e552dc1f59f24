package durable

import (
	"fmt"
	"slices"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// rewindRequest is a RewindInstanceItem or RedriveInstanceItem found in a
// fetched batch.
type rewindRequest struct {
	executionID uint64
	reason      string
	parentExec  *uint64
	redrive     bool
}

// takeRewind removes the batch's rewind and re-drive requests from
// messages and returns the one the turn judges: the same execution can
// be rewound once, so the others are duplicates of it and are dropped.
// The first wins, but for a rewound parent's request, which wins over
// any that names no parent execution or an earlier one: the rewound
// child must report to the parent's latest execution, and a client's
// rewind of the same failed child (or one taken in the turn between a
// supersede and its rewind) would leave it reporting to an execution
// that failed.
func takeRewind(messages []duroxide.WorkItem) (*rewindRequest, []duroxide.WorkItem) {
	var req *rewindRequest
	rest := make([]duroxide.WorkItem, 0, len(messages))
	for _, m := range messages {
		switch w := m.(type) {
		case duroxide.RewindInstanceItem:
			if req == nil || laterParent(w.ParentExecutionID, req.parentExec) {
				req = &rewindRequest{executionID: w.ExecutionID, reason: w.Reason, parentExec: w.ParentExecutionID}
			}
		case duroxide.RedriveInstanceItem:
			if req == nil {
				req = &rewindRequest{executionID: w.ExecutionID, reason: w.Reason, redrive: true}
			}
		default:
			rest = append(rest, m)
		}
	}
	return req, rest
}

// laterParent reports whether a request naming parent execution p
// supersedes one naming than (nil: none).
func laterParent(p, than *uint64) bool {
	return p != nil && (than == nil || *p > *than)
}

// carryFromRewind makes a rewind or re-drive request wait for the
// messages before it in the batch: the request is judged against the
// state they leave (a cancellation that fails a child before its
// rewound parent's request arrives, a restart, a completion), so this
// turn takes only those and carries the request, with the messages after
// it, to the next turn. A request first in the batch stays for this
// turn.
func (t *turn) carryFromRewind() {
	msgs := t.item.Messages
	i := slices.IndexFunc(msgs, isRewindRequest)
	if i <= 0 || supersededAt(t.item.History) >= 0 {
		// A superseded execution waits for its request (supersede): what
		// arrived before it is the next execution's, and would be dropped
		// as sent to an ended instance.
		return
	}
	t.carried = append(t.carried, msgs[i:]...)
	t.item.Messages = msgs[:i:i]
}

// withholdReportToRewoundParent drops this turn's report to the parent
// when it carries the parent's request to rewind, which names the
// parent execution the parent's rewind started: that execution waits for
// what the request brings (the rewound child's result, or a completed
// child's result sent again), not for the end of the execution it asked
// to rewind. A child whose start records no parent execution would
// otherwise report to the parent's current one, which is that
// execution, and fail it again with the failure the rewind undoes.
func (t *turn) withholdReportToRewoundParent() {
	i := slices.IndexFunc(t.carried, isRewindRequest)
	if i < 0 {
		return
	}
	req, ok := t.carried[i].(duroxide.RewindInstanceItem)
	if !ok || req.ParentExecutionID == nil {
		return
	}
	to := *req.ParentExecutionID
	t.orch = slices.DeleteFunc(t.orch, func(w duroxide.WorkItem) bool {
		switch r := w.(type) {
		case duroxide.SubOrchCompletedItem:
			return r.ParentExecutionID == to
		case duroxide.SubOrchFailedItem:
			return r.ParentExecutionID == to
		}
		return false
	})
}

func isRewindRequest(m duroxide.WorkItem) bool {
	switch m.(type) {
	case duroxide.RewindInstanceItem, duroxide.RedriveInstanceItem:
		return true
	}
	return false
}

// rewind handles a batch holding a rewind request, whose other messages
// are t.item.Messages; suspend is the batch's change to the suspension,
// for the new execution. It reports false when the request does not
// apply (the instance's current execution is not the failed one it
// names, or it did not fail); the caller then processes t.item.Messages
// as usual. A re-drive of an execution poisoned before its first turn
// (its history is the OrchestrationStarted the poison wrote) also
// reports false, having put the poisoned start back into
// t.item.Messages as the start of the next execution.
func (rt *Runtime) rewind(t *turn, req *rewindRequest, suspend *duroxide.SuspendChange) bool {
	item, instance := t.item, t.instance
	rest := item.Messages
	if req.executionID != 0 && req.executionID != item.ExecutionID {
		rt.log.Warn("rewind request for an execution that is not the current one; dropping it", "instance_id", instance,
			"execution_id", item.ExecutionID, "requested_execution_id", req.executionID)
		return false
	}
	if req.parentExec != nil && rt.resendChildResult(t, req) {
		return true
	}
	if req.parentExec != nil && rt.repointRunningChild(t, req, suspend) {
		return true
	}
	if at := supersededAt(item.History); at >= 0 {
		rt.rewindSuperseded(t, req, at, suspend)
		return true
	}
	cut, extra, ok := rt.rewindCutOf(item, req)
	if !ok {
		return false
	}
	if start := startAgain(extra); req.redrive && cut <= 1 && start != nil {
		rt.log.Info("re-driving an execution poisoned before its first turn: starting it again", "instance_id", instance,
			"execution_id", item.ExecutionID, "reason", req.reason)
		item.Messages = append(append([]duroxide.WorkItem{start}, withoutStarts(extra)...), rest...)
		return false
	}
	rt.rewindTurn(t, req, cut, withoutStarts(extra), withoutStarts(rest), suspend)
	return true
}

// rewindTurn commits execution N+1 of the turn's failed execution N: the
// history before cut, replayed with the kept results, extra (re-driven
// messages) and rest (the batch's other messages; a restart racing the
// rewind is dropped), plus the work the prefix leaves open. suspend, the
// batch's change to the suspension, applies to N+1.
func (rt *Runtime) rewindTurn(t *turn, req *rewindRequest, cut int, extra, rest []duroxide.WorkItem, suspend *duroxide.SuspendChange) {
	item, instance := t.item, t.instance
	t.executionID = item.ExecutionID + 1
	if item.KVBaseline != nil {
		// N+1 replays N's prefix, which read the KV N started with.
		t.kv, t.restoreKV = item.KVBaseline, true
	}
	plan := planRewind(item.History, instance, t.executionID, cut, req.parentExec)
	rt.log.Info("rewinding failed execution", "instance_id", instance, "execution_id", item.ExecutionID, "new_execution_id", t.executionID,
		"reason", req.reason, "kept_events", len(plan.prefix), "kept_results", len(plan.kept), "reruns", len(plan.reruns), "redrive", req.redrive)
	t.readHistory(plan.prefix)
	t.readMessages(rest)
	t.completions = append(append(plan.kept, extra...), t.completions...)
	rt.dropCancelsOfEarlierParents(t)
	if !rt.runTurn(t) {
		return
	}
	// The whole prefix is new to the store: it is N+1's history.
	t.delta, t.history = append(t.history, t.delta...), nil
	t.worker = append(t.worker, unresolved(plan.reruns, extra)...)
	t.orch = append(t.orch, unresolved(plan.orch, extra)...)
	t.finishCommit()
	if t.metadata.Status == nil {
		t.metadata.Status = ptr(duroxide.StatusRunning)
	}
	t.settleSuspension(suspend)
	rt.ack(t)
}

// rewindCutOf finds where the rewind cuts item's history, and for a
// re-drive of an orchestration poisoned by its messages, those messages
// readdressed to the new execution. ok is false when the current
// execution did not fail or a re-drive finds nothing poisoned.
func (rt *Runtime) rewindCutOf(item *duroxide.OrchestrationItem, req *rewindRequest) (cut int, extra []duroxide.WorkItem, ok bool) {
	details, failed := terminalFailure(item.History)
	if !failed {
		rt.log.Warn("rewind request for an execution that did not fail; dropping it", "instance_id", item.Instance,
			"execution_id", item.ExecutionID)
		return 0, nil, false
	}
	if !req.redrive {
		return rewindCut(item.History, false), nil, true
	}
	if p, ok := poisonOf(details); ok && p.MessageType.Kind == duroxide.PoisonOrchestration {
		msgs, err := poisonedMessages(p, item.ExecutionID, item.ExecutionID+1)
		if err != nil {
			rt.log.Warn("re-drive: the poisoned messages cannot be decoded; rewinding without them", "instance_id", item.Instance, "error", err)
		}
		return rewindCut(item.History, true), msgs, true
	}
	if !poisoned(item.History) {
		rt.log.Warn("re-drive request for an execution that was not poisoned; dropping it", "instance_id", item.Instance,
			"execution_id", item.ExecutionID)
		return 0, nil, false
	}
	return rewindCut(item.History, false), nil, true
}

// resendChildResult answers a rewound parent's request to a child that
// completed: the parent's new execution needs the result its failed one
// never received (the parent had already failed when it arrived), so the
// child sends it again, to that execution.
func (rt *Runtime) resendChildResult(t *turn, req *rewindRequest) bool {
	var started *duroxide.OrchestrationStarted
	var out string
	completed := false
	for _, e := range t.item.History {
		switch k := e.Kind.(type) {
		case duroxide.OrchestrationStarted:
			started, completed = &k, false
		case duroxide.OrchestrationCompleted:
			out, completed = k.Output, true
		}
	}
	if !completed || started == nil || started.ParentInstance == nil || started.ParentID == nil {
		return false
	}
	t.orch = append(t.orch, duroxide.SubOrchCompletedItem{ParentInstance: *started.ParentInstance,
		ParentExecutionID: *req.parentExec, ParentID: *started.ParentID, Result: out})
	rt.ack(t)
	return true
}

// repointRunningChild answers a rewound parent's request to a child
// whose execution still runs: the request overtook the cancel the
// parent's failed execution sent when it dropped the child's future (an
// outbox delivers them in either order), or the child had not ended
// yet. That execution reports to the failed parent execution, which
// drops its result, and the cancel would still end it. A history is
// never edited and only its OrchestrationStarted records where a child
// reports, so the child moves to a new execution reporting to the
// parent execution the request names. It takes two turns, so that no
// execution ever starts on top of a running one: this one ends the
// running execution (supersede), and the next, finding it superseded,
// rewinds it with nothing cut (rewind). A request from a parent
// execution no later than the one the child reports to is a duplicate
// or out of date, and does not apply.
func (rt *Runtime) repointRunningChild(t *turn, req *rewindRequest, suspend *duroxide.SuspendChange) bool {
	item := t.item
	started, ok := runningStart(item.History)
	if !ok || started.ParentInstance == nil || (started.ParentExecutionID != nil && *started.ParentExecutionID >= *req.parentExec) {
		return false
	}
	rt.log.Info("a rewound parent asked its running child to rewind; ending the child's execution so the next turn moves it to one reporting to the parent's new one",
		"instance_id", item.Instance, "execution_id", item.ExecutionID, "parent_execution_id", *req.parentExec)
	rt.supersede(t, req, suspend)
	return true
}

// supersedeOperation names the InfrastructureError that ends an
// execution a rewound parent moves to a new one (repointRunningChild).
const supersedeOperation = "supersede"

// supersede commits the end of t's running execution, failed with
// supersedeOperation, and reports it to nobody: the parent execution it
// reports to has failed, and the parent's new one waits for the next
// execution. The request goes back to the queue with the batch's other
// messages, for the next turn, and with the suspension the new
// execution keeps: the provider clears a suspension when an execution
// ends, so a suspended child says so again to its next execution.
func (rt *Runtime) supersede(t *turn, req *rewindRequest, change *duroxide.SuspendChange) {
	item := t.item
	kept, err := rt.keptSuspension(item.Instance, change)
	if err != nil {
		rt.log.Warn("reading the suspension of a child to supersede failed; the turn will run again", "instance_id", item.Instance, "error", err)
		rt.abandon(duroxide.OrchestratorQueue, item.Instance, item.LockToken, 100*time.Millisecond, true)
		return
	}
	t.readHistory(item.History)
	t.append(nil, duroxide.OrchestrationFailed{Details: duroxide.InfrastructureError{Operation: supersedeOperation,
		Message: fmt.Sprintf("superseded: parent execution %d rewound this child into a new execution", *req.parentExec)}})
	t.metadata = executionMetadata(t.delta)
	if kept != nil && kept.Suspended {
		t.carried = append(t.carried, duroxide.SuspendInstanceItem{Instance: item.Instance, Reason: kept.Reason})
	}
	t.carried = append(t.carried, duroxide.RewindInstanceItem{Instance: item.Instance, ExecutionID: item.ExecutionID,
		Reason: req.reason, ParentExecutionID: req.parentExec})
	t.carried = append(t.carried, item.Messages...)
	item.Messages = nil
	rt.ack(t)
}

// keptSuspension is the suspension a superseded execution's successor
// keeps: the batch's change when it makes one, else the instance's
// (nil when the provider does not read suspensions: it honours none).
func (rt *Runtime) keptSuspension(instance string, change *duroxide.SuspendChange) (*duroxide.SuspendChange, error) {
	if change != nil {
		return change, nil
	}
	sr, ok := rt.p.(duroxide.SuspensionReader)
	if !ok {
		return nil, nil
	}
	suspended, reason, err := sr.Suspension(rt.ctx, instance)
	if err != nil || !suspended {
		return nil, err
	}
	return &duroxide.SuspendChange{Suspended: true, Reason: reason}, nil
}

// supersededAt is the index of history's supersede failure, the last
// event of an execution supersede ended, or -1.
func supersededAt(history []duroxide.Event) int {
	if len(history) == 0 {
		return -1
	}
	last := len(history) - 1
	f, ok := history[last].Kind.(duroxide.OrchestrationFailed)
	if !ok {
		return -1
	}
	if d, ok := f.Details.(duroxide.InfrastructureError); ok && d.Operation == supersedeOperation {
		return last
	}
	return -1
}

// rewindSuperseded starts the execution after a superseded one: its
// whole history but the failure, with the start naming the parent
// execution the request names, the batch's messages readdressed to it,
// and the work it left open issued again as a rewind issues it. The
// cancel from the failed parent execution is then stale there
// (dropCancelsOfEarlierParents).
func (rt *Runtime) rewindSuperseded(t *turn, req *rewindRequest, at int, suspend *duroxide.SuspendChange) {
	item := t.item
	var moved []duroxide.WorkItem
	for _, m := range withoutStarts(item.Messages) {
		if w := readdress(m, item.ExecutionID, item.ExecutionID+1); w != nil {
			moved = append(moved, w)
		}
	}
	item.Messages = nil
	rt.rewindTurn(t, req, at, moved, nil, suspend)
}

// runningStart is the OrchestrationStarted of history's execution when
// nothing ended it (it neither completed, failed nor continued as new).
func runningStart(history []duroxide.Event) (duroxide.OrchestrationStarted, bool) {
	var started *duroxide.OrchestrationStarted
	for _, e := range history {
		switch k := e.Kind.(type) {
		case duroxide.OrchestrationStarted:
			started = &k
		case duroxide.OrchestrationCompleted, duroxide.OrchestrationFailed, duroxide.OrchestrationContinuedAsNew:
			started = nil
		}
	}
	if started == nil {
		return duroxide.OrchestrationStarted{}, false
	}
	return *started, true
}

// unresolved drops from work what the re-driven messages resolve: a
// poisoned batch's completion is delivered again, so its work is not
// issued again.
func unresolved(work, messages []duroxide.WorkItem) []duroxide.WorkItem {
	done := map[uint64]bool{}
	for _, m := range messages {
		switch w := m.(type) {
		case duroxide.ActivityCompletedItem:
			done[w.ID] = true
		case duroxide.ActivityFailedItem:
			done[w.ID] = true
		case duroxide.TimerFiredItem:
			done[w.ID] = true
		case duroxide.SubOrchCompletedItem:
			done[w.ParentID] = true
		case duroxide.SubOrchFailedItem:
			done[w.ParentID] = true
		}
	}
	kept := work[:0:0]
	for _, w := range work {
		if id, ok := scheduleID(w); !ok || !done[id] {
			kept = append(kept, w)
		}
	}
	return kept
}

// scheduleID is the schedule event a re-issued work item is for.
func scheduleID(w duroxide.WorkItem) (uint64, bool) {
	switch v := w.(type) {
	case duroxide.ActivityExecuteItem:
		return v.ID, true
	case duroxide.TimerFiredItem:
		return v.ID, true
	}
	return 0, false
}

// startAgain turns the first start among poisoned messages into the
// continue-as-new item that starts the next execution of a failed
// instance as it would have started.
func startAgain(messages []duroxide.WorkItem) duroxide.WorkItem {
	for _, m := range messages {
		switch w := m.(type) {
		case duroxide.StartOrchestrationItem:
			return duroxide.ContinueAsNewItem{Instance: w.Instance, Orchestration: w.Orchestration, Input: w.Input, Version: w.Version,
				ParentInstance: w.ParentInstance, ParentID: w.ParentID, ParentExecutionID: w.ParentExecutionID,
				CarryForwardEvents: []duroxide.CarryForwardEvent{}}
		case duroxide.ContinueAsNewItem:
			return w
		}
	}
	return nil
}

// withoutStarts drops the start items: the kept history holds the
// execution's OrchestrationStarted.
func withoutStarts(messages []duroxide.WorkItem) []duroxide.WorkItem {
	out := messages[:0:0]
	for _, m := range messages {
		switch m.(type) {
		case duroxide.StartOrchestrationItem, duroxide.ContinueAsNewItem:
			continue
		}
		out = append(out, m)
	}
	return out
}
