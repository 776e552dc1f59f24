package cdb

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Pruning old executions: their history documents and execution
// summaries are removed, per instance or for every instance a filter
// selects; the current execution is never pruned.

// PruneExecutions implements duroxide.ProviderAdmin: old executions'
// history is removed; the current execution is never pruned (running or
// not), and KV, being instance-scoped, is untouched.
//
// A prune acts only on the incarnation of the instance it read: the
// instance may be deleted and started again while it runs, and the new
// incarnation's execution 1 has the same document ids as the old one's.
// So every step checks the instance document's RID (documents.go), and
// every delete is conditioned on the ETag the listing saw; once the
// incarnation is gone there is nothing left to prune.
func (p *Provider) PruneExecutions(ctx context.Context, instance string, options duroxide.PruneOptions) (*duroxide.PruneResult, error) {
	const op = "prune_executions"
	ctx = background(ctx) // priority.go
	doc, _, err := p.mustInstance(ctx, op, instance)
	if err != nil {
		return nil, err
	}
	execs, err := p.historyExecutions(ctx, instance)
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	execs = committedExecutions(execs, doc) // KeepLast counts committed executions
	var archived map[uint64]execEntry
	if options.CompletedBefore != nil && doc.ArchivedExecutions > 0 {
		if archived, err = p.archivedExecutions(ctx, instance); err != nil {
			return nil, duroxide.Wrap(op, err)
		}
	}
	victims := pruneVictims(doc, archived, execs, options)
	res := &duroxide.PruneResult{InstancesProcessed: 1}
	var pruned []uint64
	for _, e := range victims {
		n, same, err := p.deleteExecution(ctx, instance, doc.RID, e)
		if err != nil {
			return nil, duroxide.Wrap(op, err)
		}
		if !same {
			break // the incarnation that was read is gone
		}
		pruned = append(pruned, e)
		res.ExecutionsDeleted++
		res.EventsDeleted += n
	}
	if len(pruned) > 0 {
		if err := p.dropExecutionSummaries(ctx, instance, doc.RID, pruned); err != nil {
			return nil, duroxide.Wrap(op, err)
		}
	}
	return res, nil
}

// pruneVictims picks the executions of doc to prune among execs (the
// executions with history, ascending); archived holds the summaries moved
// out of the instance document, read only when CompletedBefore needs them.
func pruneVictims(doc *instanceDoc, archived map[uint64]execEntry, execs []uint64, options duroxide.PruneOptions) []uint64 {
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
			if a, ok := archived[e]; ex == nil && ok {
				ex = &a
			}
			if ex == nil || ex.CompletedAt == nil || uint64(*ex.CompletedAt) >= *options.CompletedBefore {
				continue
			}
		}
		victims = append(victims, e)
	}
	return victims
}

// deleteExecution deletes the history of execution exec of the
// incarnation rid. The listing also reads the instance document, in the
// same query and so from the same replica's state: if it is not rid's
// (or is being deleted), the history listed is not that incarnation's and
// nothing is deleted (same is false). Each delete is conditioned on the
// ETag listed, so a document re-created since with the same id stays.
func (p *Provider) deleteExecution(ctx context.Context, instance, rid string, exec uint64) (n uint64, same bool, err error) {
	type row struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		ETag    string `json:"_etag"`
		RID     string `json:"_rid"`
		Deleted *int64 `json:"deleted"`
	}
	var rows []row
	_, err = p.st.Query(ctx, "SELECT c.id, c.type, c._etag, c._rid, c.deleted FROM c WHERE (c.type = 'history' AND c.executionId = @exec) OR c.type = 'instance'",
		cosmos.QueryParams{}.Add("@exec", exec), cosmos.QueryOptions{Partition: &instance, PageSize: 1000}, func(raw []byte) bool {
			var r row
			if json.Unmarshal(raw, &r) == nil {
				rows = append(rows, r)
			}
			return true
		})
	if err != nil {
		return 0, false, err
	}
	var history []row
	for _, r := range rows {
		switch {
		case r.Type != docHistory:
			same = r.RID == rid && r.Deleted == nil
		default:
			history = append(history, r)
		}
	}
	if !same {
		return 0, false, nil
	}
	for start := 0; start < len(history); start += cosmos.MaxBatchOps {
		b := cosmos.NewBatch(instance)
		for _, r := range history[start:min(start+cosmos.MaxBatchOps, len(history))] {
			etag := azcore.ETag(r.ETag)
			b.Delete(r.ID, &etag, cosmos.ErrNotFound, cosmos.ErrPreconditionFailed)
		}
		if _, err := p.st.ExecuteTolerant(ctx, b, false); err != nil {
			return 0, true, err
		}
	}
	return uint64(len(history)), true, nil
}

// dropExecutionSummaries removes the summaries of pruned executions of
// incarnation rid: from the instance document's list, and their execution
// documents, in one batch with the instance document's new totals, so the
// totals count each removal once however often a prune is retried or run
// concurrently. It retries on a concurrent change (an ack of a running
// instance, another prune); a document of another incarnation is left
// alone.
func (p *Provider) dropExecutionSummaries(ctx context.Context, instance, rid string, execs []uint64) error {
	gone := map[uint64]bool{}
	for _, e := range execs {
		gone[e] = true
	}
	for attempt := 0; attempt < 5; {
		doc, etag, err := p.readInstance(ctx, instance)
		if err != nil || !doc.exists() || doc.RID != rid {
			return err
		}
		b, more, err := p.dropSummariesBatch(ctx, doc, etag, gone)
		if err != nil || b == nil {
			return err
		}
		_, err = p.st.Execute(ctx, b, false)
		var be *BatchError
		switch {
		case err == nil && !more:
			return nil
		case err == nil:
			continue // the next batch of execution documents
		case errors.As(err, &be) && (errors.Is(be, cosmos.ErrPreconditionFailed) || errors.Is(be, cosmos.ErrNotFound)):
			attempt++ // changed meanwhile: read again
		default:
			return err
		}
	}
	return errors.New("instance kept changing while pruning; summaries left for the next prune")
}

// dropSummariesBatch builds one batch of dropExecutionSummaries: the
// instance document's patch (If-Match etag) and the deletion of up to a
// batch's worth of execution documents among gone (each must exist, so a
// summary removed meanwhile fails the batch instead of being subtracted
// twice). It returns nil when there is nothing to drop, and more when
// execution documents remain for another batch.
func (p *Provider) dropSummariesBatch(ctx context.Context, doc *instanceDoc, etag azcore.ETag, gone map[uint64]bool) (*cosmos.Batch, bool, error) {
	var archived []execEntry
	if doc.ArchivedExecutions > 0 {
		all, err := p.archivedExecutions(ctx, doc.InstanceID)
		if err != nil {
			return nil, false, err
		}
		for id, e := range all {
			if gone[id] {
				archived = append(archived, e)
			}
		}
	}
	more := len(archived) > cosmos.MaxBatchOps-1
	archived = archived[:min(len(archived), cosmos.MaxBatchOps-1)]
	kept := make([]execEntry, 0, len(doc.Executions))
	for _, e := range doc.Executions {
		if !gone[e.ID] {
			kept = append(kept, e)
		}
	}
	if len(kept) == len(doc.Executions) && len(archived) == 0 {
		return nil, false, nil
	}
	doc.Executions = kept
	for _, e := range archived {
		doc.ArchivedExecutions--
		doc.ArchivedEvents -= e.EventCount
	}
	doc.sumExecutions()
	var ops azcosmos.PatchOperations
	ops.AppendSet("/executions", kept)
	ops.AppendSet("/executionCount", doc.ExecutionCount)
	ops.AppendSet("/eventCount", doc.EventCount)
	ops.AppendSet("/archivedExecutions", doc.ArchivedExecutions)
	ops.AppendSet("/archivedEvents", doc.ArchivedEvents)
	b := cosmos.NewBatch(doc.InstanceID)
	b.Patch(doc.ID, ops, &etag)
	for _, e := range archived {
		b.Delete(execSummaryDocID(doc.InstanceID, e.ID), nil)
	}
	return b, more, nil
}

// PruneExecutionsBulk implements duroxide.ProviderAdmin. Running instances
// are pruned too (of their old executions).
func (p *Provider) PruneExecutionsBulk(ctx context.Context, filter duroxide.InstanceFilter, options duroxide.PruneOptions) (*duroxide.PruneResult, error) {
	const op = "prune_executions_bulk"
	ctx = background(ctx) // priority.go
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
