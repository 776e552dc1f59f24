package durable

import (
	"fmt"

	"github.com/duroxide-go/cdb/duroxide"
)

// Patching: changing orchestration code while instances started by the old
// code are still running. The decision is recorded as a system call (an
// ActivityScheduled/ActivityCompleted pair named SyscallPatch whose input
// is the change id) so that a history stays one Rust's runtime replays and
// a replay finds the decision where the code made it.

// Patched reports whether this execution takes the new branch of the code
// change changeID:
//
//	if ctx.Patched("send-receipt") {
//		// new code
//	} else {
//		// the code instances started before the change ran here
//	}
//
// An execution reaching the call past its recorded history (a new
// instance, or one that had not reached this point when the change was
// deployed) records the patch marker, waits for it to be recorded, and
// takes the new branch (true). Replaying, it takes the new branch exactly
// when the marker is recorded at this point; a history that recorded
// something else here was made by the old code, which is replayed (false,
// nothing recorded). Every later call with the same id in the execution
// answers the same; a new execution (continue-as-new) decides again, so it
// takes the new branch.
//
// changeID must be a constant (durablecheck reports one that is not) and
// not empty; an empty one panics, failing the orchestration. Once no
// running instance takes the old branch (replayer.Report.OldPatchBranches
// says which do), replace the call by DeprecatePatch and delete the old
// branch.
func (c *OrchestrationContext) Patched(changeID string) bool {
	mustChangeID("Patched", changeID)
	if patched, ok := c.patches[changeID]; ok {
		return patched
	}
	recorded, replaying := c.recordedAtPosition()
	if replaying && !isPatchMarker(recorded, changeID) {
		put(&c.patches, changeID, false)
		c.oldPatches = append(c.oldPatches, changeID)
		return false
	}
	put(&c.patches, changeID, true)
	c.awaitPatchMarker(changeID)
	return true
}

// DeprecatePatch is the new branch's code once no running instance takes
// the old branch of changeID: in place of the Patched call, it replays a
// history that recorded the patch marker here (it consumes the marker) and
// one that did not, and records nothing itself. Once no history holds the
// marker either, the call can be deleted. changeID follows Patched's rules.
func (c *OrchestrationContext) DeprecatePatch(changeID string) {
	mustChangeID("DeprecatePatch", changeID)
	if _, ok := c.patches[changeID]; ok {
		return
	}
	put(&c.patches, changeID, true)
	if recorded, replaying := c.recordedAtPosition(); replaying && isPatchMarker(recorded, changeID) {
		c.awaitPatchMarker(changeID)
	}
}

// awaitPatchMarker schedules the marker and waits for its completion, as
// a replay of it would: the marker's result carries nothing, so its
// failure (an instance cancelled meanwhile) changes no decision.
func (c *OrchestrationContext) awaitPatchMarker(changeID string) {
	_, _ = c.scheduleActivity(SyscallPatch, changeID, "", "").Await()
}

// recordedAtPosition returns the history event the next action the code
// emits will be matched against; replaying is false when the code is past
// the recorded history.
func (c *OrchestrationContext) recordedAtPosition() (recorded duroxide.EventKind, replaying bool) {
	if c.engine == nil {
		return nil, false
	}
	return c.engine.recordedAtPosition(len(c.emitted))
}

// isPatchMarker reports whether kind is the marker Patched records for
// changeID.
func isPatchMarker(kind duroxide.EventKind, changeID string) bool {
	k, ok := kind.(duroxide.ActivityScheduled)
	return ok && k.Name == SyscallPatch && k.Input == changeID && k.SessionID == nil && k.Tag == nil
}

// PatchMarkers returns the change ids whose patch marker history records,
// in order: the patches an execution took the new branch of.
func PatchMarkers(history []duroxide.Event) []string {
	var ids []string
	for _, ev := range history {
		if k, ok := ev.Kind.(duroxide.ActivityScheduled); ok && isPatchMarker(k, k.Input) {
			ids = append(ids, k.Input)
		}
	}
	return ids
}

// mustChangeID panics on an empty change id: no marker could name it, and
// the call has no error to return (the code is wrong, not the history).
func mustChangeID(call, changeID string) {
	if changeID == "" {
		panic(fmt.Errorf("%w: %s: the change id must not be empty", ErrInvalidInput, call))
	}
}
