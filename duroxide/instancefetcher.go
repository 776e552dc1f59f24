package duroxide

import (
	"context"
	"time"
)

// InstanceFetcher is an optional Provider capability: a fetch of one
// named instance's ready messages, for a runtime that already knows which
// instance has work (this process enqueued its message). Without it, each
// loop woken for that work runs discovery, and loops woken at once find
// the same instance and all but one come back empty. A runtime detects it
// by type assertion and still runs discovery for work it was not told
// of. Go-only.
//
// A provider that wraps another must forward it or leave it out; a
// wrapper that forwards it must apply to it what it applies to
// FetchOrchestrationItem.
type InstanceFetcher interface {
	// FetchOrchestrationInstance locks instance and its ready messages
	// exactly as FetchOrchestrationItem would had discovery found the
	// instance first, and returns the same item. It returns nil, nil when
	// the instance has no ready message, is locked, or is refused by
	// filter.
	FetchOrchestrationInstance(ctx context.Context, instance string, lockTimeout time.Duration, filter *DispatcherCapabilityFilter) (*OrchestrationItem, error)
}
