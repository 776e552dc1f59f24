package duroxide

import (
	"context"
	"time"
)

// WorkAckFetcher is an optional Provider capability: an activity's ack
// that also locks the worker's next item when the store can do both in
// one request (on Cosmos DB, one transactional batch in the instance's
// partition: a fan-out's activities live there). A runtime detects it by
// type assertion and carries the returned item to its next run instead
// of fetching. Go-only.
//
// A provider that wraps another must forward it or leave it out; a
// wrapper that forwards it must apply to it what it applies to
// AckWorkItem and FetchWorkItem.
type WorkAckFetcher interface {
	// AckWorkItemAndFetch acks lockToken with completion exactly as
	// AckWorkItem does (same errors, same effect), and may also lock a
	// ready work item of no session that tags allow, for lockTimeout, as
	// FetchWorkItem would with a nil session configuration. next is nil
	// when no such item could be locked in the same request; the ack's
	// outcome is the error alone.
	AckWorkItemAndFetch(ctx context.Context, lockToken string, completion WorkItem, lockTimeout time.Duration, tags TagFilter) (next *LockedWorkItem, err error)
}
