package ops

import (
	"context"
)

// BulkOptions configure Bulk.
type BulkOptions struct {
	// DryRun lists the instances the action would apply to and does
	// nothing.
	DryRun bool
	// Progress, if set, is called after each instance with the number done
	// and the total.
	Progress func(done, total int)
}

// BulkFailure is one instance a bulk action failed on.
type BulkFailure struct {
	ID  string
	Err error
}

// BulkResult is what Bulk did.
type BulkResult struct {
	// Matched are the instances the query selected.
	Matched []string
	// Succeeded counts the instances the action succeeded on (0 on a dry
	// run).
	Succeeded int
	// Failed are the instances it failed on.
	Failed []BulkFailure
}

// Bulk performs a on every instance q selects, carrying on past
// failures; it stops early only when ctx ends.
func (s *Service) Bulk(ctx context.Context, q Query, a Action, r Request, o BulkOptions) (*BulkResult, error) {
	all, err := s.matching(ctx, q)
	if err != nil {
		return nil, err
	}
	res := &BulkResult{}
	for _, sum := range all {
		res.Matched = append(res.Matched, sum.ID)
	}
	if o.DryRun {
		return res, nil
	}
	for i, id := range res.Matched {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if err := s.Do(ctx, id, a, r); err != nil {
			res.Failed = append(res.Failed, BulkFailure{ID: id, Err: err})
		} else {
			res.Succeeded++
		}
		if o.Progress != nil {
			o.Progress(i+1, len(res.Matched))
		}
	}
	return res, nil
}
