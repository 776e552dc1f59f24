package providertest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// instance_search: not in duroxide. ProviderAdmin.SearchInstances, the
// operators' search: every filter alone and combined, the three orders,
// keyset/continuation paging that neither repeats nor skips an instance,
// the optional count, hostile ids and prefixes matched as data, and bad
// input refused with ErrInvalidInput.
var instanceSearchTests = []Test{
	{Name: "search_filters_by_each_field", Func: testSearchFiltersByEachField},
	{Name: "search_reports_summaries", Func: testSearchReportsSummaries},
	{Name: "search_orders_by_creation_time", Func: testSearchOrdersByCreationTime},
	{Name: "search_pages_without_duplicates_or_gaps", Func: testSearchPagesWithoutDuplicatesOrGaps},
	{Name: "search_counts_all_matches", Func: testSearchCountsAllMatches},
	{Name: "search_matches_hostile_ids_and_prefixes_as_data", Func: testSearchHostileIDs},
	{Name: "search_rejects_invalid_input", Func: testSearchRejectsInvalidInput},
	{Name: "search_of_empty_store_is_one_empty_page", Func: testSearchEmptyStore},
}

// searchInstance is one instance of a search fixture.
type searchInstance struct {
	id, name, version, status, output, parent string
	blocked                                   bool
}

// createSearchInstance creates the instance in one acked turn; blocked
// then marks it blocked through BlockOrchestrationItem.
func createSearchInstance(t *testing.T, p duroxide.Provider, s searchInstance) {
	t.Helper()
	md := duroxide.ExecutionMetadata{OrchestrationName: ptr(s.name), OrchestrationVersion: ptr(s.version)}
	if s.status != "" {
		md.Status, md.Output = ptr(s.status), ptr(s.output)
	}
	start := startItem(s.id)
	start.Orchestration, start.Version = s.name, ptr(s.version)
	if s.parent != "" {
		start.ParentInstance, start.ParentID = ptr(s.parent), ptr(uint64(1))
		md.ParentInstanceID = ptr(s.parent)
	}
	enqueueOrch(t, p, start)
	item := mustFetchInstance(t, p, testLock, s.id)
	started := event(s.id, 1, 1, duroxide.OrchestrationStarted{Name: s.name, Version: s.version, Input: testInput, ParentInstance: start.ParentInstance, ParentID: start.ParentID})
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, HistoryDelta: []duroxide.Event{started}, Metadata: md})
	if s.blocked {
		poke(t, p, s.id)
		item := mustFetchInstance(t, p, testLock, s.id)
		require.NoError(t, p.BlockOrchestrationItem(t.Context(), item.LockToken, 0, "nondeterministic: test"))
	}
}

// searchFixture is a store with one instance of every state, two names
// and versions, a child and a second id prefix.
var searchFixture = []searchInstance{
	{id: "s-a1", name: "A", version: "1", status: duroxide.StatusCompleted, output: `"done"`},
	{id: "s-a2", name: "A", version: "2", status: duroxide.StatusFailed, output: "boom"},
	{id: "s-b1", name: "B", version: "1", status: duroxide.StatusFailed, output: duroxide.CancelledOutputPrefix + "by operator"},
	{id: "s-b2", name: "B", version: "1"},
	{id: "s-c1", name: "C", version: "1", status: duroxide.StatusCompleted, output: "child", parent: "s-a1"},
	{id: "t-x", name: "A", version: "1"},
	// Last: blocking leaves its message queued, which a later fetch would
	// take instead of the next instance's start.
	{id: "s-b3", name: "B", version: "1", blocked: true},
}

// searchAll pages through q (page size 2 unless set), requiring no
// instance twice, and returns every result in order.
func searchAll(t *testing.T, a duroxide.ProviderAdmin, q duroxide.InstanceQuery) []duroxide.InstanceSummary {
	t.Helper()
	if q.PageSize == 0 {
		q.PageSize = 2
	}
	var out []duroxide.InstanceSummary
	seen := map[string]bool{}
	for pages := 0; ; pages++ {
		require.Less(t, pages, 1000, "the search never ends")
		page, err := a.SearchInstances(t.Context(), q)
		require.NoError(t, err, "search_instances")
		require.LessOrEqual(t, len(page.Instances), q.PageSize, "a page holds at most PageSize instances")
		for _, s := range page.Instances {
			require.False(t, seen[s.InstanceID], "instance %q returned twice", s.InstanceID)
			seen[s.InstanceID] = true
			out = append(out, s)
		}
		if page.ContinuationToken == "" {
			return out
		}
		q.ContinuationToken = page.ContinuationToken
	}
}

// searchIDs is searchAll's ids, sorted.
func searchIDs(t *testing.T, a duroxide.ProviderAdmin, q duroxide.InstanceQuery) []string {
	t.Helper()
	ids := []string{}
	for _, s := range searchAll(t, a, q) {
		ids = append(ids, s.InstanceID)
	}
	slices.Sort(ids)
	return ids
}

func newSearchFixture(t *testing.T, f Factory) duroxide.ProviderAdmin {
	_, p := newProvider(t, f)
	for _, s := range searchFixture {
		createSearchInstance(t, p, s)
	}
	return admOf(t, p)
}

func testSearchFiltersByEachField(t *testing.T, f Factory) {
	t.Parallel()
	a := newSearchFixture(t, f)
	future := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		what string
		q    duroxide.InstanceQuery
		want []string
	}{
		{"everything", duroxide.InstanceQuery{}, []string{"s-a1", "s-a2", "s-b1", "s-b2", "s-b3", "s-c1", "t-x"}},
		{"name", duroxide.InstanceQuery{Name: "A"}, []string{"s-a1", "s-a2", "t-x"}},
		{"name and version", duroxide.InstanceQuery{Name: "A", Version: "1"}, []string{"s-a1", "t-x"}},
		{"version", duroxide.InstanceQuery{Version: "2"}, []string{"s-a2"}},
		{"completed", duroxide.InstanceQuery{States: []duroxide.InstanceState{duroxide.InstanceCompleted}}, []string{"s-a1", "s-c1"}},
		{"failed is not cancelled", duroxide.InstanceQuery{States: []duroxide.InstanceState{duroxide.InstanceFailed}}, []string{"s-a2"}},
		{"cancelled", duroxide.InstanceQuery{States: []duroxide.InstanceState{duroxide.InstanceCancelled}}, []string{"s-b1"}},
		{"running is not blocked", duroxide.InstanceQuery{States: []duroxide.InstanceState{duroxide.InstanceRunning}}, []string{"s-b2", "t-x"}},
		{"blocked", duroxide.InstanceQuery{States: []duroxide.InstanceState{duroxide.InstanceBlocked}}, []string{"s-b3"}},
		{"suspended", duroxide.InstanceQuery{States: []duroxide.InstanceState{duroxide.InstanceSuspended}}, []string{}},
		{"any of two states", duroxide.InstanceQuery{States: []duroxide.InstanceState{duroxide.InstanceFailed, duroxide.InstanceCancelled}}, []string{"s-a2", "s-b1"}},
		{"parent", duroxide.InstanceQuery{ParentID: "s-a1"}, []string{"s-c1"}},
		{"id prefix", duroxide.InstanceQuery{IDPrefix: "s-b"}, []string{"s-b1", "s-b2", "s-b3"}},
		{"completed window", duroxide.InstanceQuery{CompletedBefore: future}, []string{"s-a1", "s-a2", "s-b1", "s-c1"}},
		{"completed in the future", duroxide.InstanceQuery{CompletedFrom: future}, []string{}},
		{"created in the future", duroxide.InstanceQuery{CreatedFrom: future}, []string{}},
		{"created before the future", duroxide.InstanceQuery{CreatedBefore: future, IDPrefix: "t-"}, []string{"t-x"}},
		{"combined", duroxide.InstanceQuery{Name: "B", IDPrefix: "s-b", States: []duroxide.InstanceState{duroxide.InstanceRunning, duroxide.InstanceBlocked}}, []string{"s-b2", "s-b3"}},
	} {
		require.Equal(t, tc.want, searchIDs(t, a, tc.q), tc.what)
	}

	// Creation windows against the times the store recorded: from is
	// inclusive and before exclusive, so the two halves partition the set.
	all := searchAll(t, a, duroxide.InstanceQuery{OrderBy: duroxide.OrderCreatedAsc})
	pivot := all[len(all)/2].CreatedAt
	var before, from []string
	for _, s := range all {
		if s.CreatedAt.UnixMilli() < pivot.UnixMilli() {
			before = append(before, s.InstanceID)
		} else {
			from = append(from, s.InstanceID)
		}
	}
	slices.Sort(before)
	slices.Sort(from)
	require.Equal(t, append([]string{}, before...), searchIDs(t, a, duroxide.InstanceQuery{CreatedBefore: pivot}), "created before the pivot")
	require.Equal(t, from, searchIDs(t, a, duroxide.InstanceQuery{CreatedFrom: pivot}), "created from the pivot")
}

func testSearchReportsSummaries(t *testing.T, f Factory) {
	t.Parallel()
	a := newSearchFixture(t, f)
	byID := map[string]duroxide.InstanceSummary{}
	for _, s := range searchAll(t, a, duroxide.InstanceQuery{}) {
		byID[s.InstanceID] = s
	}
	b1 := byID["s-b1"]
	require.Equal(t, duroxide.InstanceCancelled, b1.State)
	require.Equal(t, duroxide.StatusFailed, b1.Status)
	require.Equal(t, duroxide.CancelledOutputPrefix+"by operator", b1.Output)
	require.Equal(t, "B", b1.Name)
	require.Equal(t, "1", b1.Version)
	require.Equal(t, uint64(1), b1.ExecutionID)
	require.False(t, b1.CreatedAt.IsZero(), "created time")
	require.False(t, b1.CompletedAt.IsZero(), "a failed instance has a completion time")
	require.False(t, b1.CompletedAt.Before(b1.CreatedAt.Truncate(time.Millisecond)), "completed %v before created %v", b1.CompletedAt, b1.CreatedAt)
	require.Empty(t, b1.ParentID)

	require.Equal(t, "s-a1", byID["s-c1"].ParentID)
	require.True(t, byID["s-b2"].CompletedAt.IsZero(), "a running instance has no completion time")
	require.Equal(t, duroxide.InstanceBlocked, byID["s-b3"].State)
	require.Equal(t, duroxide.StatusRunning, byID["s-b3"].Status)
	require.Equal(t, `"done"`, byID["s-a1"].Output)
}

func testSearchOrdersByCreationTime(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	var want []string
	for i := range 7 {
		id := fmt.Sprintf("ord-%d", i)
		createSearchInstance(t, p, searchInstance{id: id, name: "O", version: "1"})
		want = append(want, id)
	}
	a := admOf(t, p)
	for _, o := range []duroxide.SearchOrder{duroxide.OrderCreatedDesc, duroxide.OrderCreatedAsc, duroxide.OrderAny} {
		got := searchAll(t, a, duroxide.InstanceQuery{OrderBy: o, PageSize: 3})
		var ids []string
		for _, s := range got {
			ids = append(ids, s.InstanceID)
		}
		require.ElementsMatch(t, want, ids, "order %s returns every instance", o)
		if o == duroxide.OrderAny {
			continue
		}
		require.True(t, slices.IsSortedFunc(got, o.CompareSummaries), "order %s: %v", o, ids)
	}
	first := searchAll(t, a, duroxide.InstanceQuery{PageSize: 1})
	require.Equal(t, "ord-6", first[0].InstanceID, "newest first by default")
}

func testSearchPagesWithoutDuplicatesOrGaps(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const n = 23
	var want []string
	for i := range n {
		id := fmt.Sprintf("pg-%02d", i)
		status := ""
		if i%3 == 0 {
			status = duroxide.StatusCompleted
		}
		createSearchInstance(t, p, searchInstance{id: id, name: "P", version: "1", status: status})
		want = append(want, id)
	}
	a := admOf(t, p)
	for _, o := range []duroxide.SearchOrder{duroxide.OrderCreatedDesc, duroxide.OrderCreatedAsc, duroxide.OrderAny} {
		for _, size := range []int{1, 4, n, n + 1} {
			got := searchIDs(t, a, duroxide.InstanceQuery{OrderBy: o, PageSize: size, IDPrefix: "pg-"})
			require.Equal(t, want, got, "order %s, page size %d", o, size)
		}
	}

	// Instances created while a search pages do not disturb it: every
	// instance that existed throughout is returned exactly once.
	for _, o := range []duroxide.SearchOrder{duroxide.OrderCreatedDesc, duroxide.OrderCreatedAsc, duroxide.OrderAny} {
		q := duroxide.InstanceQuery{OrderBy: o, PageSize: 5, IDPrefix: "pg-"}
		seen := map[string]int{}
		for pages := 0; ; pages++ {
			page, err := a.SearchInstances(t.Context(), q)
			require.NoError(t, err)
			for _, s := range page.Instances {
				seen[s.InstanceID]++
			}
			if page.ContinuationToken == "" {
				break
			}
			createSearchInstance(t, p, searchInstance{id: fmt.Sprintf("pg-late-%d-%d", o, pages), name: "P", version: "1"})
			q.ContinuationToken = page.ContinuationToken
		}
		for _, id := range want {
			require.Equal(t, 1, seen[id], "order %s: %s seen %d times", o, id, seen[id])
		}
		for id, k := range seen {
			require.Equal(t, 1, k, "order %s: %s seen %d times", o, id, k)
		}
	}
}

func testSearchCountsAllMatches(t *testing.T, f Factory) {
	t.Parallel()
	a := newSearchFixture(t, f)
	page, err := a.SearchInstances(t.Context(), duroxide.InstanceQuery{PageSize: 2})
	require.NoError(t, err)
	require.Nil(t, page.Count, "no count unless asked for")
	for _, tc := range []struct {
		q    duroxide.InstanceQuery
		want int
	}{
		{duroxide.InstanceQuery{}, len(searchFixture)},
		{duroxide.InstanceQuery{Name: "B"}, 3},
		{duroxide.InstanceQuery{States: []duroxide.InstanceState{duroxide.InstanceCancelled, duroxide.InstanceCompleted}}, 3},
		{duroxide.InstanceQuery{IDPrefix: "nothing"}, 0},
	} {
		for _, o := range []duroxide.SearchOrder{duroxide.OrderCreatedDesc, duroxide.OrderAny} {
			q := tc.q
			q.CountTotal, q.PageSize, q.OrderBy = true, 2, o
			for pages := 0; ; pages++ {
				page, err := a.SearchInstances(t.Context(), q)
				require.NoError(t, err)
				require.NotNil(t, page.Count, "count asked for")
				require.Equal(t, tc.want, *page.Count, "count of %+v on page %d", tc.q, pages)
				if page.ContinuationToken == "" {
					break
				}
				q.ContinuationToken = page.ContinuationToken
			}
		}
	}
}

func testSearchHostileIDs(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	hostile := []string{`it's "q"`, `it'`, "50%_off", "50x_off", "a/b#c?d", "über-✓", "' OR 1=1 --", `\'; DROP`, "<script>alert(1)</script>"}
	for _, id := range hostile {
		createSearchInstance(t, p, searchInstance{id: id, name: "n'" + id, version: `v"1`})
	}
	a := admOf(t, p)
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"it'", []string{`it'`, `it's "q"`}},
		{`it's "`, []string{`it's "q"`}},
		{"50%", []string{"50%_off"}},
		{"50_", []string{}},
		{"ü", []string{"über-✓"}},
		{"über-✓", []string{"über-✓"}},
		{"u", []string{}},
		{"'", []string{"' OR 1=1 --"}},
		{`\`, []string{`\'; DROP`}},
		{"a/b#", []string{"a/b#c?d"}},
		{"<", []string{"<script>alert(1)</script>"}},
		{"' OR 1=1 --x", []string{}},
	} {
		require.Equal(t, tc.want, searchIDs(t, a, duroxide.InstanceQuery{IDPrefix: tc.prefix}), "prefix %q", tc.prefix)
	}
	for _, id := range hostile {
		require.Equal(t, []string{id}, searchIDs(t, a, duroxide.InstanceQuery{Name: "n'" + id, Version: `v"1`}), "name of %q", id)
		require.Equal(t, []string{}, searchIDs(t, a, duroxide.InstanceQuery{ParentID: id}), "no children of %q", id)
	}
}

func testSearchRejectsInvalidInput(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	for i := range 3 {
		createSearchInstance(t, p, searchInstance{id: fmt.Sprintf("bad-%d", i), name: "X", version: "1"})
	}
	a := admOf(t, p)
	first, err := a.SearchInstances(t.Context(), duroxide.InstanceQuery{Name: "X", PageSize: 1})
	require.NoError(t, err)
	require.NotEmpty(t, first.ContinuationToken)
	long := make([]byte, 1025)
	for i := range long {
		long[i] = 'x'
	}
	for _, tc := range []struct {
		what string
		q    duroxide.InstanceQuery
	}{
		{"garbage token", duroxide.InstanceQuery{ContinuationToken: "not a token"}},
		{"base64 of garbage", duroxide.InstanceQuery{ContinuationToken: "eyJ2Ijo5fQ"}},
		{"token of another search", duroxide.InstanceQuery{Name: "Y", PageSize: 1, ContinuationToken: first.ContinuationToken}},
		{"token of another order", duroxide.InstanceQuery{Name: "X", OrderBy: duroxide.OrderCreatedAsc, ContinuationToken: first.ContinuationToken}},
		{"negative page size", duroxide.InstanceQuery{PageSize: -1}},
		{"page size above the maximum", duroxide.InstanceQuery{PageSize: duroxide.MaxSearchPageSize + 1}},
		{"unknown state", duroxide.InstanceQuery{States: []duroxide.InstanceState{"Running"}}},
		{"unknown order", duroxide.InstanceQuery{OrderBy: duroxide.SearchOrder(9)}},
		{"invalid UTF-8 prefix", duroxide.InstanceQuery{IDPrefix: "\xff"}},
		{"invalid UTF-8 name", duroxide.InstanceQuery{Name: "a\xc3"}},
		{"overlong prefix", duroxide.InstanceQuery{IDPrefix: string(long)}},
	} {
		page, err := a.SearchInstances(t.Context(), tc.q)
		require.ErrorIs(t, err, duroxide.ErrInvalidInput, tc.what)
		require.Nil(t, page, tc.what)
	}
	// The same token with another page size resumes the search.
	next, err := a.SearchInstances(t.Context(), duroxide.InstanceQuery{Name: "X", PageSize: 5, ContinuationToken: first.ContinuationToken})
	require.NoError(t, err)
	require.Len(t, next.Instances, 2)
}

func testSearchEmptyStore(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	for _, o := range []duroxide.SearchOrder{duroxide.OrderCreatedDesc, duroxide.OrderAny} {
		page, err := admOf(t, p).SearchInstances(t.Context(), duroxide.InstanceQuery{OrderBy: o, CountTotal: true})
		require.NoError(t, err)
		require.Empty(t, page.Instances)
		require.Empty(t, page.ContinuationToken, "one page ends the search")
		require.NotNil(t, page.Count)
		require.Zero(t, *page.Count)
	}
}
