package memprovider

import (
	"context"

	"github.com/duroxide-go/cdb/duroxide"
)

// deleteUnstarted deletes instance if it is a client start that has not
// run yet (a delayed start before its time, say): its queued messages go
// and the id is free, its next life numbering executions after the
// deleted start's, as the Cosmos provider's retired record does. A start
// whose first turn is running (its message locked) is refused as
// running, as the Cosmos provider refuses it. ok is false for any other
// instance, which the ordinary deletion handles.
func (a *admin) deleteUnstarted(ctx context.Context, instance string) (*duroxide.DeleteInstanceResult, bool, error) {
	const op = "delete_instance"
	if err := a.p.checkIDs(op, instance); err != nil {
		return nil, false, err
	}
	unlock, err := a.lock(ctx, op)
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	if _, client := a.p.edge.starts[instance]; !client || a.p.instances[instance] != nil || !a.p.existsLocked(instance) {
		return nil, false, nil // not a queued client start
	}
	now := a.p.now()
	for _, m := range a.p.orchQueue {
		if _, start := m.item.(duroxide.StartOrchestrationItem); start && m.instance == instance && m.lockToken != "" && m.lockedUntil.After(now) {
			return nil, true, duroxide.Kinded(duroxide.ErrInstanceStillRunning, op, "instance %q is running its first turn; retry the deletion", instance)
		}
	}
	res := &duroxide.DeleteInstanceResult{InstancesDeleted: 1}
	last := a.p.edge.lastExecutions[instance]
	orch := a.p.orchQueue[:0]
	for _, m := range a.p.orchQueue {
		if m.instance != instance {
			orch = append(orch, m)
			continue
		}
		res.QueueMessagesDeleted++
		if s, ok := m.item.(duroxide.StartOrchestrationItem); ok {
			last = max(last, s.ExecutionID)
		}
	}
	clear(a.p.orchQueue[len(orch):])
	a.p.orchQueue = orch
	delete(a.p.instanceLocks, instance)
	e := &a.p.edge
	delete(e.starts, instance)
	delete(e.keys, instance)
	delete(e.notes, instance)
	delete(e.claims, instance)
	if e.lastExecutions == nil {
		e.lastExecutions = map[string]uint64{}
	}
	e.lastExecutions[instance] = last
	return res, true, nil
}
