package cdb

import (
	"context"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Request priorities (Options.BackgroundPriority; internal/cosmos
// priority.go). The provider marks as background the calls that do not
// move locked work forward, at the one place each begins:
//
//   - discovery (discoverIn): the cross-partition polls for work, the
//     provider's idle cost. Only the poll: locking a candidate it found
//     and loading the instance are the turn's first requests. A throttled
//     poll is retried like any 429 (Options.Retry) and then fails the
//     fetch as retryable, so under sustained throttling dispatchers take
//     on new work more slowly while the work they hold still commits:
//     back-pressure, not loss.
//   - the maintenance loop and RunMaintenance: outbox deliveries, large
//     turns' roll-forward and deletions' sweeps that a crash left half
//     done. The process that made them does each at once (at High), so
//     the loop is a backstop that can wait. Reclaiming an expired lock is
//     not maintenance here: a fetch does it with the lock batch (High).
//   - CleanupOrphanedSessions, SearchInstances, ListInstances,
//     ListInstancesByStatus, SystemMetrics, QueueDepths, PruneExecutions,
//     PruneExecutionsBulk and DeleteInstanceBulk: sweeps and reads whose
//     delay nobody's progress waits on.
//
// Lease and lock renewals, acks, abandons, client writes, single-instance
// deletes and status reads are left unmarked: they keep their place
// under throttling. A caller overrides either way with duroxide's
// request-priority hint (callerPriority).

// background marks ctx's requests as background (Low unless
// Options.BackgroundPriority is High).
func background(ctx context.Context) context.Context {
	return cosmos.WithPriority(ctx, cosmos.PriorityLow)
}

// callerPriority maps the caller's duroxide.RequestPriority hint to the
// store's priority; it outranks the provider's own marks.
func callerPriority(ctx context.Context) cosmos.Priority {
	switch duroxide.RequestPriorityOf(ctx) {
	case duroxide.PriorityLow:
		return cosmos.PriorityLow
	case duroxide.PriorityHigh:
		return cosmos.PriorityHigh
	}
	return cosmos.PriorityDefault
}
