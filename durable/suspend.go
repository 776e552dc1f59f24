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

// suspensionAfter is the change a turn commits: the requested one, but
// an instance that ends is not suspended (a cancellation reaches a
// suspended instance and ends it), so that a later restart or rewind
// starts unsuspended.
func suspensionAfter(change *duroxide.SuspendChange, status *string, messages []duroxide.WorkItem) *duroxide.SuspendChange {
	switch valueOf(status) {
	case duroxide.StatusCompleted, duroxide.StatusFailed:
		for _, m := range messages {
			if duroxide.WakesSuspended(m) {
				return &duroxide.SuspendChange{}
			}
		}
		if change != nil {
			return &duroxide.SuspendChange{}
		}
	}
	return change
}
