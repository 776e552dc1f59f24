package duroxide

import (
	"context"
	"time"
)

// WorkHandOff is an optional Provider capability: an orchestration ack
// that writes some of the turn's new activity work items already locked
// for the acking runtime's own workers, and returns them locked, so those
// activities cost no discovery query and no lock request of their own
// (on Cosmos DB the items are created in the turn's batch with their lock
// set, at no extra request). A runtime detects it by type assertion and
// runs the returned items as if its workers had fetched them. Go-only.
//
// A provider that wraps another must forward it or leave it out; a
// wrapper that forwards it must apply to it what it applies to
// AckOrchestrationItem and FetchWorkItem.
type WorkHandOff interface {
	// AckOrchestrationItemAndLock commits lockToken's turn exactly as
	// AckOrchestrationItem does (same errors, same effect), except that
	// up to want.Max of commit's worker items are written locked, for
	// want.LockTimeout, as FetchWorkItem would lock them (attempt 1), and
	// returned. Only items that FetchWorkItem with a nil session
	// configuration and want.Tags could return are eligible: of the
	// instance being acked, of no session, visible at once, not cancelled
	// by the same commit, and accepted by want.Accept when it is set. The
	// ack's outcome is the error alone; locked is nil unless err is nil.
	// An item the provider could not lock in the same request is written
	// unlocked, as AckOrchestrationItem writes it.
	AckOrchestrationItemAndLock(ctx context.Context, lockToken string, commit OrchestrationCommit, want LocalWork) (locked []*LockedWorkItem, err error)
}

// LocalWork is what a runtime asks a WorkHandOff ack to lock for its own
// workers.
type LocalWork struct {
	// Max is how many items may be locked; 0 locks none.
	Max int
	// LockTimeout is each item's lock, as FetchWorkItem's lockTimeout.
	LockTimeout time.Duration
	// Tags is the workers' tag filter, as FetchWorkItem's tags.
	Tags TagFilter
	// Accept, when set, says which activities the workers run (by name):
	// an item it refuses is written unlocked for any runtime to fetch.
	Accept func(activityName string) bool
}

// Eligible reports whether a worker item of the acked instance may be
// locked under w: an activity of no session, that w's tags and Accept
// allow. Providers apply it to the items they would create; the instance,
// visibility and cancellation are theirs to check.
func (w LocalWork) Eligible(item WorkItem) bool {
	a, ok := item.(ActivityExecuteItem)
	if !ok || a.SessionID != nil || !w.Tags.Matches(a.Tag) {
		return false
	}
	return w.Accept == nil || w.Accept(a.Name)
}
