package ops

import (
	"context"
	"errors"
	"fmt"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// Bulk performs a on every instance q selects, page by page in the
// store's cheapest order. Cancel and purge are the Client's CancelMany
// (with r.Reason) and DeleteMany (r.Force sets o.Force); suspend, resume,
// rewind, restart and redrive walk the search here and call the Client
// for each instance, with the same options, counts and progress. Every
// action skips the instances it does not apply to, with the reason
// (cancelling a terminal instance, purging a running one without force,
// rewinding one that did not fail, ...), and carries on past failures.
// Raise and enqueue are ErrNotSupported in bulk.
func (s *Service) Bulk(ctx context.Context, q duroxide.InstanceQuery, a Action, r Request, o durable.BulkOptions) (*durable.BulkResult, error) {
	switch a {
	case ActionCancel:
		return s.c.CancelMany(ctx, q, r.Reason, o)
	case ActionPurge:
		o.Force = o.Force || r.Force
		return s.c.DeleteMany(ctx, q, o)
	case ActionSuspend, ActionResume, ActionRewind, ActionRestart, ActionRedrive:
		return s.walk(ctx, q, o, func(sum duroxide.InstanceSummary) durable.BulkItem {
			if why := inapplicable(a, sum.State); why != "" {
				return durable.BulkItem{InstanceID: sum.InstanceID, Outcome: durable.BulkSkipped, Reason: why}
			}
			if o.DryRun {
				return durable.BulkItem{InstanceID: sum.InstanceID, Outcome: durable.BulkDone}
			}
			return outcome(sum.InstanceID, s.Do(ctx, sum.InstanceID, a, r))
		})
	}
	return nil, fmt.Errorf("%s of many instances: %w", a, ErrNotSupported)
}

// BulkSupported reports whether Bulk can perform a.
func BulkSupported(a Action) bool { return a != ActionRaise && a != ActionEnqueue }

// inapplicable says why a does not apply to an instance in state st, or
// "" when it may. What a search's state cannot tell (a failure that is
// not poison, a running instance that is not suspended) the Client
// refuses with ErrInvalidState, which skips the instance too.
func inapplicable(a Action, st duroxide.InstanceState) string {
	switch a {
	case ActionSuspend, ActionResume:
		if st.IsTerminal() {
			return "already ended"
		}
	case ActionRewind, ActionRedrive:
		if st != duroxide.InstanceFailed && st != duroxide.InstanceCanceled {
			return "did not fail"
		}
	case ActionRestart:
		if !st.IsTerminal() {
			return "not ended"
		}
	}
	return ""
}

// outcome is an instance's outcome from the Client's answer: refusals of
// the instance's state, and instances gone meanwhile, are skipped.
func outcome(instance string, err error) durable.BulkItem {
	switch {
	case err == nil:
		return durable.BulkItem{InstanceID: instance, Outcome: durable.BulkDone}
	case errors.Is(err, durable.ErrInvalidState):
		return durable.BulkItem{InstanceID: instance, Outcome: durable.BulkSkipped, Reason: err.Error()}
	case errors.Is(err, durable.ErrInstanceNotFound):
		return durable.BulkItem{InstanceID: instance, Outcome: durable.BulkSkipped, Reason: "gone"}
	}
	return durable.BulkItem{InstanceID: instance, Outcome: durable.BulkFailed, Err: err}
}

// maxBulkErrors bounds BulkResult.Errors, as the Client's bulk
// operations do.
const maxBulkErrors = 100

// walk applies act to every instance q selects as the Client's bulk
// operations do: in the store's order from the start, the count taken on
// the first page, progress reported after each page, stopping at
// o.Limit actions or at ctx's end.
func (s *Service) walk(ctx context.Context, q duroxide.InstanceQuery, o durable.BulkOptions, act func(duroxide.InstanceSummary) durable.BulkItem) (*durable.BulkResult, error) {
	if o.Limit < 0 {
		return nil, fmt.Errorf("%w: limit must not be negative", durable.ErrInvalidInput)
	}
	q.OrderBy, q.ContinuationToken, q.CountTotal = duroxide.OrderAny, "", true
	res := &durable.BulkResult{DryRun: o.DryRun}
	limited := func() bool { return o.Limit > 0 && res.Done >= o.Limit }
	for {
		page, err := s.c.Search(ctx, q)
		if err != nil {
			return res, err
		}
		if page.Count != nil {
			res.Total = *page.Count
		}
		var items []durable.BulkItem
		for _, sum := range page.Instances {
			if limited() {
				break
			}
			if err := ctx.Err(); err != nil {
				report(res, o, items)
				return res, err
			}
			it := act(sum)
			items = append(items, it)
			tally(res, it)
		}
		report(res, o, items)
		if page.ContinuationToken == "" || limited() {
			return res, nil
		}
		q.ContinuationToken, q.CountTotal = page.ContinuationToken, false
	}
}

func tally(r *durable.BulkResult, it durable.BulkItem) {
	r.Examined++
	switch it.Outcome {
	case durable.BulkDone:
		r.Done++
	case durable.BulkSkipped:
		r.Skipped++
	case durable.BulkFailed:
		r.Failed++
		if len(r.Errors) < maxBulkErrors {
			r.Errors = append(r.Errors, it)
		}
	}
}

func report(r *durable.BulkResult, o durable.BulkOptions, page []durable.BulkItem) {
	if o.Progress != nil {
		o.Progress(durable.BulkProgress{Total: r.Total, Examined: r.Examined, Done: r.Done, Skipped: r.Skipped,
			Failed: r.Failed, Page: page})
	}
}
