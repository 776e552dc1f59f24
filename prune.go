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
	var archived map[uint64]execEntry
	if options.CompletedBefore != nil && doc.ArchivedExecutions > 0 {
		if archived, err = p.archivedExecutions(ctx, instance); err != nil {
			return nil, duroxide.Wrap(op, err)
		}
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

// dropExecutionSummaries removes the summaries of pruned executions: from
// the instance document's list, and their execution documents, in one
// batch with the instance document's new totals, so the totals count each
// removal once however often a prune is retried or run concurrently. It
// retries on a concurrent change (an ack of a running instance, another
// prune).
func (p *Provider) dropExecutionSummaries(ctx context.Context, instance string, execs []uint64) error {
	gone := map[uint64]bool{}
	for _, e := range execs {
		gone[e] = true
	}
	for attempt := 0; attempt < 5; {
		doc, etag, err := p.readInstance(ctx, instance)
		if err != nil || !doc.exists() {
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
