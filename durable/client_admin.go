package durable

// The Client's management calls (Rust: the Client's admin methods over
// ProviderAdmin): listing, inspecting, deleting and pruning instances.

import (
	"context"

	"github.com/duroxide-go/cdb/duroxide"
)

// HasManagementCapability reports whether the provider offers admin calls.
func (c *Client) HasManagementCapability() bool { return c.p.Admin() != nil }

func (c *Client) admin() (duroxide.ProviderAdmin, error) {
	if a := c.p.Admin(); a != nil {
		return a, nil
	}
	return nil, ErrManagementNotAvailable
}

// ListInstances lists every instance id or, with ListOptions.Status, the
// ids of the instances in that status (Rust: list_all_instances and
// list_instances_by_status).
func (c *Client) ListInstances(ctx context.Context, opts ...ListOptions) ([]string, error) {
	a, err := c.admin()
	if err != nil {
		return nil, err
	}
	if o := lastOption(opts); o.Status != "" {
		return a.ListInstancesByStatus(ctx, o.Status)
	}
	return a.ListInstances(ctx)
}

// InstanceInfo describes instance (Rust: get_instance_info).
func (c *Client) InstanceInfo(ctx context.Context, instance string) (*duroxide.InstanceInfo, error) {
	a, err := c.admin()
	if err != nil {
		return nil, err
	}
	return a.InstanceInfo(ctx, instance)
}

// ExecutionInfo describes one execution of instance (Rust:
// get_execution_info).
func (c *Client) ExecutionInfo(ctx context.Context, instance string, executionID uint64) (*duroxide.ExecutionInfo, error) {
	a, err := c.admin()
	if err != nil {
		return nil, err
	}
	return a.ExecutionInfo(ctx, instance, executionID)
}

// ListExecutions lists instance's execution ids; a missing instance is
// ErrInstanceNotFound.
func (c *Client) ListExecutions(ctx context.Context, instance string) ([]uint64, error) {
	a, err := c.admin()
	if err != nil {
		return nil, err
	}
	execs, err := a.ListExecutions(ctx, instance)
	if err == nil && len(execs) == 0 {
		err = c.notFoundIfMissing(ctx, instance)
	}
	if err != nil {
		return nil, err
	}
	return execs, nil
}

// ExecutionHistory reads one execution's history; a missing instance
// is ErrInstanceNotFound. Rust: read_execution_history.
func (c *Client) ExecutionHistory(ctx context.Context, instance string, executionID uint64) ([]duroxide.Event, error) {
	a, err := c.admin()
	if err != nil {
		return nil, err
	}
	h, err := a.ReadHistoryWithExecutionID(ctx, instance, executionID)
	if err == nil && len(h) == 0 {
		err = c.notFoundIfMissing(ctx, instance)
	}
	if err != nil {
		return nil, err
	}
	return h, nil
}

// SystemMetrics returns store-wide instance counts (Rust:
// get_system_metrics).
func (c *Client) SystemMetrics(ctx context.Context) (*duroxide.SystemMetrics, error) {
	a, err := c.admin()
	if err != nil {
		return nil, err
	}
	return a.SystemMetrics(ctx)
}

// QueueDepths returns the queues' lengths (Rust: get_queue_depths).
func (c *Client) QueueDepths(ctx context.Context) (*duroxide.QueueDepths, error) {
	a, err := c.admin()
	if err != nil {
		return nil, err
	}
	return a.QueueDepths(ctx)
}

// InstanceTree returns instance and all its descendants (Rust:
// get_instance_tree).
func (c *Client) InstanceTree(ctx context.Context, instance string) (*duroxide.InstanceTree, error) {
	a, err := c.admin()
	if err != nil {
		return nil, err
	}
	return a.InstanceTree(ctx, instance)
}

// DeleteInstance deletes a root instance and its descendants. A running
// instance is refused (ErrInstanceStillRunning) unless
// DeleteOptions.Force is set; a sub-orchestration is refused
// (ErrCannotDeleteSubOrchestration): it goes with its root. DeleteMany
// deletes what a search selects.
func (c *Client) DeleteInstance(ctx context.Context, instance string, opts ...DeleteOptions) (*duroxide.DeleteInstanceResult, error) {
	a, err := c.admin()
	if err != nil {
		return nil, err
	}
	// The provider's error carries its kind (ErrInstanceNotFound,
	// ErrInstanceStillRunning, ErrCannotDeleteSubOrchestration): Rust's
	// client matches the message's words, which differ between providers.
	return a.DeleteInstance(ctx, instance, lastOption(opts).Force)
}

// PruneExecutions deletes old executions of instance (the current one is
// always kept); PruneMany prunes what a search selects.
func (c *Client) PruneExecutions(ctx context.Context, instance string, options duroxide.PruneOptions) (*duroxide.PruneResult, error) {
	a, err := c.admin()
	if err != nil {
		return nil, err
	}
	return a.PruneExecutions(ctx, instance, options)
}
