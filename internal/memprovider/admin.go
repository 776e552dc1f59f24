// OWNERSHIP: this file belongs to the engineer implementing the
// ProviderAdmin side of memprovider (management, deletion, bulk_deletion
// and prune modules). It is a placeholder so the package builds; replace
// it wholesale. The state it needs is described on Provider and its
// unexported types in memprovider.go (take p.mu for every access).
// Deleting an instance must also remove its instance lock, its queue
// messages (orchestrator and worker), its history, KV and custom status,
// so that stale lock tokens fail.

package memprovider

import (
	"context"

	"github.com/duroxide-go/cdb/duroxide"
)

// admin implements duroxide.ProviderAdmin over a Provider.
type admin struct {
	p *Provider
}

var _ duroxide.ProviderAdmin = (*admin)(nil)

func notImplemented(op string) error { return duroxide.Permanent(op, "not implemented") }

func (a *admin) ListInstances(context.Context) ([]string, error) {
	return nil, notImplemented("list_instances")
}

func (a *admin) ListInstancesByStatus(context.Context, string) ([]string, error) {
	return nil, notImplemented("list_instances_by_status")
}

func (a *admin) ListExecutions(context.Context, string) ([]uint64, error) {
	return nil, notImplemented("list_executions")
}

func (a *admin) ReadHistoryWithExecutionID(context.Context, string, uint64) ([]duroxide.Event, error) {
	return nil, notImplemented("read_history_with_execution_id")
}

func (a *admin) ReadHistory(context.Context, string) ([]duroxide.Event, error) {
	return nil, notImplemented("read_history")
}

func (a *admin) LatestExecutionID(context.Context, string) (uint64, error) {
	return 0, notImplemented("latest_execution_id")
}

func (a *admin) GetInstanceInfo(context.Context, string) (*duroxide.InstanceInfo, error) {
	return nil, notImplemented("get_instance_info")
}

func (a *admin) GetExecutionInfo(context.Context, string, uint64) (*duroxide.ExecutionInfo, error) {
	return nil, notImplemented("get_execution_info")
}

func (a *admin) GetSystemMetrics(context.Context) (*duroxide.SystemMetrics, error) {
	return nil, notImplemented("get_system_metrics")
}

func (a *admin) GetQueueDepths(context.Context) (*duroxide.QueueDepths, error) {
	return nil, notImplemented("get_queue_depths")
}

func (a *admin) ListChildren(context.Context, string) ([]string, error) {
	return nil, notImplemented("list_children")
}

func (a *admin) GetParentID(context.Context, string) (string, bool, error) {
	return "", false, notImplemented("get_parent_id")
}

func (a *admin) DeleteInstancesAtomic(context.Context, []string, bool) (*duroxide.DeleteInstanceResult, error) {
	return nil, notImplemented("delete_instances_atomic")
}

func (a *admin) GetInstanceTree(ctx context.Context, instance string) (*duroxide.InstanceTree, error) {
	return duroxide.GetInstanceTree(ctx, a, instance)
}

func (a *admin) DeleteInstance(ctx context.Context, instance string, force bool) (*duroxide.DeleteInstanceResult, error) {
	return duroxide.DeleteInstance(ctx, a, instance, force)
}

func (a *admin) DeleteInstanceBulk(context.Context, duroxide.InstanceFilter) (*duroxide.DeleteInstanceResult, error) {
	return nil, notImplemented("delete_instance_bulk")
}

func (a *admin) PruneExecutions(context.Context, string, duroxide.PruneOptions) (*duroxide.PruneResult, error) {
	return nil, notImplemented("prune_executions")
}

func (a *admin) PruneExecutionsBulk(context.Context, duroxide.InstanceFilter, duroxide.PruneOptions) (*duroxide.PruneResult, error) {
	return nil, notImplemented("prune_executions_bulk")
}
