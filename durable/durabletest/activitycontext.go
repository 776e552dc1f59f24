package durabletest

import (
	"context"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// NewActivityContext returns an ActivityContext for unit-testing an
// activity function outside a runtime: ctx supplies cancellation, c (may
// be nil) the client. The orchestration is "test" at version 1.0.0,
// execution 1, activity id 1, worker "test".
func NewActivityContext(ctx context.Context, instance, activityName string, c *durable.Client) durable.ActivityContext {
	return testhooks.NewActivityContext(ctx, instance, activityName, c).(durable.ActivityContext)
}
