package durable

import "github.com/duroxide-go/cdb/duroxide"

// Suspension (Client.Suspend, Client.Resume) is the provider's: a turn
// that takes a SuspendInstanceItem commits OrchestrationCommit.Suspend,
// and from then on the provider hands out none of the instance's
// messages until a ResumeInstanceItem (or a CancelInstanceItem) arrives;
// that fetch brings every message held meanwhile. The runtime only
// translates the items into the commit's change: the history is not
// touched, so an instance that is never suspended writes what duroxide
// writes.

// takeSuspension removes the suspend and resume requests from messages
// and returns the change they make, the last one winning (nil: none).
func takeSuspension(messages []duroxide.WorkItem) (*duroxide.SuspendChange, []duroxide.WorkItem) {
	var change *duroxide.SuspendChange
	rest := messages[:0:0]
	for _, m := range messages {
		switch w := m.(type) {
		case duroxide.SuspendInstanceItem:
			change = &duroxide.SuspendChange{Suspended: true, Reason: w.Reason}
		case duroxide.ResumeInstanceItem:
			change = &duroxide.SuspendChange{}
		default:
			rest = append(rest, m)
		}
	}
	if change == nil {
		return nil, messages
	}
	return change, rest
}

// settleSuspension sets the suspension change t commits from the
// batch's request, change (nil: none), now that the turn's outcome is
// known. An execution that ends is not suspended: the provider clears
// the suspension of an ending commit (duroxide.SuspendChange), so a
// cancellation that reaches a suspended instance, or a poisoned wake,
// leaves it free for a restart, rewind or re-drive. A suspension
// requested of an execution that continues as new is the next
// execution's: the request goes back to the instance's queue after the
// ContinueAsNew item, ahead of what else the turn carries, so the new
// execution's first turn takes it and is the one Resume finds.
func (t *turn) settleSuspension(change *duroxide.SuspendChange) {
	switch valueOf(t.metadata.Status) {
	case duroxide.StatusCompleted, duroxide.StatusFailed:
	case duroxide.StatusContinuedAsNew:
		if change != nil && change.Suspended {
			t.carried = append([]duroxide.WorkItem{duroxide.SuspendInstanceItem{Instance: t.instance, Reason: change.Reason}}, t.carried...)
		}
	default:
		t.suspend = change
	}
}
