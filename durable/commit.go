package durable

import (
	"slices"

	"github.com/duroxide-go/cdb/duroxide"
)

// Turning a replayed turn into its commit: the events the host writes
// beside the engine's (terminal events, breadcrumbs, limit failures), the
// work items for both queues, the execution metadata and the activities to
// cancel — duroxide's execution.rs, state_helpers.rs and the commit half of
// its orchestration dispatcher. The ack itself is the dispatcher's
// (dispatch_orchestration.go).

// commitResult folds the replayed turn's outcome into its commit
// (the second half of duroxide's run_single_execution_atomic): a
// continuing turn dispatches its actions; an ending one writes its
// terminal event after the subscriptions it leaves open, and reports to
// its parent or starts its next execution. It fails, committing nothing,
// only when the parent execution a result goes to cannot be read.
func (rt *Runtime) commitResult(t *turn) error {
	_, parent := t.context()
	instance := t.instance
	res := t.result
	var reportTo uint64
	if parent != nil && res.Kind.reportsToParent() {
		var err error
		if reportTo, err = rt.parentExecution(parent); err != nil {
			return err
		}
	}
	switch res.Kind {
	case turnContinue:
		t.dispatchActions()
	case turnCompleted:
		t.orch = append(t.orch, detachedStarts(t.actions)...)
		t.cancelOpenSubscriptions()
		t.append(nil, duroxide.OrchestrationCompleted{Output: res.Output})
		if parent != nil {
			t.orch = append(t.orch, duroxide.SubOrchCompletedItem{ParentInstance: parent.instance,
				ParentExecutionID: reportTo, ParentID: parent.id, Result: res.Output})
		}
	case turnFailed:
		t.orch = append(t.orch, detachedStarts(t.actions)...)
		t.cancelOpenSubscriptions()
		t.append(nil, duroxide.OrchestrationFailed{Details: res.Details})
		if parent != nil {
			t.orch = append(t.orch, duroxide.SubOrchFailedItem{ParentInstance: parent.instance,
				ParentExecutionID: reportTo, ParentID: parent.id, Details: res.Details})
		}
	case turnContinueAsNew:
		unmatched := unmatchedQueueMessages(t.all())
		t.cancelOpenSubscriptions()
		t.append(nil, duroxide.OrchestrationContinuedAsNew{Input: res.Input})
		if len(unmatched) > maxCarryForwardEvents {
			rt.log.Warn("dropping carry-forward events beyond the limit during continue-as-new",
				"instance_id", instance, "dropped", len(unmatched)-maxCarryForwardEvents)
			unmatched = unmatched[:maxCarryForwardEvents]
		}
		can := duroxide.ContinueAsNewItem{Instance: instance, Orchestration: t.name, Input: res.Input,
			Version: res.Version, CarryForwardEvents: unmatched, InitialCustomStatus: accumulatedCustomStatus(t.all())}
		if parent != nil {
			// The next execution reports to the parent in this one's place
			// (duroxide 0.1.31's optional fields; omitted for a root).
			can.ParentInstance, can.ParentID, can.ParentExecutionID = &parent.instance, &parent.id, parent.executionID
		}
		t.orch = append(t.orch, can)
	case turnCancelled:
		details := duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppCancelled, Reason: res.Reason}}
		open := outstandingSchedules(t.all())
		t.cancelOpenSubscriptions()
		t.append(nil, duroxide.OrchestrationFailed{Details: details})
		for _, child := range open.subOrchestrations {
			t.orch = append(t.orch, duroxide.CancelInstanceItem{Instance: childInstanceID(instance, child.instance), Reason: "parent canceled",
				ParentExecutionID: ptr(t.executionID)})
		}
		if parent != nil {
			t.orch = append(t.orch, duroxide.SubOrchFailedItem{ParentInstance: parent.instance,
				ParentExecutionID: reportTo, ParentID: parent.id, Details: details})
		}
	}
	for _, child := range t.cancelledChildren {
		t.orch = append(t.orch, duroxide.CancelInstanceItem{Instance: childInstanceID(instance, child),
			Reason: "parent dropped sub-orchestration future", ParentExecutionID: ptr(t.executionID)})
	}
	return nil
}

// parentExecution is the parent execution a child reports to: the one
// its OrchestrationStarted records (the execution that called it, carried
// by its start and each continue-as-new). Histories written before
// duroxide 0.1.31 record none; their result goes to the parent's current
// execution as the store holds it, duroxide's provider-read fallback: the
// same answer whichever runtime completes the child.
func (rt *Runtime) parentExecution(p *parentLink) (uint64, error) {
	if p.executionID != nil {
		return *p.executionID, nil
	}
	return rt.currentExecution(p.instance)
}

// currentExecution reads instance's current execution from the store (1
// for an instance it does not hold).
func (rt *Runtime) currentExecution(instance string) (uint64, error) {
	h, err := rt.p.Read(rt.ctx, instance)
	if err != nil {
		return 0, err
	}
	if len(h) == 0 {
		return initialExecutionID, nil
	}
	return h[len(h)-1].ExecutionID, nil
}

// dispatchActions turns a continuing turn's new actions into work items.
func (t *turn) dispatchActions() {
	instance := t.instance
	for _, a := range t.actions {
		switch a := a.(type) {
		case actionCallActivity:
			t.worker = append(t.worker, duroxide.ActivityExecuteItem{Instance: instance, ExecutionID: t.executionID,
				ID: a.SchedulingEventID, Name: a.Name, Input: a.Input, SessionID: a.SessionID, Tag: a.Tag})
		case actionCreateTimer:
			t.orch = append(t.orch, duroxide.TimerFiredItem{Instance: instance, ExecutionID: t.executionID,
				ID: a.SchedulingEventID, FireAtMs: a.FireAtMs})
		case actionStartSubOrchestration:
			t.orch = append(t.orch, duroxide.StartOrchestrationItem{Instance: childInstanceID(instance, a.Instance),
				Orchestration: a.Name, Input: a.Input, Version: a.Version, ParentInstance: ptr(instance),
				ParentID: ptr(a.SchedulingEventID), ParentExecutionID: ptr(t.executionID), ExecutionID: initialExecutionID,
				ExecutionTimeoutMs: a.Timeouts.execution, InstanceTimeoutMs: a.Timeouts.instance})
		case actionStartOrchestrationDetached:
			t.orch = append(t.orch, detachedStart(a))
		}
	}
}

func detachedStart(a actionStartOrchestrationDetached) duroxide.WorkItem {
	return duroxide.StartOrchestrationItem{Instance: a.Instance, Orchestration: a.Name, Input: a.Input,
		Version: a.Version, ExecutionID: initialExecutionID}
}

// detachedStarts are the only actions a terminal turn still dispatches.
func detachedStarts(actions []action) []duroxide.WorkItem {
	var out []duroxide.WorkItem
	for _, a := range actions {
		if d, ok := a.(actionStartOrchestrationDetached); ok {
			out = append(out, detachedStart(d))
		}
	}
	return out
}

// accumulatedCustomStatus is the custom status at the end of history,
// carried into the next execution by continue-as-new.
func accumulatedCustomStatus(history []duroxide.Event) *string {
	var status *string
	for _, e := range history {
		switch k := e.Kind.(type) {
		case duroxide.OrchestrationStarted:
			if k.InitialCustomStatus != nil {
				status = k.InitialCustomStatus
			}
		case duroxide.CustomStatusUpdated:
			status = k.Status
		}
	}
	return status
}

// unmatchedQueueMessages are the delivered queue events no active
// subscription consumed, in arrival order: continue-as-new carries them.
func unmatchedQueueMessages(history []duroxide.Event) []duroxide.CarryForwardEvent {
	cancelled := map[uint64]bool{}
	var subs []struct {
		id   uint64
		name string
	}
	var arrivals []duroxide.CarryForwardEvent
	for _, e := range history {
		switch k := e.Kind.(type) {
		case duroxide.ExternalSubscribedPersistentCancelled:
			if e.SourceEventID != nil {
				cancelled[*e.SourceEventID] = true
			}
		case duroxide.ExternalSubscribedPersistent:
			subs = append(subs, struct {
				id   uint64
				name string
			}{e.EventID, k.Name})
		case duroxide.ExternalEventPersistent:
			arrivals = append(arrivals, duroxide.CarryForwardEvent{Name: k.Name, Data: k.Data})
		}
	}
	active := map[string]int{}
	for _, s := range subs {
		if !cancelled[s.id] {
			active[s.name]++
		}
	}
	consumed := map[string]int{}
	out := []duroxide.CarryForwardEvent{}
	for _, a := range arrivals {
		if consumed[a.Name] < active[a.Name] {
			consumed[a.Name]++
			continue
		}
		out = append(out, a)
	}
	return out
}

// openSchedules lists what a history scheduled and never resolved nor
// cancelled.
type openSchedules struct {
	activities        []uint64
	subOrchestrations []openChild
	externalSubs      []uint64
	queueSubs         []uint64
}

// openChild is a sub-orchestration still running: its schedule event id
// and its instance id as scheduled.
type openChild struct {
	id       uint64
	instance string
}

func outstandingSchedules(history []duroxide.Event) openSchedules {
	type sub struct {
		id   uint64
		name string
	}
	var children []sub
	var activities []uint64
	resolvedAct, cancelledAct := map[uint64]bool{}, map[uint64]bool{}
	var externals []uint64
	var queues []sub
	resolvedChild, cancelledChild := map[uint64]bool{}, map[uint64]bool{}
	resolvedExt, cancelledExt, cancelledQueue := map[uint64]bool{}, map[uint64]bool{}, map[uint64]bool{}
	pendingExt := map[string][]uint64{}
	arrivals := map[string]int{}
	src := func(e duroxide.Event) uint64 {
		if e.SourceEventID == nil {
			return 0
		}
		return *e.SourceEventID
	}
	for _, e := range history {
		switch k := e.Kind.(type) {
		case duroxide.ActivityScheduled:
			activities = append(activities, e.EventID)
		case duroxide.ActivityCompleted, duroxide.ActivityFailed:
			resolvedAct[src(e)] = true
		case duroxide.ActivityCancelRequested:
			cancelledAct[src(e)] = true
		case duroxide.SubOrchestrationScheduled:
			children = append(children, sub{e.EventID, k.Instance})
		case duroxide.SubOrchestrationCompleted, duroxide.SubOrchestrationFailed:
			resolvedChild[src(e)] = true
		case duroxide.SubOrchestrationCancelRequested:
			cancelledChild[src(e)] = true
		case duroxide.ExternalSubscribed:
			externals = append(externals, e.EventID)
			pendingExt[k.Name] = append(pendingExt[k.Name], e.EventID)
		case duroxide.ExternalEvent:
			if q := pendingExt[k.Name]; len(q) > 0 {
				resolvedExt[q[0]] = true
				pendingExt[k.Name] = q[1:]
			}
		case duroxide.ExternalSubscribedCancelled:
			if e.SourceEventID != nil {
				cancelledExt[*e.SourceEventID] = true
				for name, q := range pendingExt {
					pendingExt[name] = slices.DeleteFunc(q, func(id uint64) bool { return id == *e.SourceEventID })
				}
			}
		case duroxide.ExternalSubscribedPersistent:
			queues = append(queues, sub{e.EventID, k.Name})
		case duroxide.ExternalEventPersistent:
			arrivals[k.Name]++
		case duroxide.ExternalSubscribedPersistentCancelled:
			cancelledQueue[src(e)] = true
		}
	}
	var o openSchedules
	for _, id := range activities {
		if !resolvedAct[id] && !cancelledAct[id] {
			o.activities = append(o.activities, id)
		}
	}
	for _, c := range children {
		if !resolvedChild[c.id] && !cancelledChild[c.id] {
			o.subOrchestrations = append(o.subOrchestrations, openChild{c.id, c.name})
		}
	}
	for _, id := range externals {
		if !resolvedExt[id] && !cancelledExt[id] {
			o.externalSubs = append(o.externalSubs, id)
		}
	}
	consumed := map[string]int{}
	for _, q := range queues {
		if cancelledQueue[q.id] {
			continue
		}
		if consumed[q.name] < arrivals[q.name] {
			consumed[q.name]++
			continue
		}
		o.queueSubs = append(o.queueSubs, q.id)
	}
	return o
}

// cancelOpenSubscriptions writes the "orchestration_terminal" breadcrumbs
// for subscriptions still waiting when an execution ends; they precede the
// terminal event.
func (t *turn) cancelOpenSubscriptions() {
	open := outstandingSchedules(t.all())
	for _, id := range open.externalSubs {
		t.append(ptr(id), duroxide.ExternalSubscribedCancelled{Reason: "orchestration_terminal"})
	}
	for _, id := range open.queueSubs {
		t.append(ptr(id), duroxide.ExternalSubscribedPersistentCancelled{Reason: "orchestration_terminal"})
	}
}

// executionMetadata derives what the provider stores about the execution
// from the delta (duroxide's compute_execution_metadata).
func executionMetadata(delta []duroxide.Event) duroxide.ExecutionMetadata {
	var m duroxide.ExecutionMetadata
	for _, e := range delta {
		switch k := e.Kind.(type) {
		case duroxide.OrchestrationStarted:
			m.OrchestrationName, m.OrchestrationVersion, m.ParentInstanceID = ptr(k.Name), ptr(k.Version), k.ParentInstance
			if v, err := duroxide.ParseSemVer(e.DuroxideVersion); err == nil {
				m.PinnedDuroxideVersion = &v
			}
		case duroxide.OrchestrationCompleted:
			m.Status, m.Output = ptr(duroxide.StatusCompleted), ptr(k.Output)
			return m
		case duroxide.OrchestrationFailed:
			m.Status, m.Output = ptr(duroxide.StatusFailed), ptr(displayMessage(k.Details))
			return m
		case duroxide.OrchestrationContinuedAsNew:
			m.Status, m.Output = ptr(duroxide.StatusContinuedAsNew), ptr(k.Input)
			return m
		}
	}
	return m
}

// finishCommit completes the commit of a turn that replayed (or had no
// orchestration to run): the execution's metadata from the delta, the
// limits, and the cancellation of the activities a terminal turn leaves
// in flight.
func (t *turn) finishCommit() {
	t.metadata = executionMetadata(t.delta)
	t.enforceLimits()
	t.cancelInflightActivities()
	t.cancelled = dedupeCancelled(t.cancelled)
}

// cancelInflightActivities ends a terminal turn: every activity still in
// flight gets an ActivityCancelRequested after the terminal event, and is
// listed for the provider to delete from the worker queue.
func (t *turn) cancelInflightActivities() {
	var reason string
	switch valueOf(t.metadata.Status) {
	case duroxide.StatusCompleted:
		reason = "orchestration_terminal_completed"
	case duroxide.StatusFailed:
		reason = "orchestration_terminal_failed"
	case duroxide.StatusContinuedAsNew:
		reason = "orchestration_terminal_continued_as_new"
	default:
		return
	}
	all := t.all()
	done := map[uint64]bool{}
	for _, e := range all {
		switch e.Kind.(type) {
		case duroxide.ActivityCompleted, duroxide.ActivityFailed, duroxide.ActivityCancelRequested:
			if e.SourceEventID != nil {
				done[*e.SourceEventID] = true
			}
		}
	}
	for _, e := range all {
		if _, ok := e.Kind.(duroxide.ActivityScheduled); ok && !done[e.EventID] {
			t.append(ptr(e.EventID), duroxide.ActivityCancelRequested{Reason: reason})
			t.cancelled = append(t.cancelled, duroxide.ScheduledActivityIdentifier{Instance: t.instance, ExecutionID: t.executionID, ActivityID: e.EventID})
		}
	}
}

// dedupeCancelled drops repeated activity identifiers, keeping order.
func dedupeCancelled(ids []duroxide.ScheduledActivityIdentifier) []duroxide.ScheduledActivityIdentifier {
	seen := map[duroxide.ScheduledActivityIdentifier]bool{}
	return slices.DeleteFunc(ids, func(id duroxide.ScheduledActivityIdentifier) bool {
		if seen[id] {
			return true
		}
		seen[id] = true
		return false
	})
}
