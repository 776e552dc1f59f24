package memprovider

import (
	"context"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// Handing a turn's activities to the acking runtime (duroxide.WorkHandOff):
// the ack inserts them locked, as the Cosmos provider writes them in the
// turn's batch, so the runtime's workers run them without a fetch.

var _ duroxide.WorkHandOff = (*Provider)(nil)

// AckOrchestrationItemAndLock implements duroxide.WorkHandOff.
func (p *Provider) AckOrchestrationItemAndLock(ctx context.Context, lockToken string, commit duroxide.OrchestrationCommit, want duroxide.LocalWork) ([]*duroxide.LockedWorkItem, error) {
	return p.ackTurn(ctx, lockToken, commit, want)
}

// handOff locks m for the caller when want allows it: an eligible
// activity of the acked instance, not cancelled by the same commit, and
// fewer than want.Max locked so far. It returns the locked item, or nil.
func handOff(m *workMessage, instance string, commit duroxide.OrchestrationCommit, want duroxide.LocalWork, locked int, now time.Time) *duroxide.LockedWorkItem {
	if locked >= want.Max || m.item.Instance != instance || !want.Eligible(m.item) || cancelledBy(commit, m.item) {
		return nil
	}
	m.lockToken, m.lockedUntil = newToken(), now.Add(want.LockTimeout)
	m.attempts = 1
	return &duroxide.LockedWorkItem{Item: m.item, LockToken: m.lockToken, AttemptCount: 1, EnqueuedAt: m.enqueuedAt}
}

func cancelledBy(c duroxide.OrchestrationCommit, a duroxide.ActivityExecuteItem) bool {
	for _, x := range c.CancelledActivities {
		if x.Instance == a.Instance && x.ExecutionID == a.ExecutionID && x.ActivityID == a.ID {
			return true
		}
	}
	return false
}

// unhanded is c without the handed activities, for the enqueue
// notification: nobody needs waking for an activity already locked.
func unhanded(c duroxide.OrchestrationCommit, handed []*duroxide.LockedWorkItem) duroxide.OrchestrationCommit {
	if len(handed) == 0 {
		return c
	}
	type key struct {
		instance string
		id       uint64
	}
	ids := make(map[key]bool, len(handed))
	for _, h := range handed {
		a := h.Item.(duroxide.ActivityExecuteItem)
		ids[key{a.Instance, a.ID}] = true
	}
	rest := make([]duroxide.WorkItem, 0, len(c.WorkerItems))
	for _, w := range c.WorkerItems {
		if a, ok := w.(duroxide.ActivityExecuteItem); !ok || !ids[key{a.Instance, a.ID}] {
			rest = append(rest, w)
		}
	}
	c.WorkerItems = rest
	return c
}
