package durable

import (
	"context"
	"errors"

	"github.com/duroxide-go/cdb/duroxide"
)

// Search and bulk operations: find instances with the same criteria the
// dashboard and CLI offer, then cancel, delete or prune everything a
// search selects, page by page (never the whole set in memory), with a dry
// run and progress reports. Each bulk call is the single-instance call's
// name with "Many": CancelInstance/CancelMany, DeleteInstance/DeleteMany,
// PruneExecutions/PruneMany. They replace Rust's delete_instance_bulk and
// prune_executions_bulk on the client (the provider contract keeps
// ProviderAdmin.DeleteInstanceBulk and PruneExecutionsBulk).

// Search returns one page of the instances q selects; pass the page's
// ContinuationToken back in q for the next. Bad criteria and a token that
// does not continue the same search are ErrInvalidInput.
func (c *Client) Search(ctx context.Context, q duroxide.InstanceQuery) (*duroxide.InstancePage, error) {
	a, err := c.admin()
	if err != nil {
		return nil, err
	}
	return a.SearchInstances(ctx, q)
}

// BulkOptions tunes CancelMany, DeleteMany and PruneMany.
type BulkOptions struct {
	// DryRun examines and reports every instance without changing any:
	// Done counts what the operation would do.
	DryRun bool
	// Force makes DeleteMany delete instances that are not terminal too.
	Force bool
	// Limit stops the operation once it has acted on this many instances
	// (0 = no limit).
	Limit int
	// Progress, when set, is called after each page with the totals so
	// far and that page's outcomes.
	Progress func(BulkProgress)
}

// BulkOutcome is what a bulk operation did with one instance.
type BulkOutcome string

// The outcomes. In a dry run Done means "would be done".
const (
	BulkDone    BulkOutcome = "done"
	BulkSkipped BulkOutcome = "skipped"
	BulkFailed  BulkOutcome = "failed"
)

// BulkItem is one instance's outcome.
type BulkItem struct {
	InstanceID string
	Outcome    BulkOutcome
	// Reason says why an instance was skipped ("already terminal", ...).
	Reason string
	// Err is the failure of a Failed instance.
	Err error
}

// BulkProgress is a bulk operation's state after a page.
type BulkProgress struct {
	// Total is how many instances the query matched when the operation
	// started (instances created since may be examined too).
	Total int
	// Examined counts the instances read so far; it is Done + Skipped +
	// Failed.
	Examined, Done, Skipped, Failed int
	// Page holds the outcomes of the page just processed.
	Page []BulkItem
}

// maxBulkErrors bounds BulkResult.Errors; Failed counts them all.
const maxBulkErrors = 100

// BulkResult is what a bulk operation did.
type BulkResult struct {
	DryRun bool
	// Total, Examined, Done, Skipped and Failed are as in BulkProgress.
	Total, Examined, Done, Skipped, Failed int
	// Errors holds the first 100 failures.
	Errors []BulkItem
	// Deleted totals what DeleteMany removed (zero for the other calls and
	// for dry runs).
	Deleted duroxide.DeleteInstanceResult
	// Pruned totals what PruneMany removed (zero for the other calls and
	// for dry runs).
	Pruned duroxide.PruneResult
}

// CancelMany cancels, with reason, every instance q selects that is not
// terminal yet (each fails with "canceled: reason", as CancelInstance
// does); terminal instances are skipped. q's OrderBy, ContinuationToken
// and CountTotal are ignored: the operation walks the store's cheapest
// order from the start. It stops at ctx's end, returning what it did so
// far with ctx's error.
func (c *Client) CancelMany(ctx context.Context, q duroxide.InstanceQuery, reason string, opts ...BulkOptions) (*BulkResult, error) {
	o := lastOption(opts)
	return c.bulk(ctx, q, o, func(s duroxide.InstanceSummary) BulkItem {
		if s.State.IsTerminal() {
			return BulkItem{InstanceID: s.InstanceID, Outcome: BulkSkipped, Reason: "already terminal"}
		}
		if o.DryRun {
			return BulkItem{InstanceID: s.InstanceID, Outcome: BulkDone}
		}
		err := c.CancelInstance(ctx, s.InstanceID, reason)
		return outcome(s.InstanceID, err)
	})
}

// DeleteMany deletes every instance q selects that is terminal (all of
// them with Force), each with its sub-orchestrations, as DeleteInstance
// does. A sub-orchestration is skipped: it goes with its root. Instances a
// cascade already removed are skipped too. q is walked as CancelMany
// walks it. The CLI and dashboard call this "purge".
func (c *Client) DeleteMany(ctx context.Context, q duroxide.InstanceQuery, opts ...BulkOptions) (*BulkResult, error) {
	o := lastOption(opts)
	a, err := c.admin()
	if err != nil {
		return nil, err
	}
	var deleted duroxide.DeleteInstanceResult
	res, err := c.bulk(ctx, q, o, func(s duroxide.InstanceSummary) BulkItem {
		switch {
		case s.ParentID != "":
			return BulkItem{InstanceID: s.InstanceID, Outcome: BulkSkipped, Reason: "sub-orchestration: purged with its root " + s.ParentID}
		case !o.Force && !s.State.IsTerminal():
			return BulkItem{InstanceID: s.InstanceID, Outcome: BulkSkipped, Reason: "not terminal (use Force)"}
		case o.DryRun:
			return BulkItem{InstanceID: s.InstanceID, Outcome: BulkDone}
		}
		r, err := a.DeleteInstance(ctx, s.InstanceID, o.Force)
		if err != nil {
			return outcome(s.InstanceID, err)
		}
		deleted.Add(*r)
		return outcome(s.InstanceID, nil)
	})
	if res != nil {
		res.Deleted = deleted
	}
	return res, err
}

// PruneMany prunes the executions of every instance q selects, as
// PruneExecutions does with prune (each instance's current execution is
// always kept, so running instances are pruned too). q is walked as
// CancelMany walks it; BulkOptions.Force has no effect.
func (c *Client) PruneMany(ctx context.Context, q duroxide.InstanceQuery, prune duroxide.PruneOptions, opts ...BulkOptions) (*BulkResult, error) {
	o := lastOption(opts)
	a, err := c.admin()
	if err != nil {
		return nil, err
	}
	var pruned duroxide.PruneResult
	res, err := c.bulk(ctx, q, o, func(s duroxide.InstanceSummary) BulkItem {
		if o.DryRun {
			return BulkItem{InstanceID: s.InstanceID, Outcome: BulkDone}
		}
		r, err := a.PruneExecutions(ctx, s.InstanceID, prune)
		if err != nil {
			return outcome(s.InstanceID, err)
		}
		pruned.InstancesProcessed += r.InstancesProcessed
		pruned.ExecutionsDeleted += r.ExecutionsDeleted
		pruned.EventsDeleted += r.EventsDeleted
		return outcome(s.InstanceID, nil)
	})
	if res != nil {
		res.Pruned = pruned
	}
	return res, err
}

// outcome turns an operation's error into the instance's outcome; an
// instance gone meanwhile is skipped.
func outcome(instance string, err error) BulkItem {
	switch {
	case err == nil:
		return BulkItem{InstanceID: instance, Outcome: BulkDone}
	case errors.Is(err, ErrInstanceNotFound):
		return BulkItem{InstanceID: instance, Outcome: BulkSkipped, Reason: "gone"}
	}
	return BulkItem{InstanceID: instance, Outcome: BulkFailed, Err: err}
}

// bulk walks q page by page in the store's order, applying act to each
// instance and reporting after each page.
func (c *Client) bulk(ctx context.Context, q duroxide.InstanceQuery, o BulkOptions, act func(duroxide.InstanceSummary) BulkItem) (*BulkResult, error) {
	if o.Limit < 0 {
		return nil, &InputError{Op: "bulk", Reason: "limit must not be negative"}
	}
	q.OrderBy, q.ContinuationToken, q.CountTotal = duroxide.OrderAny, "", true
	res := &BulkResult{DryRun: o.DryRun}
	for {
		page, err := c.Search(ctx, q)
		if err != nil {
			return res, err
		}
		if page.Count != nil {
			res.Total = *page.Count
		}
		items := make([]BulkItem, 0, len(page.Instances))
		for _, s := range page.Instances {
			if o.Limit > 0 && res.Done >= o.Limit {
				break
			}
			if err := ctx.Err(); err != nil {
				report(res, o, items)
				return res, err
			}
			it := act(s)
			items = append(items, it)
			res.tally(it)
		}
		report(res, o, items)
		if page.ContinuationToken == "" || (o.Limit > 0 && res.Done >= o.Limit) {
			return res, nil
		}
		// The count is taken once: later pages only read.
		q.ContinuationToken, q.CountTotal = page.ContinuationToken, false
	}
}

func (r *BulkResult) tally(it BulkItem) {
	r.Examined++
	switch it.Outcome {
	case BulkDone:
		r.Done++
	case BulkSkipped:
		r.Skipped++
	case BulkFailed:
		r.Failed++
		if len(r.Errors) < maxBulkErrors {
			r.Errors = append(r.Errors, it)
		}
	}
}

func report(r *BulkResult, o BulkOptions, page []BulkItem) {
	if o.Progress != nil {
		o.Progress(BulkProgress{Total: r.Total, Examined: r.Examined, Done: r.Done, Skipped: r.Skipped, Failed: r.Failed, Page: page})
	}
}
