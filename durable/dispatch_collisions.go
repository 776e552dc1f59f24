package durable

import (
	"fmt"

	"github.com/duroxide-go/cdb/duroxide"
)

// Sub-orchestration id collisions. A parent that starts a child under an
// id another instance already holds (an explicit id in use, or a start
// written straight to the store by a client that does not validate ids)
// would wait for ever: the start is a duplicate, so the instance ignores
// it and never reports to that parent. The turn that fetches such a
// start fails the colliding parent's future instead. A start whose parent
// is the one the instance started for is the same child's start delivered
// again (at least once), not a collision, and is ignored silently.

// collidingStarts returns the starts among messages that name a parent
// and are not the start this instance runs for: the instance already
// started (history) or another start in the batch was taken, and the
// start's parent differs from that one's.
func (t *turn) collidingStarts(messages []duroxide.WorkItem) []duroxide.StartOrchestrationItem {
	own := t.ownParent()
	var out []duroxide.StartOrchestrationItem
	for _, m := range messages {
		s, ok := m.(duroxide.StartOrchestrationItem)
		if !ok || s.ParentInstance == nil || s.ParentID == nil || sameStart(t.start, s) {
			continue
		}
		if own != nil && own.instance == *s.ParentInstance && own.id == *s.ParentID &&
			(own.executionID == nil || s.ParentExecutionID == nil || *own.executionID == *s.ParentExecutionID) {
			continue // the same parent's start again; a later parent execution at the same event id collides
		}
		out = append(out, s)
	}
	return out
}

// ownParent is the parent link the instance runs for: its history's, else
// the start item taken from this batch's; nil for a root.
func (t *turn) ownParent() *parentLink {
	if s := t.started; s != nil {
		return newParentLink(s.ParentInstance, s.ParentID, s.ParentExecutionID)
	}
	if s, ok := t.start.(duroxide.StartOrchestrationItem); ok {
		return newParentLink(s.ParentInstance, s.ParentID, s.ParentExecutionID)
	}
	return nil
}

// sameStart reports whether taken is the start item s itself.
func sameStart(taken duroxide.WorkItem, s duroxide.StartOrchestrationItem) bool {
	ts, ok := taken.(duroxide.StartOrchestrationItem)
	return ok && ts.Orchestration == s.Orchestration && ts.Input == s.Input &&
		ptrEqual(ts.ParentInstance, s.ParentInstance) && ptrEqual(ts.ParentID, s.ParentID)
}

func ptrEqual[T comparable](a, b *T) bool {
	return a == b || (a != nil && b != nil && *a == *b)
}

// notifyCollisions fails each colliding parent's sub-orchestration future
// in t's commit. terminal says the instance has ended for good; an
// instance between executions (continued as new) still exists as the same
// logical instance, so it is not called terminal. An error means a
// parent's execution could not be read; nothing may be sent until it is
// known where the failure goes.
func (rt *Runtime) notifyCollisions(t *turn, terminal bool) error {
	for _, s := range t.collisions {
		msg := fmt.Sprintf("sub-orchestration instance %q already exists", t.instance)
		if terminal {
			msg += " and is terminal"
		}
		rt.log.Warn("sub-orchestration start collides with an existing instance; failing the parent's future",
			"instance_id", t.instance, "parent_instance", *s.ParentInstance, "parent_id", *s.ParentID, "terminal", terminal)
		link := newParentLink(s.ParentInstance, s.ParentID, s.ParentExecutionID)
		exec, err := rt.parentExecution(link)
		if err != nil {
			return err
		}
		t.orch = append(t.orch, duroxide.SubOrchFailedItem{ParentInstance: link.instance,
			ParentExecutionID: exec, ParentID: link.id,
			Details: duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppOrchestrationFailed}, Message: msg}})
	}
	return nil
}
