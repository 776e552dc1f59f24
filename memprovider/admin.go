package memprovider

// ProviderAdmin for the in-memory provider: discovery, metrics, deletion
// and pruning, mirroring duroxide's SQLite reference (src/providers/
// sqlite.rs). Every method holds p.mu for its whole duration, so each
// call is atomic with respect to the runtime-facing methods.

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// admDefaultBulkLimit is the number of instances a bulk operation selects
// when InstanceFilter.Limit is nil (Rust's DEFAULT_BULK_OPERATION_LIMIT).
const admDefaultBulkLimit = 1000

// admin implements duroxide.ProviderAdmin over a Provider.
type admin struct {
	p *Provider
}

var _ duroxide.ProviderAdmin = (*admin)(nil)

// lock takes p.mu after checking ctx; the caller must call the returned
// unlock.
func (a *admin) lock(ctx context.Context, op string) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	a.p.mu.Lock()
	return a.p.mu.Unlock, nil
}

func admMs(t time.Time) uint64 { return uint64(t.UnixMilli()) }

func admNotFound(op, instance string) error {
	return duroxide.Kinded(duroxide.ErrInstanceNotFound, op, "instance %s not found", instance)
}

// sortedInstances returns the instances ordered by creation time (then
// id), the order every listing uses. Callers hold p.mu.
func (a *admin) sortedInstances() []*instanceState {
	out := make([]*instanceState, 0, len(a.p.instances))
	for _, s := range a.p.instances {
		out = append(out, s)
	}
	slices.SortFunc(out, func(x, y *instanceState) int {
		if c := x.createdAt.Compare(y.createdAt); c != 0 {
			return c
		}
		return cmp.Compare(x.id, y.id)
	})
	return out
}

// ListInstances implements duroxide.ProviderAdmin.
func (a *admin) ListInstances(ctx context.Context) ([]string, error) {
	unlock, err := a.lock(ctx, "list_instances")
	if err != nil {
		return nil, err
	}
	defer unlock()
	ids := []string{}
	for _, s := range a.sortedInstances() {
		ids = append(ids, s.id)
	}
	return ids, nil
}

// ListInstancesByStatus implements duroxide.ProviderAdmin: instances whose
// current execution has status.
func (a *admin) ListInstancesByStatus(ctx context.Context, status string) ([]string, error) {
	unlock, err := a.lock(ctx, "list_instances_by_status")
	if err != nil {
		return nil, err
	}
	defer unlock()
	ids := []string{}
	for _, s := range a.sortedInstances() {
		if s.status() == status {
			ids = append(ids, s.id)
		}
	}
	return ids, nil
}

// admExecutionIDs returns the instance's execution ids, ascending. Callers
// hold p.mu.
func admExecutionIDs(s *instanceState) []uint64 {
	ids := make([]uint64, 0, len(s.executions))
	for id := range s.executions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// ListExecutions implements duroxide.ProviderAdmin; an unknown instance
// has none.
func (a *admin) ListExecutions(ctx context.Context, instance string) ([]uint64, error) {
	if err := a.p.checkIDs("list_executions", instance); err != nil {
		return nil, err
	}
	unlock, err := a.lock(ctx, "list_executions")
	if err != nil {
		return nil, err
	}
	defer unlock()
	s := a.p.instances[instance]
	if s == nil {
		return []uint64{}, nil
	}
	return admExecutionIDs(s), nil
}

// readLocked decodes one execution's stored history. Callers hold p.mu.
func (a *admin) readLocked(op, instance string, executionID uint64) ([]duroxide.Event, error) {
	rows := a.p.history[instance][executionID]
	events := make([]duroxide.Event, 0, len(rows))
	for _, r := range rows {
		if r.corrupt {
			return nil, duroxide.Permanent(op, "failed to deserialize event %d of %s execution %d", r.eventID, instance, executionID)
		}
		events = append(events, r.event)
	}
	return events, nil
}

// latestExecutionLocked is the instance's current execution; for an
// instance without a record it is the highest execution with history.
// ok is false when neither exists. Callers hold p.mu.
func (a *admin) latestExecutionLocked(instance string) (id uint64, ok bool) {
	if s := a.p.instances[instance]; s != nil {
		return s.currentExecution, true
	}
	for exec := range a.p.history[instance] {
		id, ok = max(id, exec), true
	}
	return id, ok
}

// ReadHistoryWithExecutionID implements duroxide.ProviderAdmin. It fails
// if any event cannot be decoded; an unknown execution has no events.
func (a *admin) ReadHistoryWithExecutionID(ctx context.Context, instance string, executionID uint64) ([]duroxide.Event, error) {
	if err := a.p.checkIDs("read_history_with_execution_id", instance); err != nil {
		return nil, err
	}
	unlock, err := a.lock(ctx, "read_history_with_execution_id")
	if err != nil {
		return nil, err
	}
	defer unlock()
	return a.readLocked("read_history_with_execution_id", instance, executionID)
}

// ReadHistory implements duroxide.ProviderAdmin: the latest execution's
// history (empty for an unknown instance).
func (a *admin) ReadHistory(ctx context.Context, instance string) ([]duroxide.Event, error) {
	if err := a.p.checkIDs("read_history", instance); err != nil {
		return nil, err
	}
	unlock, err := a.lock(ctx, "read_history")
	if err != nil {
		return nil, err
	}
	defer unlock()
	exec, ok := a.latestExecutionLocked(instance)
	if !ok {
		return []duroxide.Event{}, nil
	}
	return a.readLocked("read_history", instance, exec)
}

// LatestExecutionID implements duroxide.ProviderAdmin; it fails for an
// unknown instance.
func (a *admin) LatestExecutionID(ctx context.Context, instance string) (uint64, error) {
	if err := a.p.checkIDs("latest_execution_id", instance); err != nil {
		return 0, err
	}
	unlock, err := a.lock(ctx, "latest_execution_id")
	if err != nil {
		return 0, err
	}
	defer unlock()
	exec, ok := a.latestExecutionLocked(instance)
	if !ok {
		return 0, admNotFound("latest_execution_id", instance)
	}
	return exec, nil
}

// InstanceInfo implements duroxide.ProviderAdmin.
func (a *admin) InstanceInfo(ctx context.Context, instance string) (*duroxide.InstanceInfo, error) {
	if err := a.p.checkIDs("get_instance_info", instance); err != nil {
		return nil, err
	}
	unlock, err := a.lock(ctx, "get_instance_info")
	if err != nil {
		return nil, err
	}
	defer unlock()
	s := a.p.instances[instance]
	if s == nil {
		return nil, admNotFound("get_instance_info", instance)
	}
	info := &duroxide.InstanceInfo{
		InstanceID:           s.id,
		OrchestrationName:    s.name,
		OrchestrationVersion: s.version,
		CurrentExecutionID:   s.currentExecution,
		Status:               s.status(),
		CreatedAt:            admMs(s.createdAt),
		UpdatedAt:            admMs(s.updatedAt),
		ParentInstanceID:     admClone(s.parent),
	}
	if info.OrchestrationVersion == "" {
		info.OrchestrationVersion = "unknown"
	}
	if ex := s.executions[s.currentExecution]; ex != nil {
		info.Output = admClone(ex.output)
	}
	return info, nil
}

// ExecutionInfo implements duroxide.ProviderAdmin.
func (a *admin) ExecutionInfo(ctx context.Context, instance string, executionID uint64) (*duroxide.ExecutionInfo, error) {
	if err := a.p.checkIDs("get_execution_info", instance); err != nil {
		return nil, err
	}
	unlock, err := a.lock(ctx, "get_execution_info")
	if err != nil {
		return nil, err
	}
	defer unlock()
	var ex *executionState
	if s := a.p.instances[instance]; s != nil {
		ex = s.executions[executionID]
	}
	if ex == nil {
		return nil, duroxide.Kinded(duroxide.ErrInstanceNotFound, "get_execution_info", "execution %d not found for instance %s", executionID, instance)
	}
	info := &duroxide.ExecutionInfo{
		ExecutionID: ex.id,
		Status:      ex.status,
		Output:      admClone(ex.output),
		StartedAt:   admMs(ex.startedAt),
		EventCount:  len(a.p.history[instance][executionID]),
	}
	if ex.completedAt != nil {
		info.CompletedAt = admPtr(admMs(*ex.completedAt))
	}
	return info, nil
}

// SystemMetrics implements duroxide.ProviderAdmin. Status counts are
// by each instance's current execution; TotalEvents counts every stored
// history event.
func (a *admin) SystemMetrics(ctx context.Context) (*duroxide.SystemMetrics, error) {
	unlock, err := a.lock(ctx, "get_system_metrics")
	if err != nil {
		return nil, err
	}
	defer unlock()
	m := &duroxide.SystemMetrics{TotalInstances: uint64(len(a.p.instances))}
	for _, s := range a.p.instances {
		m.TotalExecutions += uint64(len(s.executions))
		switch s.status() {
		case duroxide.StatusRunning:
			m.RunningInstances++
		case duroxide.StatusCompleted:
			m.CompletedInstances++
		case duroxide.StatusFailed:
			m.FailedInstances++
		}
	}
	for _, execs := range a.p.history {
		for _, rows := range execs {
			m.TotalEvents += uint64(len(rows))
		}
	}
	return m, nil
}

// QueueDepths implements duroxide.ProviderAdmin: messages not held by a
// live lock. Timers live in the orchestrator queue, so TimerQueue is 0.
func (a *admin) QueueDepths(ctx context.Context) (*duroxide.QueueDepths, error) {
	unlock, err := a.lock(ctx, "get_queue_depths")
	if err != nil {
		return nil, err
	}
	defer unlock()
	now := a.p.now()
	d := &duroxide.QueueDepths{}
	for _, m := range a.p.orchQueue {
		if !lockedAt(m.lockToken, m.lockedUntil, now) {
			d.OrchestratorQueue++
		}
	}
	for _, m := range a.p.workQueue {
		if !lockedAt(m.lockToken, m.lockedUntil, now) {
			d.WorkerQueue++
		}
	}
	return d, nil
}

// childrenLocked returns the direct children of instance in creation
// order. Callers hold p.mu.
func (a *admin) childrenLocked(instance string) []string {
	out := []string{}
	for _, s := range a.sortedInstances() {
		if s.parent != nil && *s.parent == instance {
			out = append(out, s.id)
		}
	}
	return out
}

// ListChildren implements duroxide.ProviderAdmin; an unknown instance has
// no children.
func (a *admin) ListChildren(ctx context.Context, instance string) ([]string, error) {
	unlock, err := a.lock(ctx, "list_children")
	if err != nil {
		return nil, err
	}
	defer unlock()
	return a.childrenLocked(instance), nil
}

// ParentID implements duroxide.ProviderAdmin; it fails for an unknown
// instance.
func (a *admin) ParentID(ctx context.Context, instance string) (string, bool, error) {
	if err := a.p.checkIDs("get_parent_id", instance); err != nil {
		return "", false, err
	}
	unlock, err := a.lock(ctx, "get_parent_id")
	if err != nil {
		return "", false, err
	}
	defer unlock()
	s := a.p.instances[instance]
	if s == nil {
		return "", false, admNotFound("get_parent_id", instance)
	}
	if s.parent == nil {
		return "", false, nil
	}
	return *s.parent, true, nil
}

// treeLocked is InstanceTree under p.mu: instance and its descendants,
// depth first.
func (a *admin) treeLocked(instance string) *duroxide.InstanceTree {
	tree := &duroxide.InstanceTree{RootID: instance}
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
		children := a.childrenLocked(id)
		for i := len(children) - 1; i >= 0; i-- {
			stack = append(stack, children[i])
		}
	}
	return tree
}

// InstanceTree implements duroxide.ProviderAdmin in one critical
// section, so the tree is a consistent snapshot.
func (a *admin) InstanceTree(ctx context.Context, instance string) (*duroxide.InstanceTree, error) {
	unlock, err := a.lock(ctx, "get_instance_tree")
	if err != nil {
		return nil, err
	}
	defer unlock()
	return a.treeLocked(instance), nil
}

// DeleteInstance implements duroxide.ProviderAdmin with the contract's
// default: a sub-orchestration is refused, a root is deleted with its
// whole tree through DeleteInstancesAtomic (whose orphan check catches a
// child spawned in between).
func (a *admin) DeleteInstance(ctx context.Context, instance string, force bool) (*duroxide.DeleteInstanceResult, error) {
	res, err := duroxide.DeleteInstance(ctx, a, instance, force)
	if !errors.Is(err, duroxide.ErrInstanceNotFound) {
		return res, err
	}
	res, ok, uerr := a.deleteUnstarted(ctx, instance)
	if ok || uerr != nil {
		return res, uerr
	}
	if a.instanceRan(instance) {
		// Its first turn committed since: the ordinary deletion applies.
		return duroxide.DeleteInstance(ctx, a, instance, force)
	}
	return nil, err
}

// instanceRan reports whether instance has state (a turn of it committed).
func (a *admin) instanceRan(instance string) bool {
	a.p.mu.Lock()
	defer a.p.mu.Unlock()
	return a.p.instances[instance] != nil
}

// DeleteInstancesAtomic implements duroxide.ProviderAdmin: all of ids are
// deleted, or none. Without force, a Running instance fails the call;
// deleting a parent without all of its children fails it too (it would
// orphan them).
func (a *admin) DeleteInstancesAtomic(ctx context.Context, ids []string, force bool) (*duroxide.DeleteInstanceResult, error) {
	if err := a.p.checkIDs("delete_instances_atomic", ids...); err != nil {
		return nil, err
	}
	unlock, err := a.lock(ctx, "delete_instances_atomic")
	if err != nil {
		return nil, err
	}
	defer unlock()
	return a.deleteLocked(ids, force)
}

// deleteLocked is DeleteInstancesAtomic under p.mu. It validates
// everything before changing anything.
func (a *admin) deleteLocked(ids []string, force bool) (*duroxide.DeleteInstanceResult, error) {
	const op = "delete_instances_atomic"
	res := &duroxide.DeleteInstanceResult{}
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	if len(set) == 0 {
		return res, nil
	}
	if !force {
		for _, id := range ids {
			if s := a.p.instances[id]; s != nil && s.status() == duroxide.StatusRunning {
				return nil, duroxide.Kinded(duroxide.ErrInstanceStillRunning, op, "instance %s is still running; use force=true to delete it anyway, or cancel it first", id)
			}
		}
	}
	for _, s := range a.sortedInstances() {
		if s.parent != nil && set[*s.parent] && !set[s.id] {
			return nil, duroxide.Permanent(op, "cannot delete: instance %s has child %s that is not in the delete set (created after the tree was read?); re-read the tree and retry", *s.parent, s.id)
		}
	}

	strays := a.queuedChildrenLocked(set)
	for id := range set {
		if s := a.p.instances[id]; s != nil {
			res.InstancesDeleted++
			res.ExecutionsDeleted += uint64(len(s.executions))
			a.p.edge.noteDeletedLife(id, s)
			delete(a.p.instances, id) // KV (store and delta) and custom status live on the record
		}
		for _, rows := range a.p.history[id] {
			res.EventsDeleted += uint64(len(rows))
		}
		delete(a.p.history, id)
		// Dropping the lock makes an in-flight turn's ack fail, so a zombie
		// ack can never recreate the instance.
		delete(a.p.instanceLocks, id)
		// The claims of its executions' successors go with it: the id's
		// next life starts counting executions again.
		delete(a.p.edge.claims, id)
	}
	orch := a.p.orchQueue[:0]
	for _, m := range a.p.orchQueue {
		if set[m.instance] || strays[m] {
			res.QueueMessagesDeleted++
			continue
		}
		orch = append(orch, m)
	}
	clear(a.p.orchQueue[len(orch):])
	a.p.orchQueue = orch
	// Deleting the worker items (locked or not) makes a stale worker's ack
	// and renew fail: a recreated instance never sees its completion.
	work := a.p.workQueue[:0]
	for _, m := range a.p.workQueue {
		if set[m.item.Instance] {
			res.QueueMessagesDeleted++
			continue
		}
		work = append(work, m)
	}
	clear(a.p.workQueue[len(work):])
	a.p.workQueue = work
	return res, nil
}

// queuedChildrenLocked adds to set the children of its instances that
// exist only as queued starts: a parent's turn scheduled them and no
// turn of theirs has run, so no instance record links them to the tree,
// yet left behind they would run and report to "execution 1" of the
// parent id's next life. A start naming a parent in set whose instance
// exists outside set (an id collision) is returned instead, to be
// dropped on its own: its refusal would be reported to the deleted
// parent just the same.
func (a *admin) queuedChildrenLocked(set map[string]bool) map[*orchMessage]bool {
	strays := map[*orchMessage]bool{}
	for grew := true; grew; {
		grew = false
		for _, m := range a.p.orchQueue {
			start, ok := m.item.(duroxide.StartOrchestrationItem)
			if !ok || start.ParentInstance == nil || !set[*start.ParentInstance] || set[m.instance] {
				continue
			}
			if a.p.instances[m.instance] != nil {
				strays[m] = true
				continue
			}
			set[m.instance] = true
			grew = true
		}
	}
	return strays
}

// admIsTerminal reports whether status ends an instance (for bulk deletion).
func admIsTerminal(status string) bool {
	switch status {
	case duroxide.StatusCompleted, duroxide.StatusFailed, duroxide.StatusContinuedAsNew:
		return true
	}
	return false
}

// selectLocked applies filter to the instances (in creation order) that
// pass keep, then the limit. Callers hold p.mu.
func (a *admin) selectLocked(filter duroxide.InstanceFilter, keep func(*instanceState) bool) []*instanceState {
	if filter.InstanceIDs != nil && len(filter.InstanceIDs) == 0 {
		return nil
	}
	var allow map[string]bool
	if filter.InstanceIDs != nil {
		allow = make(map[string]bool, len(filter.InstanceIDs))
		for _, id := range filter.InstanceIDs {
			allow[id] = true
		}
	}
	limit := admDefaultBulkLimit
	if filter.Limit != nil {
		limit = int(*filter.Limit)
	}
	var out []*instanceState
	for _, s := range a.sortedInstances() {
		if len(out) >= limit {
			break
		}
		if allow != nil && !allow[s.id] {
			continue
		}
		if filter.CompletedBefore != nil {
			ex := s.executions[s.currentExecution]
			if ex == nil || ex.completedAt == nil || admMs(*ex.completedAt) >= *filter.CompletedBefore {
				continue
			}
		}
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

// DeleteInstanceBulk implements duroxide.ProviderAdmin: it selects root
// instances in a terminal state (Completed, Failed, ContinuedAsNew) that
// match filter, applies the limit last, and deletes each with its whole
// tree. Running instances are skipped silently.
func (a *admin) DeleteInstanceBulk(ctx context.Context, filter duroxide.InstanceFilter) (*duroxide.DeleteInstanceResult, error) {
	unlock, err := a.lock(ctx, "delete_instance_bulk")
	if err != nil {
		return nil, err
	}
	defer unlock()
	roots := a.selectLocked(filter, func(s *instanceState) bool {
		return s.parent == nil && admIsTerminal(s.status())
	})
	total := &duroxide.DeleteInstanceResult{}
	for _, s := range roots {
		if a.p.instances[s.id] == nil {
			continue
		}
		res, err := a.deleteLocked(a.treeLocked(s.id).AllIDs, true)
		if err != nil {
			return nil, err
		}
		total.Add(*res)
	}
	return total, nil
}

// PruneExecutions implements duroxide.ProviderAdmin. The current
// execution and Running executions are never pruned; KeepLast nil, 0 and
// 1 are equivalent. KV state is instance-scoped and is not touched.
func (a *admin) PruneExecutions(ctx context.Context, instance string, options duroxide.PruneOptions) (*duroxide.PruneResult, error) {
	if err := a.p.checkIDs("prune_executions", instance); err != nil {
		return nil, err
	}
	unlock, err := a.lock(ctx, "prune_executions")
	if err != nil {
		return nil, err
	}
	defer unlock()
	s := a.p.instances[instance]
	if s == nil {
		return nil, admNotFound("prune_executions", instance)
	}
	return a.pruneLocked(s, options), nil
}

// pruneLocked prunes one instance. Callers hold p.mu.
func (a *admin) pruneLocked(s *instanceState, options duroxide.PruneOptions) *duroxide.PruneResult {
	res := &duroxide.PruneResult{InstancesProcessed: 1}
	ids := admExecutionIDs(s)
	keep := map[uint64]bool{s.currentExecution: true}
	if options.KeepLast != nil {
		for i := 0; i < int(*options.KeepLast) && i < len(ids); i++ {
			keep[ids[len(ids)-1-i]] = true
		}
	}
	for _, id := range ids {
		ex := s.executions[id]
		if keep[id] || ex.status == duroxide.StatusRunning {
			continue
		}
		if options.CompletedBefore != nil && (ex.completedAt == nil || admMs(*ex.completedAt) >= *options.CompletedBefore) {
			continue
		}
		res.ExecutionsDeleted++
		res.EventsDeleted += uint64(len(a.p.history[s.id][id]))
		delete(a.p.history[s.id], id)
		delete(s.executions, id)
	}
	return res
}

// PruneExecutionsBulk implements duroxide.ProviderAdmin: it prunes every
// instance matching filter, whatever its status (a long-running instance
// accumulates old executions through continue-as-new).
func (a *admin) PruneExecutionsBulk(ctx context.Context, filter duroxide.InstanceFilter, options duroxide.PruneOptions) (*duroxide.PruneResult, error) {
	unlock, err := a.lock(ctx, "prune_executions_bulk")
	if err != nil {
		return nil, err
	}
	defer unlock()
	total := &duroxide.PruneResult{}
	for _, s := range a.selectLocked(filter, func(*instanceState) bool { return true }) {
		r := a.pruneLocked(s, options)
		total.InstancesProcessed += r.InstancesProcessed
		total.ExecutionsDeleted += r.ExecutionsDeleted
		total.EventsDeleted += r.EventsDeleted
	}
	return total, nil
}

func admClone[T any](v *T) *T {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

func admPtr[T any](v T) *T { return &v }
