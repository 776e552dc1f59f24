package cdb

import (
	"context"
	"sort"
	"strings"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Admin: discovery, metrics, deletion and pruning.
//
// Every instance is its own partition and the gateway refuses
// cross-partition ORDER BY, TOP, COUNT and DISTINCT, so store-wide
// operations are filter-only cross-partition queries that project only
// the fields they need, paged, and ordered or limited client-side. Each
// reads one small row per instance (or per queue message for queue
// depths), never history or message bodies; see docs/costs.md for costs.

// Admin implements duroxide.Provider: the provider is its own
// ProviderAdmin.
func (p *Provider) Admin() duroxide.ProviderAdmin { return p }

var _ duroxide.ProviderAdmin = (*Provider)(nil)

func (p *Provider) listIDs(ctx context.Context, op, where string, params cosmos.QueryParams) ([]string, error) {
	var ids []string
	err := p.scanInstances(ctx, "c.instanceId", where, params, func(r instanceRow) { ids = append(ids, r.InstanceID) })
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	sort.Strings(ids)
	return ids, nil
}

// ListInstances implements duroxide.ProviderAdmin.
func (p *Provider) ListInstances(ctx context.Context) ([]string, error) {
	return p.listIDs(background(ctx), "list_instances", "", nil) // a full scan (priority.go)
}

// ListInstancesByStatus implements duroxide.ProviderAdmin.
func (p *Provider) ListInstancesByStatus(ctx context.Context, status string) ([]string, error) {
	return p.listIDs(background(ctx), "list_instances_by_status", " AND c.status = @status", cosmos.QueryParams{}.Add("@status", status))
}

// ListChildren implements duroxide.ProviderAdmin; empty for an unknown
// instance.
func (p *Provider) ListChildren(ctx context.Context, instance string) ([]string, error) {
	return p.listIDs(ctx, "list_children", " AND c.parentInstanceId = @parent", cosmos.QueryParams{}.Add("@parent", instance))
}

// ParentID implements duroxide.ProviderAdmin.
func (p *Provider) ParentID(ctx context.Context, instance string) (string, bool, error) {
	doc, _, err := p.mustInstance(ctx, "get_parent_id", instance)
	if err != nil {
		return "", false, err
	}
	if doc.ParentInstanceID == nil {
		return "", false, nil
	}
	return *doc.ParentInstanceID, true, nil
}

// InstanceInfo implements duroxide.ProviderAdmin.
func (p *Provider) InstanceInfo(ctx context.Context, instance string) (*duroxide.InstanceInfo, error) {
	doc, _, err := p.mustInstance(ctx, "get_instance_info", instance)
	if err != nil {
		return nil, err
	}
	return &duroxide.InstanceInfo{
		InstanceID: instance, OrchestrationName: doc.OrchestrationName, OrchestrationVersion: doc.OrchestrationVersion,
		CurrentExecutionID: doc.CurrentExecutionID, Status: doc.Status, Output: doc.Output,
		CreatedAt: uint64(doc.CreatedAt), UpdatedAt: uint64(doc.UpdatedAt), ParentInstanceID: doc.ParentInstanceID,
	}, nil
}

// LatestExecutionID implements duroxide.ProviderAdmin.
func (p *Provider) LatestExecutionID(ctx context.Context, instance string) (uint64, error) {
	doc, _, err := p.mustInstance(ctx, "latest_execution_id", instance)
	if err != nil {
		return 0, err
	}
	return doc.CurrentExecutionID, nil
}

// ListExecutions implements duroxide.ProviderAdmin. It asks the history
// itself (DISTINCT is fine inside one partition), so it is right for
// instances written by the Rust crate too and after pruning.
func (p *Provider) ListExecutions(ctx context.Context, instance string) ([]uint64, error) {
	const op = "list_executions"
	if err := validateInstanceID(op, instance); err != nil {
		return nil, err
	}
	doc, _, err := p.readInstance(ctx, instance)
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	if !doc.exists() {
		return nil, nil
	}
	execs, err := p.historyExecutions(ctx, instance)
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	execs = committedExecutions(execs, doc)
	if len(execs) == 0 || execs[len(execs)-1] < doc.CurrentExecutionID {
		execs = append(execs, doc.CurrentExecutionID)
	}
	return execs, nil
}

// ReadHistory implements duroxide.ProviderAdmin.
func (p *Provider) ReadHistory(ctx context.Context, instance string) ([]duroxide.Event, error) {
	return p.Read(ctx, instance)
}

// ReadHistoryWithExecutionID implements duroxide.ProviderAdmin.
func (p *Provider) ReadHistoryWithExecutionID(ctx context.Context, instance string, executionID uint64) ([]duroxide.Event, error) {
	return p.ReadWithExecution(ctx, instance, executionID)
}

// ExecutionInfo implements duroxide.ProviderAdmin.
func (p *Provider) ExecutionInfo(ctx context.Context, instance string, executionID uint64) (*duroxide.ExecutionInfo, error) {
	const op = "get_execution_info"
	doc, _, err := p.mustInstance(ctx, op, instance)
	if err != nil {
		return nil, err
	}
	events, err := p.readExecution(ctx, op, instance, executionID)
	if err != nil {
		return nil, err
	}
	ex := doc.execution(executionID)
	if ex == nil && doc.ArchivedExecutions > 0 {
		if ex, err = p.archivedExecution(ctx, instance, executionID); err != nil {
			return nil, duroxide.Wrap(op, err)
		}
	}
	if len(events) == 0 && ex == nil {
		return nil, duroxide.Kinded(duroxide.ErrInstanceNotFound, op, "execution %d of instance %q not found", executionID, instance)
	}
	info := &duroxide.ExecutionInfo{ExecutionID: executionID, Status: duroxide.StatusRunning, EventCount: len(events)}
	if ex != nil {
		info.Status, info.StartedAt = ex.Status, uint64(ex.StartedAt)
		if ex.CompletedAt != nil {
			info.CompletedAt = ptr(uint64(*ex.CompletedAt))
		}
	} else if len(events) > 0 {
		info.StartedAt = events[0].TimestampMs
	}
	if executionID == doc.CurrentExecutionID {
		info.Status, info.Output = doc.Status, doc.Output
		return info, nil
	}
	// Older executions keep their output only in their terminal event.
	for i := len(events) - 1; i >= 0; i-- {
		switch k := events[i].Kind.(type) {
		case duroxide.OrchestrationCompleted:
			info.Output = ptr(k.Output)
		case duroxide.OrchestrationContinuedAsNew:
			info.Output = ptr(k.Input)
		default:
			continue
		}
		break
	}
	return info, nil
}

// SystemMetrics implements duroxide.ProviderAdmin: one projected row
// per instance (status and the per-execution summaries the acks
// maintain), no history.
func (p *Provider) SystemMetrics(ctx context.Context) (*duroxide.SystemMetrics, error) {
	m := &duroxide.SystemMetrics{}
	ctx = background(ctx) // a full scan (priority.go)
	err := p.scanInstances(ctx, "c.status, c.executionCount, c.eventCount", "", nil, func(r instanceRow) {
		m.TotalInstances++
		switch r.Status {
		case duroxide.StatusRunning:
			m.RunningInstances++
		case duroxide.StatusCompleted:
			m.CompletedInstances++
		case duroxide.StatusFailed:
			m.FailedInstances++
		}
		// A writer that keeps no summaries (the Rust crate) counts as one
		// execution with unknown events.
		m.TotalExecutions += uint64(max(r.ExecutionCount, 1))
		m.TotalEvents += uint64(r.EventCount)
	})
	if err != nil {
		return nil, duroxide.Wrap("get_system_metrics", err)
	}
	return m, nil
}

// QueueDepths implements duroxide.ProviderAdmin: unlocked, committed
// messages, counted from a one-value projection (the gateway refuses a
// cross-partition COUNT).
func (p *Provider) QueueDepths(ctx context.Context) (*duroxide.QueueDepths, error) {
	d := &duroxide.QueueDepths{}
	ctx = background(ctx) // a scan of the queues (priority.go)
	q := "SELECT VALUE c.type FROM c WHERE (c.type = 'orch_queue' OR c.type = 'worker_queue') AND " + lockFree + " AND " + notStaged
	_, err := p.st.Query(ctx, q, cosmos.QueryParams{}.Add("@lapsed", ms(p.lapsedBefore())), cosmos.QueryOptions{PageSize: 1000}, func(raw []byte) bool {
		switch strings.Trim(string(raw), `"`) {
		case docOrchQueue:
			d.OrchestratorQueue++
		case docWorkerQueue:
			d.WorkerQueue++
		}
		return true
	})
	if err != nil {
		return nil, duroxide.Wrap("get_queue_depths", err)
	}
	return d, nil
}

// InstanceTree implements duroxide.ProviderAdmin.
func (p *Provider) InstanceTree(ctx context.Context, instance string) (*duroxide.InstanceTree, error) {
	return duroxide.WalkInstanceTree(ctx, p, instance)
}
