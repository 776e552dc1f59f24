package ops

import (
	"context"
	"fmt"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// Bulk performs a on every instance q selects, page by page in the
// store's cheapest order, through the Client's bulk operations: cancel
// (CancelMany, with r.Reason) and purge (DeleteMany; r.Force sets
// o.Force). They skip the instances the action does not apply to
// (cancelling a terminal instance, purging a running one without force,
// purging a sub-orchestration apart from its root), carry on past
// failures, and report after each page through o.Progress. Other actions
// are ErrNotSupported in bulk.
func (s *Service) Bulk(ctx context.Context, q duroxide.InstanceQuery, a Action, r Request, o durable.BulkOptions) (*durable.BulkResult, error) {
	switch a {
	case ActionCancel:
		return s.c.CancelMany(ctx, q, r.Reason, o)
	case ActionPurge:
		o.Force = o.Force || r.Force
		return s.c.DeleteMany(ctx, q, o)
	}
	return nil, fmt.Errorf("%s of many instances: %w", a, ErrNotSupported)
}

// BulkSupported reports whether Bulk can perform a.
func BulkSupported(a Action) bool { return a == ActionCancel || a == ActionPurge }
