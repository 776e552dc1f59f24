package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Instance search on Cosmos DB.
//
// Every instance is its own logical partition, and azcosmos v1.5 has no
// client query engine, so the gateway serves a cross-partition query only
// as filters and projections: no ORDER BY, TOP or COUNT across partitions.
// Each search is therefore one parameterised filter query over the
// instance documents, projected to the summary's scalars (never history or
// full outputs), and the order decides how it pages:
//
//   - OrderAny pages on the service's own continuation token: one request
//     per partition key range the page touches (a range with no match is
//     an empty response the page moves past), asking each for no more rows
//     than the page still has room for, so a page never ends inside a
//     response and the next resumes exactly after it.
//   - OrderCreatedDesc/Asc page by keyset (the last row's creation time
//     and id): each page reads the rows after the cursor, keeping only the
//     best PageSize in memory. Its cost grows with the matches after the
//     cursor, not with the page (docs/costs.md).
//
// Counting reads one value per match (the gateway refuses COUNT).

// searchFields is the summary projection: scalars only, the output cut to
// a snippet by the service.
const searchFields = "c.instanceId, c.orchestrationName, c.orchestrationVersion, c.status, c.currentExecutionId, " +
	"c.parentInstanceId, c.createdAt, c.updatedAt, c.completedAt, IS_STRING(c.blocked) AS blocked, IS_DEFINED(c.suspended.at) AS suspended, LEFT(c.output, 200) AS output"

// searchRow is one projected instance.
type searchRow struct {
	InstanceID  string  `json:"instanceId"`
	Name        string  `json:"orchestrationName"`
	Version     string  `json:"orchestrationVersion"`
	Status      string  `json:"status"`
	ExecutionID uint64  `json:"currentExecutionId"`
	Parent      *string `json:"parentInstanceId"`
	CreatedAt   int64   `json:"createdAt"`
	UpdatedAt   int64   `json:"updatedAt"`
	CompletedAt *int64  `json:"completedAt"`
	Blocked     bool    `json:"blocked"`
	Suspended   bool    `json:"suspended"`
	Output      *string `json:"output"`
}

func (r searchRow) summary() duroxide.InstanceSummary {
	s := duroxide.InstanceSummary{
		InstanceID: r.InstanceID, Name: r.Name, Version: r.Version, Status: r.Status, ExecutionID: r.ExecutionID,
		ParentID: deref(r.Parent), CreatedAt: time.UnixMilli(r.CreatedAt).UTC(), UpdatedAt: time.UnixMilli(r.UpdatedAt).UTC(),
		State: duroxide.StateOf(r.Status, r.Output, r.Blocked, r.Suspended), Output: duroxide.Snippet(r.Output),
	}
	if r.CompletedAt != nil {
		s.CompletedAt = time.UnixMilli(*r.CompletedAt).UTC()
	}
	return s
}

// stateClauses is each state's condition on an instance document. A
// cancelled instance is Failed with the runtime's cancellation text; the
// output is not indexed, so that test runs on the documents the status
// index selected. A suspended instance (suspend.go) is neither running nor
// blocked.
var stateClauses = map[duroxide.InstanceState]string{
	duroxide.InstanceRunning:   "((c.status = 'Running' OR c.status = 'ContinuedAsNew') AND NOT IS_STRING(c.blocked) AND NOT IS_DEFINED(c.suspended.at))",
	duroxide.InstanceBlocked:   "((c.status = 'Running' OR c.status = 'ContinuedAsNew') AND IS_STRING(c.blocked) AND NOT IS_DEFINED(c.suspended.at))",
	duroxide.InstanceSuspended: "((c.status = 'Running' OR c.status = 'ContinuedAsNew') AND IS_DEFINED(c.suspended.at))",
	duroxide.InstanceCompleted: "c.status = 'Completed'",
	duroxide.InstanceFailed:    "(c.status = 'Failed' AND NOT (IS_STRING(c.output) AND STARTSWITH(c.output, @cancelled)))",
	duroxide.InstanceCanceled:  "(c.status = 'Failed' AND IS_STRING(c.output) AND STARTSWITH(c.output, @cancelled))",
}

// searchFilter is the WHERE clause (after liveInstances) and parameters of
// q's criteria; none is false when the criteria can match nothing.
func searchFilter(q duroxide.InstanceQuery) (where string, params cosmos.QueryParams, none bool) {
	add := func(clause, name string, v any) {
		where += " AND " + clause
		params = params.Add(name, v)
	}
	if q.Name != "" {
		add("c.orchestrationName = @name", "@name", q.Name)
	}
	if q.Version != "" {
		add("c.orchestrationVersion = @version", "@version", q.Version)
	}
	if q.ParentID != "" {
		add("c.parentInstanceId = @parent", "@parent", q.ParentID)
	}
	if q.IDPrefix != "" {
		add("STARTSWITH(c.instanceId, @prefix)", "@prefix", q.IDPrefix)
	}
	for _, b := range []struct {
		t      time.Time
		clause string
		name   string
	}{
		{q.CreatedFrom, "c.createdAt >= @createdFrom", "@createdFrom"},
		{q.CreatedBefore, "c.createdAt < @createdBefore", "@createdBefore"},
		{q.CompletedFrom, "c.completedAt >= @completedFrom", "@completedFrom"},
		{q.CompletedBefore, "c.completedAt < @completedBefore", "@completedBefore"},
	} {
		if !b.t.IsZero() {
			add(b.clause, b.name, b.t.UnixMilli())
		}
	}
	if len(q.States) == 0 {
		return where, params, false
	}
	var ors []string
	cancel := false
	for _, s := range duroxide.InstanceStates() {
		if c, ok := stateClauses[s]; ok && q.WantsState(s) {
			ors = append(ors, c)
			cancel = cancel || s == duroxide.InstanceFailed || s == duroxide.InstanceCanceled
		}
	}
	if len(ors) == 0 {
		return where, params, true
	}
	where += " AND (" + ors[0]
	for _, c := range ors[1:] {
		where += " OR " + c
	}
	where += ")"
	if cancel {
		params = params.Add("@cancelled", duroxide.CanceledOutputPrefix)
	}
	return where, params, false
}

// SearchInstances implements duroxide.ProviderAdmin (see the top of this
// file for how each order pages).
func (p *Provider) SearchInstances(ctx context.Context, q duroxide.InstanceQuery) (*duroxide.InstancePage, error) {
	const op = "search_instances"
	ctx = background(ctx) // priority.go
	if err := q.Validate(op); err != nil {
		return nil, err
	}
	cur, resumed, err := q.DecodeCursor(op)
	if err != nil {
		return nil, err
	}
	where, params, none := searchFilter(q)
	page := &duroxide.InstancePage{Instances: []duroxide.InstanceSummary{}}
	if none {
		if q.CountTotal {
			page.Count = new(int)
		}
		return page, nil
	}
	if q.OrderBy == duroxide.OrderAny {
		err = p.searchStoreOrder(ctx, q, where, params, cur, resumed, page)
	} else {
		err = p.searchSorted(ctx, q, where, params, cur, resumed, page)
	}
	if err != nil {
		if resumed && errors.Is(err, cosmos.ErrBadRequest) {
			return nil, duroxide.Kinded(duroxide.ErrInvalidInput, op, "continuation token was refused by the store: %v", err)
		}
		return nil, duroxide.Wrap(op, err)
	}
	return page, nil
}

// searchStoreOrder fills the page from the service's continuation.
func (p *Provider) searchStoreOrder(ctx context.Context, q duroxide.InstanceQuery, where string, params cosmos.QueryParams, cur duroxide.SearchCursor, resumed bool, page *duroxide.InstancePage) error {
	text := "SELECT " + searchFields + " FROM c WHERE " + liveInstances + where
	var token *string
	if resumed {
		if cur.Store == "" {
			return duroxide.Kinded(duroxide.ErrInvalidInput, "search_instances", "continuation token is not one a search in this order returned")
		}
		token = &cur.Store
	}
	size := q.Size()
	for first := true; first || token != nil; first = false {
		room := size - len(page.Instances)
		if room == 0 {
			break
		}
		next, _, err := p.st.QueryPages(ctx, text, params, cosmos.QueryOptions{PageSize: int32(room), MaxPages: 1}, token, func(items [][]byte) bool {
			for _, raw := range items {
				var r searchRow
				if json.Unmarshal(raw, &r) == nil {
					page.Instances = append(page.Instances, r.summary())
				}
			}
			return true
		})
		if err != nil {
			return err
		}
		token = next
	}
	if token != nil {
		page.ContinuationToken = q.EncodeCursor(duroxide.SearchCursor{Store: *token})
	}
	if q.CountTotal {
		n, err := p.countMatches(ctx, where, params)
		if err != nil {
			return err
		}
		page.Count = &n
	}
	return nil
}

// searchSorted reads the matches after the cursor and keeps the first
// PageSize in q's order (at most twice that in memory at once).
func (p *Provider) searchSorted(ctx context.Context, q duroxide.InstanceQuery, where string, params cosmos.QueryParams, cur duroxide.SearchCursor, resumed bool, page *duroxide.InstancePage) error {
	scanWhere, scanParams := where, params
	if resumed && !q.CountTotal {
		// Without a count to take, the service skips what earlier pages
		// returned.
		cmpOp := "<"
		if q.OrderBy == duroxide.OrderCreatedAsc {
			cmpOp = ">"
		}
		scanWhere += " AND (c.createdAt " + cmpOp + " @afterCreated OR (c.createdAt = @afterCreated AND c.instanceId " + cmpOp + " @afterID))"
		scanParams = slices.Clone(params).Add("@afterCreated", cur.CreatedAt).Add("@afterID", cur.ID)
	}
	size := q.Size()
	var best []duroxide.InstanceSummary
	matched, more := 0, false
	trim := func() {
		slices.SortFunc(best, q.OrderBy.CompareSummaries)
		if len(best) > size {
			best, more = best[:size], true
		}
	}
	text := "SELECT " + searchFields + " FROM c WHERE " + liveInstances + scanWhere
	_, err := p.st.Query(ctx, text, scanParams, cosmos.QueryOptions{PageSize: 1000}, func(raw []byte) bool {
		var r searchRow
		if json.Unmarshal(raw, &r) != nil {
			return true
		}
		matched++
		if resumed && !cur.After(q.OrderBy, r.CreatedAt, r.InstanceID) {
			return true
		}
		best = append(best, r.summary())
		if len(best) >= 2*size {
			trim()
		}
		return true
	})
	if err != nil {
		return err
	}
	trim()
	page.Instances = append(page.Instances, best...)
	if more {
		last := best[len(best)-1]
		page.ContinuationToken = q.EncodeCursor(duroxide.SearchCursor{CreatedAt: last.CreatedAt.UnixMilli(), ID: last.InstanceID})
	}
	if q.CountTotal {
		page.Count = &matched
	}
	return nil
}

// countMatches counts the instances a filter selects, one value each.
func (p *Provider) countMatches(ctx context.Context, where string, params cosmos.QueryParams) (int, error) {
	n := 0
	_, err := p.st.Query(ctx, "SELECT VALUE 1 FROM c WHERE "+liveInstances+where, params, cosmos.QueryOptions{PageSize: 1000}, func([]byte) bool {
		n++
		return true
	})
	return n, err
}
