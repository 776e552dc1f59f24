package duroxide

import (
	"context"
)

// ProviderAdmin is the management contract: discovery, search, metrics,
// deletion and pruning. Obtain it through Provider.Admin. Rust's get_*
// methods (get_instance_info, get_parent_id, ...) drop the prefix in Go.
type ProviderAdmin interface {
	ListInstances(ctx context.Context) ([]string, error)
	ListInstancesByStatus(ctx context.Context, status string) ([]string, error)
	ListExecutions(ctx context.Context, instance string) ([]uint64, error)
	ReadHistoryWithExecutionID(ctx context.Context, instance string, executionID uint64) ([]Event, error)
	ReadHistory(ctx context.Context, instance string) ([]Event, error)
	LatestExecutionID(ctx context.Context, instance string) (uint64, error)
	// InstanceInfo fails for an unknown instance.
	InstanceInfo(ctx context.Context, instance string) (*InstanceInfo, error)
	ExecutionInfo(ctx context.Context, instance string, executionID uint64) (*ExecutionInfo, error)
	SystemMetrics(ctx context.Context) (*SystemMetrics, error)
	QueueDepths(ctx context.Context) (*QueueDepths, error)
	// ListChildren returns direct children; empty for an unknown instance.
	ListChildren(ctx context.Context, instance string) ([]string, error)
	// ParentID returns the parent ("" for a root); fails when unknown.
	ParentID(ctx context.Context, instance string) (parent string, hasParent bool, err error)
	// DeleteInstancesAtomic deletes all of ids or none of them.
	DeleteInstancesAtomic(ctx context.Context, ids []string, force bool) (*DeleteInstanceResult, error)
	// InstanceTree returns the instance and all descendants; see
	// WalkInstanceTree for a default implementation.
	InstanceTree(ctx context.Context, instance string) (*InstanceTree, error)
	// DeleteInstance deletes a root and its descendants; see the
	// DeleteInstance helper for a default implementation.
	DeleteInstance(ctx context.Context, instance string, force bool) (*DeleteInstanceResult, error)
	DeleteInstanceBulk(ctx context.Context, filter InstanceFilter) (*DeleteInstanceResult, error)
	PruneExecutions(ctx context.Context, instance string, options PruneOptions) (*PruneResult, error)
	PruneExecutionsBulk(ctx context.Context, filter InstanceFilter, options PruneOptions) (*PruneResult, error)
	// SearchInstances returns one page of the instances q selects, in
	// q.OrderBy; q.Validate's errors and a token that is not a
	// continuation of the same search are ErrInvalidInput (search.go).
	SearchInstances(ctx context.Context, q InstanceQuery) (*InstancePage, error)
}

// InstanceInfo describes an instance.
type InstanceInfo struct {
	InstanceID           string
	OrchestrationName    string
	OrchestrationVersion string
	CurrentExecutionID   uint64
	Status               string
	Output               *string
	CreatedAt            uint64 // ms since the epoch
	UpdatedAt            uint64
	ParentInstanceID     *string
}

// ExecutionInfo describes one execution of an instance.
type ExecutionInfo struct {
	ExecutionID uint64
	Status      string
	Output      *string
	StartedAt   uint64
	CompletedAt *uint64
	EventCount  int
}

// SystemMetrics are store-wide counts.
type SystemMetrics struct {
	TotalInstances     uint64
	TotalExecutions    uint64
	RunningInstances   uint64
	CompletedInstances uint64
	FailedInstances    uint64
	TotalEvents        uint64
}

// QueueDepths counts unlocked messages. TimerQueue is always zero: timers
// live in the orchestrator queue.
type QueueDepths struct {
	OrchestratorQueue int
	WorkerQueue       int
	TimerQueue        int
}

// DeleteInstanceResult counts what a deletion removed.
type DeleteInstanceResult struct {
	InstancesDeleted     uint64
	ExecutionsDeleted    uint64
	EventsDeleted        uint64
	QueueMessagesDeleted uint64
}

// Add accumulates o into r.
func (r *DeleteInstanceResult) Add(o DeleteInstanceResult) {
	r.InstancesDeleted += o.InstancesDeleted
	r.ExecutionsDeleted += o.ExecutionsDeleted
	r.EventsDeleted += o.EventsDeleted
	r.QueueMessagesDeleted += o.QueueMessagesDeleted
}

// PruneOptions selects executions to prune. KeepLast nil, 0 and 1 are
// equivalent; the current execution is always kept.
type PruneOptions struct {
	KeepLast        *uint32
	CompletedBefore *uint64 // ms since the epoch
}

// PruneResult counts what pruning removed.
type PruneResult struct {
	InstancesProcessed uint64
	ExecutionsDeleted  uint64
	EventsDeleted      uint64
}

// InstanceFilter selects instances for bulk operations. Criteria are ANDed
// and Limit is applied last.
type InstanceFilter struct {
	InstanceIDs     []string // nil = no restriction
	CompletedBefore *uint64  // ms since the epoch
	Limit           *uint32
}

// InstanceTree is an instance and all of its descendants.
type InstanceTree struct {
	RootID string
	AllIDs []string
}

// IsRootOnly reports whether the tree has no descendants.
func (t *InstanceTree) IsRootOnly() bool { return len(t.AllIDs) == 1 }

// Size is the number of instances in the tree.
func (t *InstanceTree) Size() int { return len(t.AllIDs) }

// WalkInstanceTree is the default ProviderAdmin.InstanceTree (Rust's
// default get_instance_tree): a depth-first walk of ListChildren starting
// at instance.
func WalkInstanceTree(ctx context.Context, a ProviderAdmin, instance string) (*InstanceTree, error) {
	tree := &InstanceTree{RootID: instance}
	seen := map[string]bool{}
	stack := []string{instance}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[id] {
			continue
		}
		seen[id] = true
		tree.AllIDs = append(tree.AllIDs, id)
		children, err := a.ListChildren(ctx, id)
		if err != nil {
			return nil, err
		}
		for i := len(children) - 1; i >= 0; i-- {
			stack = append(stack, children[i])
		}
	}
	return tree, nil
}

// DeleteInstance is the default DeleteInstance: it refuses a
// sub-orchestration (delete its root instead) and otherwise deletes the
// whole tree with DeleteInstancesAtomic.
func DeleteInstance(ctx context.Context, a ProviderAdmin, instance string, force bool) (*DeleteInstanceResult, error) {
	parent, hasParent, err := a.ParentID(ctx, instance)
	if err != nil {
		return nil, err
	}
	if hasParent {
		return nil, Kinded(ErrCannotDeleteSubOrchestration, "delete_instance", "cannot delete sub-orchestration %s directly; delete its root %s instead", instance, parent)
	}
	tree, err := a.InstanceTree(ctx, instance)
	if err != nil {
		return nil, err
	}
	return a.DeleteInstancesAtomic(ctx, tree.AllIDs, force)
}
