package memprovider

import (
	"context"
	"slices"

	"github.com/duroxide-go/cdb/duroxide"
)

// SearchInstances implements duroxide.ProviderAdmin: it filters the
// instances with the query's reference semantics, sorts them and pages by
// keyset (the last instance returned), so instances created or deleted
// between pages never shift a page boundary: a search sees each instance
// that exists throughout exactly once.
func (a *admin) SearchInstances(ctx context.Context, q duroxide.InstanceQuery) (*duroxide.InstancePage, error) {
	const op = "search_instances"
	if err := q.Validate(op); err != nil {
		return nil, err
	}
	cur, resumed, err := q.DecodeCursor(op)
	if err != nil {
		return nil, err
	}
	unlock, err := a.lock(ctx, op)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var matches []duroxide.InstanceSummary
	for _, s := range a.p.instances {
		if sum := summaryOf(s); q.Matches(sum) {
			matches = append(matches, sum)
		}
	}
	slices.SortFunc(matches, q.OrderBy.CompareSummaries)
	page := &duroxide.InstancePage{Instances: []duroxide.InstanceSummary{}}
	if q.CountTotal {
		n := len(matches)
		page.Count = &n
	}
	if resumed {
		i, _ := slices.BinarySearchFunc(matches, cur, func(s duroxide.InstanceSummary, c duroxide.SearchCursor) int {
			if c.After(q.OrderBy, s.CreatedAt.UnixMilli(), s.InstanceID) {
				return 1
			}
			return -1
		})
		matches = matches[i:]
	}
	if n := q.Size(); len(matches) > n {
		matches = matches[:n]
		last := matches[n-1]
		page.ContinuationToken = q.EncodeCursor(duroxide.SearchCursor{CreatedAt: last.CreatedAt.UnixMilli(), ID: last.InstanceID})
	}
	page.Instances = append(page.Instances, matches...)
	return page, nil
}

// summaryOf is the search row of an instance. Callers hold p.mu.
func summaryOf(s *instanceState) duroxide.InstanceSummary {
	sum := duroxide.InstanceSummary{
		InstanceID: s.id, Name: s.name, Version: s.version, Status: s.status(),
		ExecutionID: s.currentExecution, CreatedAt: s.createdAt, UpdatedAt: s.updatedAt,
	}
	if s.parent != nil {
		sum.ParentID = *s.parent
	}
	var output *string
	if ex := s.executions[s.currentExecution]; ex != nil {
		output = ex.output
		if ex.completedAt != nil {
			sum.CompletedAt = *ex.completedAt
		}
	}
	sum.State = duroxide.StateOf(sum.Status, output, s.blocked != "", s.suspended != nil)
	sum.Output = duroxide.Snippet(output)
	return sum
}
