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
	"github.com/google/uuid"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Deleting instances: validate, tombstone, then sweep the partitions. The
// tombstone is what makes a deletion atomic for readers, and what lets the
// maintenance loop finish a sweep a crash interrupted.

// DeleteInstance implements duroxide.ProviderAdmin: it refuses a
// sub-orchestration and deletes a root with all its descendants, or a
// client start that has not run yet (unstarted.go).
func (p *Provider) DeleteInstance(ctx context.Context, instance string, force bool) (*duroxide.DeleteInstanceResult, error) {
	res, err := duroxide.DeleteInstance(ctx, p, instance, force)
	if !errors.Is(err, duroxide.ErrInstanceNotFound) {
		return res, err
	}
	// No instance document: perhaps a start that has not run. Asked only
	// now, so that deleting an instance that ran costs nothing more.
	res, ok, uerr := p.deleteUnstarted(ctx, "delete_instance", instance)
	if errors.Is(uerr, errHasInstance) {
		// Its first turn committed since: the ordinary deletion applies.
		return duroxide.DeleteInstance(ctx, p, instance, force)
	}
	if ok || uerr != nil {
		return res, uerr
	}
	return nil, err
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
// maintenance loop (or RunMaintenance) or the next delete.
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
			return nil, duroxide.Kinded(duroxide.ErrInstanceStillRunning, op, "instance %q is still running; use force to delete it, or cancel it first", id)
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
// validation saw. Every tombstone of one call carries the same fresh
// mark (deletedBy), so that the call can undo exactly its own tombstones,
// including one whose write may have been applied although the client saw
// an error (a dropped connection, a timeout): see untombstone.
func (p *Provider) tombstone(ctx context.Context, docs []deletion) ([]*instanceDoc, error) {
	now := ms(p.now())
	mark := uuid.NewString()
	var out []*instanceDoc
	var written []*instanceDoc
	for _, d := range docs {
		if d.doc.Deleted != nil {
			out = append(out, d.doc) // an earlier deletion was interrupted
			continue
		}
		var ops azcosmos.PatchOperations
		ops.AppendSet("/deleted", now)
		ops.AppendSet("/deletedBy", mark)
		ops.AppendSet("/lockToken", jsonNull)
		ops.AppendSet("/lockedUntil", jsonNull)
		etag := d.etag
		_, etag, err := p.st.Patch(ctx, d.doc.InstanceID, d.doc.ID, ops, &etag, false)
		if err != nil {
			if errors.Is(err, cosmos.ErrNotFound) {
				continue
			}
			if cosmos.MayHaveApplied(err) {
				written = append(written, d.doc) // perhaps tombstoned: undo it too
			}
			p.untombstone(ctx, written, mark)
			return nil, err
		}
		d.doc.Deleted, d.doc.DeletedBy, d.doc.ETag = &now, mark, string(etag)
		out = append(out, d.doc)
		written = append(written, d.doc)
	}
	return out, nil
}

// untombstone undoes this call's tombstones when a later one failed
// (an instance changed after validation, or a write's outcome is
// unknown), so a refused deletion deletes nothing. Each undo is
// conditioned on the call's mark rather than on an ETag: it then also
// undoes a tombstone whose write was applied but never acknowledged, and
// does nothing where that write was not applied (412). Transient failures
// are retried a few times; an instance whose undo still fails stays
// tombstoned and its deletion is completed by the maintenance loop.
func (p *Provider) untombstone(ctx context.Context, docs []*instanceDoc, mark string) {
	for _, d := range docs {
		var ops azcosmos.PatchOperations
		ops.SetCondition(deletionCondition(mark))
		ops.AppendRemove("/deleted")
		ops.AppendRemove("/deletedBy")
		var err error
		for attempt := 0; attempt < 3; attempt++ {
			_, _, err = p.st.Patch(ctx, d.InstanceID, d.ID, ops, nil, false)
			if err == nil || errors.Is(err, cosmos.ErrPreconditionFailed) || !cosmos.IsRetryable(err) {
				break
			}
		}
		if err != nil && !errors.Is(err, cosmos.ErrPreconditionFailed) && !errors.Is(err, cosmos.ErrNotFound) {
			p.opts.Logger.Warn("undoing a deletion tombstone", "instance_id", d.InstanceID, "error", err)
		}
		d.Deleted = nil
	}
}

// deletionCondition selects the instance document tombstoned with mark
// (a UUID this provider generated, so it is safe to splice).
func deletionCondition(mark string) string {
	return "FROM c WHERE c.deletedBy = '" + mark + "'"
}

// settleDeletion finishes the deletion whose tombstone doc carries before
// a start of its id is accepted: the sweep keeps only what was written
// after the tombstone, and a start's record has the id of the one the
// sweep removes, so a start accepted beside the old documents would be
// swept with them. A tombstone younger than the maintenance loop's
// cutoff (finishDeletions) belongs to a deletion that may still be
// sweeping, which would also remove what the new instance writes; the
// start is refused with the retryable ErrInstanceDeleting until the
// deletion finishes or its time lapses. An older one is confirmed at the
// primary and swept here.
func (p *Provider) settleDeletion(ctx context.Context, op string, doc *instanceDoc) error {
	inst := doc.InstanceID
	defer p.sweeps.enter(inst)()
	if *doc.Deleted > ms(p.lapsedBefore().Add(-p.opts.OutboxMinAge)) {
		return duroxide.Deleting(op, nil, "instance %q is being deleted; retry the start once the deletion has finished", inst)
	}
	if !p.confirmTombstone(ctx, doc) {
		return duroxide.Deleting(op, nil, "the deletion of instance %q changed while the start finished it; retry the start", inst)
	}
	if err := p.dropQueuedChildren(ctx, []*instanceDoc{doc}); err != nil {
		return duroxide.Deleting(op, err, "finishing the deletion of instance %q failed: %v", inst, err)
	}
	if _, err := p.sweep(ctx, doc); err != nil {
		return duroxide.Deleting(op, err, "finishing the deletion of instance %q failed: %v", inst, err)
	}
	return nil
}

// keptBySweep reports whether a document written after the tombstone
// belongs to the id's next life, which the sweep must leave alone: a
// start's record, and the messages the next life can be sent before it
// runs (its start, external events, queue messages). Everything else can
// only be the deleted life's: the successor start or a timer its last
// turn committed, a cancel its parent sent, a child's result, an
// activity it scheduled. A client's requests (cancel, suspend, rewind,
// restart) of the tombstoned id are refused, and no runtime can address
// the next life before it starts. "After" is judged by the writer's clock
// (enqueuedAt), which may run ahead of the deleter's: so it must not
// decide what the deleted life's own messages are.
func keptBySweep(docType, workItem string) bool {
	switch docType {
	case docStartRecord:
		return true
	case docOrchQueue:
		for _, k := range nextLifeKinds {
			if strings.HasPrefix(workItem, k) {
				return true
			}
		}
	}
	return false
}

// nextLifeKinds are the work items an instance can be sent before it
// starts.
var nextLifeKinds = []string{`{"StartOrchestration"`, `{"ExternalRaised"`, `{"QueueMessage"`}

// queuedStartParents bounds the parents one query for queued children
// names, so a big tree's query stays small; a tree of up to this many
// instances costs one query.
const queuedStartParents = 50

// dropQueuedChildren deletes the starts of the tombstoned instances'
// children that exist only as queued messages: a parent's turn scheduled
// them (the outbox delivered the start into the child's partition) and
// no turn of theirs has run, so no instance document links them to the
// tree. Left behind, such a child would run and report to "execution 1"
// of the parent id's next life, which could not tell its result from one
// of its own. It runs after the tombstones, which keep every next life
// from starting, and before the sweeps, which remove the starts still
// pending in a parent's outbox. A start naming a deleted parent is stale
// whatever its target holds (an instance of that id refuses it as a
// collision and would report that to the deleted parent too), so each
// found is deleted. One cross-partition query per queuedStartParents
// instances.
func (p *Provider) dropQueuedChildren(ctx context.Context, docs []*instanceDoc) error {
	deleted := make(map[string]bool, len(docs))
	ids := make([]string, 0, len(docs))
	for _, d := range docs {
		if !deleted[d.InstanceID] {
			deleted[d.InstanceID] = true
			ids = append(ids, d.InstanceID)
		}
	}
	sort.Strings(ids)
	for len(ids) > 0 {
		n := min(len(ids), queuedStartParents)
		if err := p.dropQueuedChildrenOf(ctx, ids[:n], deleted); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// dropQueuedChildrenOf is dropQueuedChildren for the parents ids.
func (p *Provider) dropQueuedChildrenOf(ctx context.Context, ids []string, deleted map[string]bool) error {
	type row struct {
		ID         string `json:"id"`
		InstanceID string `json:"instanceId"`
		WorkItem   string `json:"workItem"`
	}
	params := cosmos.QueryParams{}.Add("@type", docOrchQueue).Add("@start", `{"StartOrchestration"`)
	names := make([]string, len(ids))
	for i, id := range ids {
		name := fmt.Sprintf("@p%d", i)
		names[i] = "CONTAINS(c.workItem, " + name + ")"
		params = params.Add(name, parentNeedle(id))
	}
	q := "SELECT c.id, c.instanceId, c.workItem FROM c WHERE c.type = @type AND STARTSWITH(c.workItem, @start) AND (" + strings.Join(names, " OR ") + ")"
	var strays []row
	_, err := p.st.Query(ctx, q, params, cosmos.QueryOptions{PageSize: 1000}, func(raw []byte) bool {
		var r row
		if json.Unmarshal(raw, &r) != nil || deleted[r.InstanceID] {
			return true // the child is in the tree: its sweep removes it
		}
		w, err := duroxide.UnmarshalWorkItem([]byte(r.WorkItem))
		if s, ok := w.(duroxide.StartOrchestrationItem); err == nil && ok && s.ParentInstance != nil && deleted[*s.ParentInstance] {
			strays = append(strays, r)
		}
		return true
	})
	if err != nil {
		return err
	}
	for _, r := range strays {
		if err := p.st.Delete(ctx, r.InstanceID, r.ID, nil); err != nil && !errors.Is(err, cosmos.ErrNotFound) {
			return err
		}
	}
	return nil
}

// parentNeedle is how a start's work item names parent id: the
// parent_instance field in duroxide's encoding (the match is confirmed
// by decoding, so the needle only has to be no narrower).
func parentNeedle(id string) string {
	enc, _ := duroxide.MarshalWorkItem(duroxide.SubOrchCompletedItem{ParentInstance: id})
	s := string(enc)
	start := strings.Index(s, `"parent_instance":`)
	end := strings.Index(s, `,"parent_execution_id"`)
	if start < 0 || end < start {
		return `"parent_instance":`
	}
	return s[start:end]
}

// finishDeletions completes deletions a crash interrupted; run by the
// maintenance loop, a bounded step per round unless full
// (internal/cosmos/scan.go). One failing instance does not stop the others.
//
// The background loop (not full) only takes tombstones older than
// OutboxMinAge (plus MaxClockSkew: the tombstone holds the deleter's
// clock), and none this process is sweeping, so that it does not sweep
// an instance whose deletion is still running: two sweeps are safe
// (sweep), but the caller of DeleteInstance would be told fewer
// documents were deleted than were. RunMaintenance (full) takes them all.
func (p *Provider) finishDeletions(ctx context.Context, full bool) error {
	q := "SELECT * FROM c WHERE c.type = 'instance' AND IS_DEFINED(c.deleted) AND c.deleted <= @cutoff"
	fresh := func() cosmos.QueryParams {
		cutoff := int64(maxExactInt)
		if !full {
			cutoff = ms(p.lapsedBefore().Add(-p.opts.OutboxMinAge))
		}
		return cosmos.QueryParams{}.Add("@cutoff", cutoff)
	}
	var docs []instanceDoc
	err := p.maintenanceScan(ctx, "deletions", full, cosmos.ScanRequest{Text: q, Fresh: fresh, PageSize: 100}, func(raw []byte) {
		var d instanceDoc
		if json.Unmarshal(raw, &d) == nil {
			docs = append(docs, d)
		}
	})
	if err != nil {
		return err
	}
	var confirmed []*instanceDoc
	for i := range docs {
		if p.sweeps.active(docs[i].InstanceID) {
			continue // this process's own deletion is sweeping it
		}
		if p.confirmTombstone(ctx, &docs[i]) {
			confirmed = append(confirmed, &docs[i])
		}
	}
	if len(confirmed) == 0 {
		return nil
	}
	// The interrupted deletion may not have dropped its queued children.
	if err := p.dropQueuedChildren(ctx, confirmed); err != nil {
		return err
	}
	var errs []error
	for _, d := range confirmed {
		if _, err := p.sweep(ctx, d); err != nil {
			errs = append(errs, fmt.Errorf("instance %q: %w", d.InstanceID, err))
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
	ctx = background(ctx) // a retention sweep (priority.go)
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

// deleteValidated tombstones and sweeps instances already validated.
func (p *Provider) deleteValidated(ctx context.Context, op string, docs []deletion) (*duroxide.DeleteInstanceResult, error) {
	for _, d := range docs {
		defer p.sweeps.enter(d.doc.InstanceID)()
	}
	tombstoned, err := p.tombstone(ctx, docs)
	if err != nil {
		return nil, err
	}
	if err := p.dropQueuedChildren(ctx, tombstoned); err != nil {
		return nil, duroxide.Wrap(op, err)
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
