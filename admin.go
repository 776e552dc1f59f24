package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

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
// depths), never history or message bodies; see the README for costs.

// Admin implements duroxide.Provider: the provider is its own
// ProviderAdmin.
func (p *Provider) Admin() duroxide.ProviderAdmin { return p }

var _ duroxide.ProviderAdmin = (*Provider)(nil)

// instanceRow is the projection store-wide queries read.
type instanceRow struct {
	InstanceID       string      `json:"instanceId"`
	Status           string      `json:"status"`
	ParentInstanceID *string     `json:"parentInstanceId"`
	CompletedAt      *int64      `json:"completedAt"`
	Executions       []execEntry `json:"executions"`
	ExecutionCount   int         `json:"executionCount"`
	EventCount       int         `json:"eventCount"`
	CurrentExecution uint64      `json:"currentExecutionId"`
	ETag             string      `json:"_etag"`
}

const liveInstances = "c.type = 'instance' AND NOT IS_DEFINED(c.provisional) AND NOT IS_DEFINED(c.deleted)"

func (p *Provider) scanInstances(ctx context.Context, fields, where string, params cosmos.QueryParams, each func(r instanceRow)) error {
	q := "SELECT " + fields + " FROM c WHERE " + liveInstances + where
	_, err := p.st.Query(ctx, q, params, cosmos.QueryOptions{PageSize: 1000}, func(raw []byte) bool {
		var r instanceRow
		if json.Unmarshal(raw, &r) == nil {
			each(r)
		}
		return true
	})
	return err
}

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
	return p.listIDs(ctx, "list_instances", "", nil)
}

// ListInstancesByStatus implements duroxide.ProviderAdmin.
func (p *Provider) ListInstancesByStatus(ctx context.Context, status string) ([]string, error) {
	return p.listIDs(ctx, "list_instances_by_status", " AND c.status = @status", cosmos.QueryParams{}.Add("@status", status))
}

// ListChildren implements duroxide.ProviderAdmin; empty for an unknown
// instance.
func (p *Provider) ListChildren(ctx context.Context, instance string) ([]string, error) {
	return p.listIDs(ctx, "list_children", " AND c.parentInstanceId = @parent", cosmos.QueryParams{}.Add("@parent", instance))
}

// mustInstance reads a live instance or fails with a permanent error.
func (p *Provider) mustInstance(ctx context.Context, op, instance string) (*instanceDoc, azcore.ETag, error) {
	if err := validateInstanceID(op, instance); err != nil {
		return nil, "", err
	}
	doc, etag, err := p.readInstance(ctx, instance)
	if err != nil {
		return nil, "", duroxide.Wrap(op, err)
	}
	if !doc.exists() {
		return nil, "", duroxide.Kinded(duroxide.ErrInstanceNotFound, op, "instance %q not found", instance)
	}
	return doc, etag, nil
}

// GetParentID implements duroxide.ProviderAdmin.
func (p *Provider) GetParentID(ctx context.Context, instance string) (string, bool, error) {
	doc, _, err := p.mustInstance(ctx, "get_parent_id", instance)
	if err != nil {
		return "", false, err
	}
	if doc.ParentInstanceID == nil {
		return "", false, nil
	}
	return *doc.ParentInstanceID, true, nil
}

// GetInstanceInfo implements duroxide.ProviderAdmin.
func (p *Provider) GetInstanceInfo(ctx context.Context, instance string) (*duroxide.InstanceInfo, error) {
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
	if len(execs) == 0 || execs[len(execs)-1] < doc.CurrentExecutionID {
		execs = append(execs, doc.CurrentExecutionID)
	}
	return execs, nil
}

func (p *Provider) historyExecutions(ctx context.Context, instance string) ([]uint64, error) {
	var execs []uint64
	_, err := p.st.Query(ctx, "SELECT DISTINCT VALUE c.executionId FROM c WHERE c.type = 'history'", nil, cosmos.QueryOptions{Partition: &instance}, func(raw []byte) bool {
		var n uint64
		if json.Unmarshal(raw, &n) == nil {
			execs = append(execs, n)
		}
		return true
	})
	sort.Slice(execs, func(i, j int) bool { return execs[i] < execs[j] })
	return execs, err
}

// ReadHistory implements duroxide.ProviderAdmin.
func (p *Provider) ReadHistory(ctx context.Context, instance string) ([]duroxide.Event, error) {
	return p.Read(ctx, instance)
}

// ReadHistoryWithExecutionID implements duroxide.ProviderAdmin.
func (p *Provider) ReadHistoryWithExecutionID(ctx context.Context, instance string, executionID uint64) ([]duroxide.Event, error) {
	return p.ReadWithExecution(ctx, instance, executionID)
}

// GetExecutionInfo implements duroxide.ProviderAdmin.
func (p *Provider) GetExecutionInfo(ctx context.Context, instance string, executionID uint64) (*duroxide.ExecutionInfo, error) {
	const op = "get_execution_info"
	doc, _, err := p.mustInstance(ctx, op, instance)
	if err != nil {
		return nil, err
	}
	events, err := p.readExecution(ctx, op, instance, executionID)
	if err != nil {
		return nil, err
	}
	if len(events) == 0 && doc.execution(executionID) == nil {
		return nil, duroxide.Kinded(duroxide.ErrInstanceNotFound, op, "execution %d of instance %q not found", executionID, instance)
	}
	info := &duroxide.ExecutionInfo{ExecutionID: executionID, Status: duroxide.StatusRunning, EventCount: len(events)}
	if ex := doc.execution(executionID); ex != nil {
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

// GetSystemMetrics implements duroxide.ProviderAdmin: one projected row
// per instance (status and the per-execution summaries the acks
// maintain), no history.
func (p *Provider) GetSystemMetrics(ctx context.Context) (*duroxide.SystemMetrics, error) {
	m := &duroxide.SystemMetrics{}
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

// GetQueueDepths implements duroxide.ProviderAdmin: unlocked, committed
// messages, counted from a one-value projection (the gateway refuses a
// cross-partition COUNT).
func (p *Provider) GetQueueDepths(ctx context.Context) (*duroxide.QueueDepths, error) {
	d := &duroxide.QueueDepths{}
	q := "SELECT VALUE c.type FROM c WHERE (c.type = 'orch_queue' OR c.type = 'worker_queue') AND " + lockFree + " AND " + notStaged
	_, err := p.st.Query(ctx, q, cosmos.QueryParams{}.Add("@now", ms(p.opts.Now())), cosmos.QueryOptions{PageSize: 1000}, func(raw []byte) bool {
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

// GetInstanceTree implements duroxide.ProviderAdmin.
func (p *Provider) GetInstanceTree(ctx context.Context, instance string) (*duroxide.InstanceTree, error) {
	return duroxide.GetInstanceTree(ctx, p, instance)
}

// DeleteInstance implements duroxide.ProviderAdmin: it refuses a
// sub-orchestration and deletes a root with all its descendants.
func (p *Provider) DeleteInstance(ctx context.Context, instance string, force bool) (*duroxide.DeleteInstanceResult, error) {
	return duroxide.DeleteInstance(ctx, p, instance, force)
}

// DeleteInstancesAtomic implements duroxide.ProviderAdmin. Cosmos cannot
// transact across partitions, so "atomic" is built as validate, then
// tombstone, then sweep: everything is checked before anything is
// written (a running instance without force, or a child outside the list,
// fails with nothing deleted); then every instance document gets a
// tombstone (conditioned on the ETag that was validated, so a concurrent
// change is re-validated, and any in-flight ack fails); only then are the
// documents removed. Once tombstoned, an instance is gone for every
// reader, and a sweep interrupted by a crash is finished by the
// reconciler or the next delete.
func (p *Provider) DeleteInstancesAtomic(ctx context.Context, ids []string, force bool) (*duroxide.DeleteInstanceResult, error) {
	const op = "delete_instances_atomic"
	for attempt := 0; ; attempt++ {
		docs, err := p.validateDeletion(ctx, op, ids, force)
		if err != nil {
			return nil, err
		}
		res, err := p.deleteValidated(ctx, op, docs)
		if errors.Is(err, cosmos.ErrPreconditionFailed) && attempt < 3 {
			continue // an instance changed under us: validate again
		}
		if err != nil {
			return nil, duroxide.Wrap(op, err)
		}
		return res, nil
	}
}

type deletion struct {
	doc  *instanceDoc
	etag azcore.ETag
}

func (p *Provider) validateDeletion(ctx context.Context, op string, ids []string, force bool) ([]deletion, error) {
	inSet := map[string]bool{}
	var out []deletion
	for _, id := range ids {
		if err := validateInstanceID(op, id); err != nil {
			return nil, err
		}
		if inSet[id] {
			continue
		}
		inSet[id] = true
		doc, etag, err := p.readInstanceRaw(ctx, id)
		if err != nil {
			return nil, duroxide.Wrap(op, err)
		}
		if doc == nil || doc.Provisional {
			continue // nothing to delete
		}
		if doc.Deleted == nil && !force && doc.Status == duroxide.StatusRunning {
			return nil, duroxide.Permanent(op, "instance %q is running; use force to delete it", id)
		}
		out = append(out, deletion{doc: doc, etag: etag})
	}
	if len(ids) > 0 {
		// Orphan check: a child of a deleted instance must be deleted too.
		var orphans []string
		err := p.scanInstances(ctx, "c.instanceId, c.parentInstanceId", " AND ARRAY_CONTAINS(@ids, c.parentInstanceId)", cosmos.QueryParams{}.Add("@ids", ids), func(r instanceRow) {
			if !inSet[r.InstanceID] {
				orphans = append(orphans, r.InstanceID)
			}
		})
		if err != nil {
			return nil, duroxide.Wrap(op, err)
		}
		if len(orphans) > 0 {
			sort.Strings(orphans)
			return nil, duroxide.Permanent(op, "deleting these instances would orphan %v; include their descendants (or delete the root with DeleteInstance)", orphans)
		}
	}
	return out, nil
}

// tombstone marks every instance deleted, each conditioned on the ETag
// validation saw.
func (p *Provider) tombstone(ctx context.Context, docs []deletion) ([]*instanceDoc, error) {
	now := ms(p.opts.Now())
	var out []*instanceDoc
	var written []deletion
	for _, d := range docs {
		if d.doc.Deleted != nil {
			out = append(out, d.doc) // an earlier deletion was interrupted
			continue
		}
		var ops azcosmos.PatchOperations
		ops.AppendSet("/deleted", now)
		ops.AppendSet("/lockToken", jsonNull)
		ops.AppendSet("/lockedUntil", jsonNull)
		etag := d.etag
		newEtag := azcore.ETag("")
		var err error
		if _, newEtag, err = p.st.Patch(ctx, d.doc.InstanceID, d.doc.ID, ops, &etag, false); err != nil {
			if errors.Is(err, cosmos.ErrNotFound) {
				continue
			}
			p.untombstone(ctx, written)
			return nil, err
		}
		d.doc.Deleted = &now
		out = append(out, d.doc)
		written = append(written, deletion{doc: d.doc, etag: newEtag})
	}
	return out, nil
}

// untombstone undoes this call's tombstones when a later one failed
// (an instance changed after validation), so a refused deletion deletes
// nothing. Best effort: an instance whose undo fails stays tombstoned and
// its deletion is completed by the reconciler — the safe direction.
func (p *Provider) untombstone(ctx context.Context, docs []deletion) {
	for _, d := range docs {
		var ops azcosmos.PatchOperations
		ops.AppendRemove("/deleted")
		etag := d.etag
		if _, _, err := p.st.Patch(ctx, d.doc.InstanceID, d.doc.ID, ops, &etag, false); err != nil {
			p.opts.Logger.Warn("undoing a deletion tombstone", "instance_id", d.doc.InstanceID, "error", err)
		}
		d.doc.Deleted = nil
	}
}

// sweep removes every document of a tombstoned instance, in as many
// batches as needed, the instance document last. Queue messages enqueued
// after the tombstone belong to a new instance with the same id and stay
// — except activity completions: a worker may ack an activity of the
// deleted instance after its tombstone (the ack does not read the
// instance), and no activity of a new instance can exist before the
// sweep ends (the tombstone keeps the id unlockable). A work item and the
// completion its ack would create (deterministic id) is deleted once all
// work items are gone, so an ack racing the sweep either landed before
// (its completion goes too) or fails.
func (p *Provider) sweep(ctx context.Context, doc *instanceDoc) (duroxide.DeleteInstanceResult, error) {
	inst := doc.InstanceID
	var res duroxide.DeleteInstanceResult
	type row struct {
		ID          string `json:"id"`
		Type        string `json:"type"`
		ExecutionID uint64 `json:"executionId"`
		EnqueuedAt  int64  `json:"enqueuedAt"`
		WorkItem    string `json:"workItem"`
	}
	var rows []row
	execs := map[uint64]bool{}
	_, err := p.st.Query(ctx, "SELECT c.id, c.type, c.executionId, c.enqueuedAt, c.workItem FROM c", nil, cosmos.QueryOptions{Partition: &inst, PageSize: 1000}, func(raw []byte) bool {
		var r row
		if json.Unmarshal(raw, &r) == nil && r.ID != doc.ID {
			if (r.Type == docOrchQueue || r.Type == docWorkerQueue) && r.EnqueuedAt > *doc.Deleted && !isCompletion(r.WorkItem) {
				return true
			}
			rows = append(rows, r)
		}
		return true
	})
	if err != nil {
		return res, err
	}
	b := cosmos.NewBatch(inst)
	flush := func() error {
		if b.Len() == 0 {
			return nil
		}
		_, err := p.st.ExecuteTolerant(ctx, b, false)
		b = cosmos.NewBatch(inst)
		return err
	}
	add := func(id string) error {
		if b.Len() >= cosmos.MaxBatchOps {
			if err := flush(); err != nil {
				return err
			}
		}
		b.Delete(id, nil, cosmos.ErrNotFound)
		return nil
	}
	var completions []string
	for _, r := range rows {
		switch r.Type {
		case docHistory:
			res.EventsDeleted++
			execs[r.ExecutionID] = true
		case docOrchQueue, docWorkerQueue:
			res.QueueMessagesDeleted++
		}
		if r.Type == docWorkerQueue {
			completions = append(completions, completionDocID(inst, r.ID))
		}
		if err := add(r.ID); err != nil {
			return res, err
		}
	}
	if len(completions) > 0 {
		// An extra batch only when work items were outstanding.
		if err := flush(); err != nil {
			return res, err
		}
	}
	// Every work item is gone now, so no ack can enqueue a completion any
	// more; remove those acked since the query. The instance document goes
	// last, in the final batch: until then the tombstone keeps the
	// instance dead for readers and for the reconciler.
	for _, id := range append(completions, doc.ID) {
		if err := add(id); err != nil {
			return res, err
		}
	}
	if err := flush(); err != nil {
		return res, err
	}
	execs[doc.CurrentExecutionID] = true
	res.InstancesDeleted = 1
	res.ExecutionsDeleted = uint64(len(execs))
	p.busy.clear(inst)
	return res, nil
}

// isCompletion reports whether a queue message's work item is an
// activity's result.
func isCompletion(workItem string) bool {
	return strings.HasPrefix(workItem, `{"ActivityCompleted"`) || strings.HasPrefix(workItem, `{"ActivityFailed"`)
}

// finishDeletions completes deletions a crash interrupted; run by the
// reconciler, a bounded step per round unless full (internal/cosmos/scan.go). One
// failing instance does not stop the others.
func (p *Provider) finishDeletions(ctx context.Context, full bool) error {
	q := "SELECT * FROM c WHERE c.type = 'instance' AND IS_DEFINED(c.deleted)"
	var docs []instanceDoc
	err := p.reconcileScan(ctx, "deletions", full, cosmos.ScanRequest{Text: q, Fresh: noParams, PageSize: 100}, func(raw []byte) {
		var d instanceDoc
		if json.Unmarshal(raw, &d) == nil {
			docs = append(docs, d)
		}
	})
	if err != nil {
		return err
	}
	var errs []error
	for i := range docs {
		if !p.confirmTombstone(ctx, &docs[i]) {
			continue
		}
		if _, err := p.sweep(ctx, &docs[i]); err != nil {
			errs = append(errs, fmt.Errorf("instance %q: %w", docs[i].InstanceID, err))
		}
	}
	return errors.Join(errs...)
}

// confirmTombstone checks at the primary that a tombstone found by the
// cross-partition sweep is current before its instance's documents are
// deleted by id: a lagging replica can still show the tombstone of an
// instance whose deletion finished and whose id was reused since, and
// sweeping then would delete the new instance's documents. The check is a
// write conditional on the ETag the sweep saw (writes always reach the
// primary); its session token also makes the sweep's own partition query
// see every document written before.
func (p *Provider) confirmTombstone(ctx context.Context, d *instanceDoc) bool {
	if d.ETag == "" {
		return true
	}
	var ops azcosmos.PatchOperations
	ops.AppendSet("/deleted", *d.Deleted)
	etag := azcore.ETag(d.ETag)
	_, newEtag, err := p.st.Patch(ctx, d.InstanceID, d.ID, ops, &etag, false)
	switch {
	case err == nil:
		d.ETag = string(newEtag)
		return true
	case !errors.Is(err, cosmos.ErrNotFound) && !errors.Is(err, cosmos.ErrPreconditionFailed):
		p.opts.Logger.Warn("confirming a deletion tombstone failed; will retry", "instance", d.InstanceID, "error", err)
	}
	return false
}

// DeleteInstanceBulk implements duroxide.ProviderAdmin: terminal roots
// matching the filter are deleted with their descendants; running
// instances are skipped; the limit applies last. The candidates and the
// parent links of the whole container are read with two filter queries
// (projections carrying status and ETag), so each deleted instance then
// costs only its tombstone, the query for its documents and its batches.
func (p *Provider) DeleteInstanceBulk(ctx context.Context, filter duroxide.InstanceFilter) (*duroxide.DeleteInstanceResult, error) {
	const op = "delete_instance_bulk"
	rows, err := p.filterInstances(ctx, op, filter)
	if err != nil {
		return nil, err
	}
	var roots []instanceRow
	for _, r := range rows {
		if r.ParentInstanceID == nil && isTerminal(r.Status) && r.Status != duroxide.StatusContinuedAsNew {
			roots = append(roots, r)
		}
	}
	if filter.Limit != nil && len(roots) > int(*filter.Limit) {
		roots = roots[:*filter.Limit]
	}
	res := &duroxide.DeleteInstanceResult{}
	if len(roots) == 0 {
		return res, nil
	}
	children := map[string][]instanceRow{}
	err = p.scanInstances(ctx, rowFields, " AND IS_DEFINED(c.parentInstanceId) AND NOT IS_NULL(c.parentInstanceId)", nil, func(r instanceRow) {
		children[*r.ParentInstanceID] = append(children[*r.ParentInstanceID], r)
	})
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	for _, root := range roots {
		tree := []instanceRow{root}
		for i := 0; i < len(tree); i++ {
			tree = append(tree, children[tree[i].InstanceID]...)
		}
		if !allFinished(tree) {
			continue // a running descendant: never deleted without force
		}
		var docs []deletion
		for _, r := range tree {
			docs = append(docs, deletion{doc: r.doc(), etag: azcore.ETag(r.ETag)})
		}
		n, err := p.deleteValidated(ctx, op, docs)
		if errors.Is(err, cosmos.ErrPreconditionFailed) {
			// Changed since the scan: validate this tree again, without
			// force; a tree that is no longer deletable is skipped.
			n, err = p.deleteTreeCarefully(ctx, op, tree)
		}
		if err != nil {
			return res, err
		}
		res.Add(*n)
	}
	return res, nil
}

// allFinished reports whether every instance of a tree has ended
// (ContinuedAsNew is about to run again).
func allFinished(tree []instanceRow) bool {
	for _, r := range tree {
		if !isTerminal(r.Status) || r.Status == duroxide.StatusContinuedAsNew {
			return false
		}
	}
	return true
}

// deleteTreeCarefully re-reads a tree that changed under a bulk deletion
// and deletes it only if it is still wholly finished.
func (p *Provider) deleteTreeCarefully(ctx context.Context, op string, tree []instanceRow) (*duroxide.DeleteInstanceResult, error) {
	ids := make([]string, len(tree))
	for i, r := range tree {
		ids[i] = r.InstanceID
	}
	for attempt := 0; ; attempt++ {
		docs, err := p.validateDeletion(ctx, op, ids, false)
		if err != nil {
			if errors.Is(err, duroxide.ErrPermanent) {
				return &duroxide.DeleteInstanceResult{}, nil // running now, or grew a child
			}
			return nil, err
		}
		for _, d := range docs {
			if d.doc.Deleted == nil && (!isTerminal(d.doc.Status) || d.doc.Status == duroxide.StatusContinuedAsNew) {
				return &duroxide.DeleteInstanceResult{}, nil
			}
		}
		res, err := p.deleteValidated(ctx, op, docs)
		if errors.Is(err, cosmos.ErrPreconditionFailed) && attempt < 3 {
			continue
		}
		return res, err
	}
}

// rowFields is the projection of instanceRow used by deletions.
const rowFields = "c.instanceId, c.status, c.parentInstanceId, c.completedAt, c.currentExecutionId, c._etag"

func (r instanceRow) doc() *instanceDoc {
	return &instanceDoc{ID: instanceDocID(r.InstanceID), InstanceID: r.InstanceID, Status: r.Status, CurrentExecutionID: r.CurrentExecution}
}

// deleteValidated tombstones and sweeps instances already validated.
func (p *Provider) deleteValidated(ctx context.Context, op string, docs []deletion) (*duroxide.DeleteInstanceResult, error) {
	tombstoned, err := p.tombstone(ctx, docs)
	if err != nil {
		return nil, err
	}
	res := &duroxide.DeleteInstanceResult{}
	for _, d := range tombstoned {
		r, err := p.sweep(ctx, d)
		if err != nil {
			return nil, duroxide.Wrap(op, err)
		}
		res.Add(r)
	}
	return res, nil
}

// filterInstances returns the instances an InstanceFilter selects (before
// its limit), oldest completion first.
func (p *Provider) filterInstances(ctx context.Context, op string, f duroxide.InstanceFilter) ([]instanceRow, error) {
	where, params := "", cosmos.QueryParams{}
	if f.InstanceIDs != nil {
		if len(f.InstanceIDs) == 0 {
			return nil, nil
		}
		where += " AND ARRAY_CONTAINS(@ids, c.instanceId)"
		params = params.Add("@ids", f.InstanceIDs)
	}
	if f.CompletedBefore != nil {
		where += " AND c.completedAt < @before"
		params = params.Add("@before", *f.CompletedBefore)
	}
	var rows []instanceRow
	err := p.scanInstances(ctx, rowFields, where, params, func(r instanceRow) { rows = append(rows, r) })
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := deref(rows[i].CompletedAt), deref(rows[j].CompletedAt)
		if a != b {
			return a < b
		}
		return rows[i].InstanceID < rows[j].InstanceID
	})
	return rows, nil
}

// PruneExecutions implements duroxide.ProviderAdmin: old executions'
// history is removed; the current execution is never pruned (running or
// not), and KV, being instance-scoped, is untouched.
func (p *Provider) PruneExecutions(ctx context.Context, instance string, options duroxide.PruneOptions) (*duroxide.PruneResult, error) {
	const op = "prune_executions"
	doc, _, err := p.mustInstance(ctx, op, instance)
	if err != nil {
		return nil, err
	}
	execs, err := p.historyExecutions(ctx, instance)
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	keep := 1
	if options.KeepLast != nil && *options.KeepLast > 1 {
		keep = int(*options.KeepLast)
	}
	var victims []uint64
	for i, e := range execs {
		if e == doc.CurrentExecutionID || i >= len(execs)-keep {
			continue
		}
		if options.CompletedBefore != nil {
			ex := doc.execution(e)
			if ex == nil || ex.CompletedAt == nil || uint64(*ex.CompletedAt) >= *options.CompletedBefore {
				continue
			}
		}
		victims = append(victims, e)
	}
	res := &duroxide.PruneResult{InstancesProcessed: 1}
	for _, e := range victims {
		n, err := p.deleteExecution(ctx, instance, e)
		if err != nil {
			return nil, duroxide.Wrap(op, err)
		}
		res.ExecutionsDeleted++
		res.EventsDeleted += n
	}
	if len(victims) > 0 {
		if err := p.dropExecutionSummaries(ctx, instance, victims); err != nil {
			return nil, duroxide.Wrap(op, err)
		}
	}
	return res, nil
}

func (p *Provider) deleteExecution(ctx context.Context, instance string, exec uint64) (uint64, error) {
	var ids []string
	_, err := p.st.Query(ctx, "SELECT VALUE c.id FROM c WHERE c.type = 'history' AND c.executionId = @exec", cosmos.QueryParams{}.Add("@exec", exec),
		cosmos.QueryOptions{Partition: &instance, PageSize: 1000}, func(raw []byte) bool {
			var id string
			if json.Unmarshal(raw, &id) == nil {
				ids = append(ids, id)
			}
			return true
		})
	if err != nil {
		return 0, err
	}
	for start := 0; start < len(ids); start += cosmos.MaxBatchOps {
		b := cosmos.NewBatch(instance)
		for _, id := range ids[start:min(start+cosmos.MaxBatchOps, len(ids))] {
			b.Delete(id, nil, cosmos.ErrNotFound)
		}
		if _, err := p.st.ExecuteTolerant(ctx, b, false); err != nil {
			return 0, err
		}
	}
	return uint64(len(ids)), nil
}

// dropExecutionSummaries removes pruned executions from the instance
// document, retrying on a concurrent change (an ack of a running
// instance).
func (p *Provider) dropExecutionSummaries(ctx context.Context, instance string, execs []uint64) error {
	gone := map[uint64]bool{}
	for _, e := range execs {
		gone[e] = true
	}
	for attempt := 0; attempt < 5; attempt++ {
		doc, etag, err := p.readInstance(ctx, instance)
		if err != nil || !doc.exists() {
			return err
		}
		kept := doc.Executions[:0]
		for _, e := range doc.Executions {
			if !gone[e.ID] {
				kept = append(kept, e)
			}
		}
		doc.Executions = kept
		doc.sumExecutions()
		var ops azcosmos.PatchOperations
		ops.AppendSet("/executions", kept)
		ops.AppendSet("/executionCount", doc.ExecutionCount)
		ops.AppendSet("/eventCount", doc.EventCount)
		_, _, err = p.st.Patch(ctx, instance, doc.ID, ops, &etag, false)
		if !errors.Is(err, cosmos.ErrPreconditionFailed) {
			return err
		}
	}
	return errors.New("instance kept changing while pruning; summaries left for the next prune")
}

// PruneExecutionsBulk implements duroxide.ProviderAdmin. Running instances
// are pruned too (of their old executions).
func (p *Provider) PruneExecutionsBulk(ctx context.Context, filter duroxide.InstanceFilter, options duroxide.PruneOptions) (*duroxide.PruneResult, error) {
	const op = "prune_executions_bulk"
	rows, err := p.filterInstances(ctx, op, filter)
	if err != nil {
		return nil, err
	}
	if filter.Limit != nil && len(rows) > int(*filter.Limit) {
		rows = rows[:*filter.Limit]
	}
	res := &duroxide.PruneResult{}
	for _, r := range rows {
		n, err := p.PruneExecutions(ctx, r.InstanceID, options)
		if err != nil {
			return res, err
		}
		res.InstancesProcessed += n.InstancesProcessed
		res.ExecutionsDeleted += n.ExecutionsDeleted
		res.EventsDeleted += n.EventsDeleted
	}
	return res, nil
}
