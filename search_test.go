package cdb_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
)

// Search on Cosmos DB: what providertest's instance_search cannot say
// for every provider — a store continuation the service refuses, and the
// requests and RU one page costs (docs/costs.md, "Search").

// TestSearchRefusesForeignStoreContinuation: a token whose envelope is
// well formed but whose Cosmos continuation is not one the service issued
// is ErrInvalidInput, not a retryable store failure.
func TestSearchRefusesForeignStoreContinuation(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withRanges(2))
	e.startInstance(t, "tok-1")
	q := duroxide.InstanceQuery{OrderBy: duroxide.OrderAny}
	q.ContinuationToken = q.EncodeCursor(duroxide.SearchCursor{Store: `{"token":"forged","range":{"min":"","max":"FF"}}`})
	page, err := e.p.SearchInstances(t.Context(), q)
	require.ErrorIs(t, err, duroxide.ErrInvalidInput)
	require.Nil(t, page)
}

// TestSearchRefusesStoreContinuationWithControlCharacters: a tampered
// token whose Cosmos continuation holds CR, LF or NUL cannot travel in a
// request header. It is ErrInvalidInput, not the retryable transport
// error the HTTP client would report for the header.
func TestSearchRefusesStoreContinuationWithControlCharacters(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag())
	e.startInstance(t, "ctl-1")
	for _, bad := range []string{"a\rb", "a\nb", "a\x00b", `{"token":"x"}` + "\r\nX-Injected: 1"} {
		q := duroxide.InstanceQuery{OrderBy: duroxide.OrderAny}
		q.ContinuationToken = q.EncodeCursor(duroxide.SearchCursor{Store: bad})
		page, err := e.p.SearchInstances(t.Context(), q)
		require.ErrorIs(t, err, duroxide.ErrInvalidInput, "%q", bad)
		require.False(t, duroxide.IsRetryable(err), "%q: %v", bad, err)
		require.Nil(t, page)
	}
}

// searchCostFixture is n instances on a container of ranges partition key
// ranges: every tenth Failed, the rest Completed.
func searchCostFixture(t *testing.T, ranges, n int) *harness {
	e := newHarness(t, cdb.Options{}, withoutLag(), withRanges(ranges))
	for i := range n {
		inst := fmt.Sprintf("sc-%04d", i)
		must(t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.StartOrchestrationItem{Instance: inst, Orchestration: costOrchName,
			Input: "{}", Version: ptrTo(costOrchVer), ExecutionID: 1}, 0))
		item := e.fetchOrch(t, inst)
		meta := runningMeta()
		meta.Status, meta.Output = ptrTo(duroxide.StatusCompleted), ptrTo(`"done"`)
		if i%10 == 0 {
			meta.Status, meta.Output = ptrTo(duroxide.StatusFailed), ptrTo("boom")
		}
		must(t, e.p.AckOrchestrationItem(e.ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
			HistoryDelta: []duroxide.Event{ev(inst, 1, 1, duroxide.OrchestrationStarted{Name: costOrchName, Version: costOrchVer, Input: "{}"})},
			Metadata:     meta}))
	}
	return e
}

// walkSearch pages through q, measuring each page.
func (e *harness) walkSearch(t *testing.T, q duroxide.InstanceQuery) (pages []cost, rows int) {
	for {
		var page *duroxide.InstancePage
		var err error
		c := e.measure(func() { page, err = e.p.SearchInstances(e.ctx, q) })
		must(t, err)
		pages = append(pages, c)
		rows += len(page.Instances)
		if page.ContinuationToken == "" {
			return pages, rows
		}
		q.ContinuationToken = page.ContinuationToken
	}
}

// TestSearchRequestsPerPage pins the requests of a search page on a
// container with several physical partitions; run with -v for RU,
// documents and bytes per page.
func TestSearchRequestsPerPage(t *testing.T) {
	t.Parallel()
	const ranges, n, size = 4, 200, 50
	e := searchCostFixture(t, ranges, n)
	for _, tc := range []struct {
		name  string
		q     duroxide.InstanceQuery
		match int
	}{
		{"any order", duroxide.InstanceQuery{OrderBy: duroxide.OrderAny, PageSize: size}, n},
		{"any order, failed", duroxide.InstanceQuery{OrderBy: duroxide.OrderAny, PageSize: size, States: []duroxide.InstanceState{duroxide.InstanceFailed}}, n / 10},
		{"any order, count", duroxide.InstanceQuery{OrderBy: duroxide.OrderAny, PageSize: size, CountTotal: true}, n},
		{"newest first", duroxide.InstanceQuery{PageSize: size}, n},
		{"newest first, failed", duroxide.InstanceQuery{PageSize: size, States: []duroxide.InstanceState{duroxide.InstanceFailed}}, n / 10},
		{"newest first, count", duroxide.InstanceQuery{PageSize: size, CountTotal: true}, n},
		{"id prefix", duroxide.InstanceQuery{PageSize: size, IDPrefix: "sc-001"}, 10},
	} {
		pages, rows := e.walkSearch(t, tc.q)
		require.Equal(t, tc.match, rows, "%s: rows", tc.name)
		var total cost
		for i, c := range pages {
			total.add(c)
			t.Logf("%-22s page %d: req %d (%s)  RU %.1f  docs %d  bytes %d", tc.name, i+1, c.Requests, c.ops(), c.RU, c.Docs, c.Bytes)
			switch {
			case tc.q.OrderBy != duroxide.OrderAny:
				// One query of ≤ 1,000 rows per range: a response per range.
				require.Equal(t, int64(ranges), c.Requests, "%s page %d: one response per range", tc.name, i+1)
			case !tc.q.CountTotal:
				require.LessOrEqual(t, c.Requests, int64(ranges), "%s page %d: at most one response per range", tc.name, i+1)
			}
		}
		if tc.q.OrderBy == duroxide.OrderAny && !tc.q.CountTotal {
			// Every response but the last of each page fills it or ends a
			// range: the whole walk costs at most pages + ranges responses.
			require.LessOrEqual(t, total.Requests, int64(len(pages)+ranges), "%s: requests over the walk", tc.name)
		}
		t.Logf("%-22s total: %d pages, req %d, RU %.1f, docs %d, bytes %d", tc.name, len(pages), total.Requests, total.RU, total.Docs, total.Bytes)
	}
}

// TestSearchPagesThroughThrottlingAndUnavailability: live faults on the
// pages of a search. A throttled page (429) is sent again from its
// continuation by the store; a page answered 503 fails the call with a
// retryable error, and the caller's retry with the same token resumes at
// the same place. Either way every instance is returned exactly once.
func TestSearchPagesThroughThrottlingAndUnavailability(t *testing.T) {
	t.Parallel()
	const ranges, n = 8, 30
	e := searchCostFixture(t, ranges, n)
	resumed := func(r *http.Request) bool { return r.Header.Get("x-ms-continuation") != "" }
	for _, o := range []duroxide.SearchOrder{duroxide.OrderAny, duroxide.OrderCreatedDesc} {
		for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
			remove := e.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpQuery, Match: resumed, Status: status, Times: 4})
			q := duroxide.InstanceQuery{OrderBy: o, PageSize: 4}
			seen := map[string]int{}
			failures := 0
			for pages := 0; pages < 100; pages++ {
				page, err := e.p.SearchInstances(t.Context(), q)
				if err != nil {
					require.ErrorIs(t, err, duroxide.ErrRetryable, "order %s, status %d", o, status)
					failures++
					continue // the caller's retry, same token
				}
				for _, s := range page.Instances {
					seen[s.InstanceID]++
				}
				if page.ContinuationToken == "" {
					break
				}
				q.ContinuationToken = page.ContinuationToken
			}
			remove()
			require.Len(t, seen, n, "order %s, status %d: every instance", o, status)
			for id, k := range seen {
				require.Equal(t, 1, k, "order %s, status %d: %s returned %d times", o, status, id, k)
			}
			if status == http.StatusTooManyRequests {
				require.Zero(t, failures, "throttling is retried inside the store")
			} else {
				require.NotZero(t, failures, "a 503 reaches the caller as a retryable error")
			}
		}
	}
}
