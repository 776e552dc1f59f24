package durable

import (
	"fmt"

	"github.com/duroxide-go/cdb/duroxide"
)

// Handing a turn's activities to this runtime's workers
// (duroxide.WorkHandOff). A turn that schedules activities asks its ack
// to write up to Options.WorkerHandOff of them locked for this runtime,
// less those handed off earlier that have not finished; each one handed
// back runs as if a worker loop had fetched it: its lock renewed while it
// waits for a worker slot, then run and acked. Only the activities the
// provider locked skip the queue; the rest are fetched as before, by this
// runtime or another.

// workLocal is what a turn's ack may lock for this runtime's workers; ok
// is false when nothing may be handed off (no capability, no room, no
// activity, or stopping).
func (rt *Runtime) workLocal(oc duroxide.OrchestrationCommit) (duroxide.WorkHandOff, duroxide.LocalWork, bool) {
	h, ok := rt.p.(duroxide.WorkHandOff)
	room := rt.opts.WorkerHandOff - int(rt.handedOff.Load())
	if !ok || room <= 0 || len(oc.WorkerItems) == 0 || rt.stopping() {
		return nil, duroxide.LocalWork{}, false
	}
	return h, duroxide.LocalWork{Max: room, LockTimeout: rt.opts.WorkerLockTimeout, Tags: rt.opts.WorkerTagFilter,
		Accept: func(name string) bool { _, ok := rt.resolveActivity(name); return ok }}, true
}

// runHandedOff runs the activities a turn's ack locked for this runtime,
// each on a goroutine of its own that waits for a worker slot (the loops
// fetching meanwhile wait for slots too, so slots still bound what runs,
// the item enqueued first served first: runSlots).
func (rt *Runtime) runHandedOff(items []*duroxide.LockedWorkItem) {
	for i, it := range items {
		rt.handedOff.Add(1)
		rt.wg.Add(1)
		go func() {
			defer rt.wg.Done()
			defer rt.handedOff.Add(-1)
			rt.runLocked(fmt.Sprintf("handoff-%d-%s", i, rt.id), it)
		}()
	}
}

// runLocked runs a locked item and whatever its ack locks next, as a
// worker loop would, until an ack locks nothing more. It holds no
// session (handed-off and carried items have none).
func (rt *Runtime) runLocked(workerID string, locked *duroxide.LockedWorkItem) {
	for locked != nil && !rt.stopping() {
		_, _, locked, _ = rt.processNextWorkItem(workerID, workerID, locked)
	}
	if locked != nil { // stopping: given back at once, its attempt not counted
		rt.abandon(duroxide.WorkerQueue, locked.Item.InstanceID(), locked.LockToken, 0, true)
	}
}
