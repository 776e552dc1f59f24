package durable

import (
	"encoding/json"
	"slices"

	"github.com/duroxide-go/cdb/duroxide"
)

// Rewinding a failed execution N (Client.Rewind, Client.Redrive) writes
// a new execution N+1 whose history is a prefix of N's, so replay finds
// every result the prefix holds and the work the prefix leaves open runs
// again. A prefix, not N less some events: duroxide matches the actions
// a turn emits to the history's schedule events in order, so any prefix
// replays, while a history with events taken out of its middle need not
// (code that caught a failure and scheduled something else would meet
// its own schedules with the failure gone).
//
// The cut: the first ActivityFailed or SubOrchestrationFailed after which
// the execution scheduled nothing (no ActivityScheduled, TimerCreated,
// SubOrchestrationScheduled, ExternalSubscribed, queue subscription or
// OrchestrationChained follows it): the failures the orchestration did
// not move on from. A failure it handled and moved on from (a retry, a
// fallback) stays in the prefix, with everything after it. Without such
// a failure (the code itself returned an error, or the instance was
// cancelled or poisoned) the cut is the OrchestrationFailed event, less
// the cancellation the terminal turn recorded just before it
// (OrchestrationCancelRequested, and the subscriptions it cancelled).
// A cancelled execution is cut at its OrchestrationCancelRequested
// wherever it lies: a turn that takes the cancel with completions after
// it records them between the cancellation and the failure, and a
// prefix holding the cancellation would end N+1 the same way (the cancel
// a rewound parent's failed execution sent its child, whose rewind must
// undo it).
//
// The events from the cut on are dropped, except the results they hold
// for work scheduled in the prefix, which are kept and delivered to N+1
// in their original order: ActivityCompleted, SubOrchestrationCompleted,
// TimerFired, ExternalEvent and queue events. Work the prefix scheduled
// and nothing resolved is issued again: an activity runs again (unless
// the prefix cancelled it), a timer fires at its original time, and a
// sub-orchestration is asked to rewind too (RewindInstanceItem naming
// N+1 as the parent execution it reports to; a child that completed
// reports its result again).

// rewindPlan is what rewinding one failed execution writes.
type rewindPlan struct {
	// prefix is N+1's history: N's events before the cut, with their
	// execution id rewritten.
	prefix []duroxide.Event
	// kept are the results from after the cut, delivered to N+1's first
	// turn in their original order.
	kept []duroxide.WorkItem
	// reruns are the activities to execute again.
	reruns []duroxide.WorkItem
	// orch are the open timers and the children's rewind requests.
	orch []duroxide.WorkItem
}

// rewindCut returns the index of the first event the rewind drops, or -1
// when history did not fail. atTerminal cuts at the failure itself (a
// re-drive of messages poisoned the orchestration).
func rewindCut(history []duroxide.Event, atTerminal bool) int {
	term := slices.IndexFunc(history, func(e duroxide.Event) bool {
		_, ok := e.Kind.(duroxide.OrchestrationFailed)
		return ok
	})
	if term < 0 {
		return -1
	}
	cut := failureCut(history, term, atTerminal)
	if c := slices.IndexFunc(history[:cut], func(e duroxide.Event) bool {
		_, ok := e.Kind.(duroxide.OrchestrationCancelRequested)
		return ok
	}); c >= 0 {
		return c
	}
	return cut
}

// failureCut is rewindCut's cut before the cancellation is considered:
// the failure the execution did not move on from, else its end less the
// breadcrumbs its terminal turn wrote; term is its OrchestrationFailed.
func failureCut(history []duroxide.Event, term int, atTerminal bool) int {
	if !atTerminal {
		cut := -1
		for i := term - 1; i >= 0; i-- {
			switch history[i].Kind.(type) {
			case duroxide.ActivityFailed, duroxide.SubOrchestrationFailed:
				cut = i
				continue
			}
			if schedules(history[i].Kind) {
				break
			}
		}
		if cut >= 0 {
			return cut
		}
	}
	cut := term
	for cut > 0 && terminalBreadcrumb(history[cut-1].Kind) {
		cut--
	}
	return cut
}

// schedules reports whether k records work the orchestration started.
func schedules(k duroxide.EventKind) bool {
	switch k.(type) {
	case duroxide.ActivityScheduled, duroxide.TimerCreated, duroxide.SubOrchestrationScheduled,
		duroxide.ExternalSubscribed, duroxide.ExternalSubscribedPersistent, duroxide.OrchestrationChained:
		return true
	}
	return false
}

// terminalBreadcrumb reports whether k is written by the turn that
// failed the execution just before its OrchestrationFailed.
func terminalBreadcrumb(k duroxide.EventKind) bool {
	switch v := k.(type) {
	case duroxide.OrchestrationCancelRequested:
		return true
	case duroxide.ExternalSubscribedCancelled:
		return v.Reason == "orchestration_terminal"
	case duroxide.ExternalSubscribedPersistentCancelled:
		return v.Reason == "orchestration_terminal"
	}
	return false
}

// planRewind plans the rewind of history (a failed execution of
// instance) into execution next. parentExec, when set, is the parent
// execution the new execution reports to.
func planRewind(history []duroxide.Event, instance string, next uint64, cut int, parentExec *uint64) *rewindPlan {
	plan := &rewindPlan{}
	for _, e := range history[:cut] {
		from := e.ExecutionID
		e.ExecutionID = next
		if s, ok := e.Kind.(duroxide.OrchestrationStarted); ok && parentExec != nil && s.ParentInstance != nil {
			s.ParentExecutionID = ptr(*parentExec)
			e.Kind = s
		}
		if s, ok := e.Kind.(duroxide.KeyValueSet); ok {
			e.Kind = rewoundUpdateRecord(s, from, next)
		}
		plan.prefix = append(plan.prefix, e)
	}
	resolved, cancelled := map[uint64]bool{}, map[uint64]bool{}
	for _, e := range history[:cut] {
		switch e.Kind.(type) {
		case duroxide.ActivityCompleted, duroxide.ActivityFailed, duroxide.TimerFired,
			duroxide.SubOrchestrationCompleted, duroxide.SubOrchestrationFailed:
			resolved[sourceOf(e)] = true
		case duroxide.ActivityCancelRequested, duroxide.SubOrchestrationCancelRequested:
			cancelled[sourceOf(e)] = true
		}
	}
	for _, e := range history[cut:] {
		if w := keptResult(e, instance, next); w != nil {
			plan.kept = append(plan.kept, w)
			resolved[sourceOf(e)] = true
		}
	}
	for _, e := range history[:cut] {
		if resolved[e.EventID] || cancelled[e.EventID] {
			continue
		}
		switch k := e.Kind.(type) {
		case duroxide.ActivityScheduled:
			plan.reruns = append(plan.reruns, duroxide.ActivityExecuteItem{Instance: instance, ExecutionID: next, ID: e.EventID,
				Name: k.Name, Input: k.Input, SessionID: k.SessionID, Tag: k.Tag})
		case duroxide.TimerCreated:
			plan.orch = append(plan.orch, duroxide.TimerFiredItem{Instance: instance, ExecutionID: next, ID: e.EventID, FireAtMs: k.FireAtMs})
		case duroxide.SubOrchestrationScheduled:
			plan.orch = append(plan.orch, duroxide.RewindInstanceItem{Instance: childInstanceID(instance, k.Instance),
				Reason: "parent rewound", ParentExecutionID: ptr(next)})
		}
	}
	return plan
}

// keptResult is the message that delivers e's result to execution next
// of instance again, or nil for an event whose result is not kept.
func keptResult(e duroxide.Event, instance string, next uint64) duroxide.WorkItem {
	id := sourceOf(e)
	switch k := e.Kind.(type) {
	case duroxide.ActivityCompleted:
		return duroxide.ActivityCompletedItem{Instance: instance, ExecutionID: next, ID: id, Result: k.Result}
	case duroxide.TimerFired:
		return duroxide.TimerFiredItem{Instance: instance, ExecutionID: next, ID: id, FireAtMs: k.FireAtMs}
	case duroxide.SubOrchestrationCompleted:
		return duroxide.SubOrchCompletedItem{ParentInstance: instance, ParentExecutionID: next, ParentID: id, Result: k.Result}
	case duroxide.ExternalEvent:
		return duroxide.ExternalRaisedItem{Instance: instance, Name: k.Name, Data: k.Data}
	case duroxide.ExternalEventPersistent:
		return duroxide.QueueMessageItem{Instance: instance, Name: k.Name, Data: k.Data}
	}
	return nil
}

// poisonedMessages decodes the messages an orchestration poison recorded
// (marshalItems) and readdresses them to execution next: completions of
// the poisoned execution become completions of the new one.
func poisonedMessages(p duroxide.PoisonError, from, next uint64) ([]duroxide.WorkItem, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal([]byte(p.Message), &raws); err != nil {
		return nil, err
	}
	var out []duroxide.WorkItem
	for _, raw := range raws {
		w, err := duroxide.UnmarshalWorkItem(raw)
		if err != nil {
			return nil, err
		}
		if w = readdress(w, from, next); w != nil {
			out = append(out, w)
		}
	}
	return out, nil
}

// readdress moves a message for execution from to execution next
// (nil: a request to rewind, which is not delivered again).
func readdress(w duroxide.WorkItem, from, next uint64) duroxide.WorkItem {
	switch m := w.(type) {
	case duroxide.RewindInstanceItem, duroxide.RedriveInstanceItem:
		return nil
	case duroxide.ActivityCompletedItem:
		if m.ExecutionID == from {
			m.ExecutionID = next
		}
		return m
	case duroxide.ActivityFailedItem:
		if m.ExecutionID == from {
			m.ExecutionID = next
		}
		return m
	case duroxide.TimerFiredItem:
		if m.ExecutionID == from {
			m.ExecutionID = next
		}
		return m
	case duroxide.SubOrchCompletedItem:
		if m.ParentExecutionID == from {
			m.ParentExecutionID = next
		}
		return m
	case duroxide.SubOrchFailedItem:
		if m.ParentExecutionID == from {
			m.ParentExecutionID = next
		}
		return m
	}
	return w
}

// sourceOf is e's source event id (0 for events without one).
func sourceOf(e duroxide.Event) uint64 {
	if e.SourceEventID == nil {
		return 0
	}
	return *e.SourceEventID
}
