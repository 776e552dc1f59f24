package cosmostest_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/internal/testbackend"
)

// testPaging: PageSizeHint and continuation tokens, in one partition and
// across partitions.
func testPaging(t *testing.T, b testbackend.Backend) {
	c := b.NewContainer(t, azcosmos.ContainerProperties{})
	var want []string
	for i := range 20 {
		id := fmt.Sprintf("pg%02d", i)
		want = append(want, id)
		// n runs against the ids' order so ORDER BY results differ from
		// insertion order.
		create(t, c, doc{"id": id, "pk": "pg", "n": 100 - i, "kind": "x"})
	}
	for p := range 3 {
		for i := range 7 {
			create(t, c, doc{"id": fmt.Sprintf("xp%d-%d", p, i), "pk": fmt.Sprint("xp", p), "kind": "x"})
		}
	}

	t.Run("page-size", func(t *testing.T) {
		got, _ := pagedIDs(t, c, "SELECT * FROM c", pk("pg"), 3, nil, -1)
		checkPaged(t, got, want)
	})

	t.Run("page-size-order-by", func(t *testing.T) {
		got, _ := pagedIDs(t, c, "SELECT * FROM c ORDER BY c.n", pk("pg"), 3, nil, -1)
		reversed := slices.Clone(want)
		slices.Reverse(reversed)
		wantJSON(t, got, reversed, "ORDER BY c.n across pages")
	})

	for _, q := range []string{"SELECT * FROM c", "SELECT * FROM c ORDER BY c.n DESC"} {
		t.Run("resume/"+q, func(t *testing.T) {
			first := c.NewQueryItemsPager(q, pk("pg"), &azcosmos.QueryOptions{PageSizeHint: 4})
			page, err := first.NextPage(ctx(t))
			noErr(t, err, "first page")
			if len(page.Items) == 0 || len(page.Items) > 4 || page.ContinuationToken == nil {
				t.Fatalf("first page: %d items, token %v; want 1..4 items and a token", len(page.Items), page.ContinuationToken)
			}
			head := idsInOrder(t, page.Items)
			rest, _ := pagedIDs(t, c, q, pk("pg"), 4, page.ContinuationToken, -1)
			all := append(head, rest...)
			if q == "SELECT * FROM c" {
				slices.Sort(all)
			}
			wantJSON(t, all, want, "first page plus resumed pages")
		})
	}

	t.Run("default-page-size", func(t *testing.T) {
		// Without PageSizeHint the service pages at its default (100 items);
		// the pager must still deliver every item exactly once.
		var big []string
		for i := range 130 {
			id := fmt.Sprintf("dp%03d", i)
			big = append(big, id)
			create(t, c, doc{"id": id, "pk": "dp"})
		}
		pager := c.NewQueryItemsPager("SELECT c.id FROM c", pk("dp"), nil)
		var got []string
		var sizes []int
		for pager.More() {
			page, err := pager.NextPage(ctx(t))
			noErr(t, err, "page")
			sizes = append(sizes, len(page.Items))
			got = append(got, idsInOrder(t, page.Items)...)
		}
		t.Logf("page sizes without PageSizeHint: %v", sizes)
		checkPaged(t, got, big)
	})

	t.Run("cross-partition", func(t *testing.T) {
		got, _ := pagedIDs(t, c, "SELECT * FROM c WHERE c.kind = 'x' AND STARTSWITH(c.id, 'xp')", azcosmos.NewPartitionKey(), 4, nil, -1)
		checkPaged(t, got, allXP())
	})

	t.Run("cross-partition-resume", func(t *testing.T) {
		q := "SELECT c.id FROM c WHERE c.kind = 'x'"
		head, token := pagedIDs(t, c, q, azcosmos.NewPartitionKey(), 5, nil, 2)
		if token == nil {
			t.Fatal("no continuation token after two pages")
		}
		rest, _ := pagedIDs(t, c, q, azcosmos.NewPartitionKey(), 5, token, -1)
		checkPaged(t, append(head, rest...), append(slices.Clone(want), allXP()...))
	})

	// With several physical partitions the gateway serves a cross-partition
	// query one partition key range per page, and a range with no results
	// is an empty page that still carries a continuation: a client must
	// page until the continuation ends, not until a short or empty page.
	t.Run("cross-partition-empty-pages", func(t *testing.T) {
		b.Skip(t, testbackend.GapPartitionKeyRanges)
		q := "SELECT c.id FROM c WHERE STARTSWITH(c.id, 'xp')"
		pager := c.NewQueryItemsPager(q, azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: 100})
		var got []string
		var emptyToken *string
		pages := 0
		for pager.More() {
			page, err := pager.NextPage(ctx(t))
			noErr(t, err, "page")
			pages++
			if len(page.Items) == 0 && page.ContinuationToken != nil && emptyToken == nil {
				emptyToken = page.ContinuationToken
				// Whatever the earlier pages missed comes after the
				// empty page.
				rest, _ := pagedIDs(t, c, q, azcosmos.NewPartitionKey(), 100, emptyToken, -1)
				checkPaged(t, append(slices.Clone(got), rest...), allXP())
			}
			got = append(got, idsInOrder(t, page.Items)...)
		}
		checkPaged(t, got, allXP())
		if emptyToken == nil {
			t.Fatalf("%d pages for 3 logical partitions, none of them empty with a continuation", pages)
		}
		if pages < 2 {
			t.Fatalf("%d page for items of several ranges, want one page per range", pages)
		}
	})
}

// pagedIDs runs q with the page size hint, from the continuation token if
// given, for at most maxPages pages (-1: all), and returns the ids in the
// order received and the last continuation token. Every page must respect
// the hint.
func pagedIDs(t *testing.T, c *azcosmos.ContainerClient, q string, p azcosmos.PartitionKey, size int32, token *string, maxPages int) ([]string, *string) {
	t.Helper()
	pager := c.NewQueryItemsPager(q, p, &azcosmos.QueryOptions{PageSizeHint: size, ContinuationToken: token})
	var out []string
	for pages := 0; pager.More() && pages != maxPages; pages++ {
		page, err := pager.NextPage(ctx(t))
		noErr(t, err, "page")
		if len(page.Items) > int(size) {
			t.Fatalf("page %d: %d items, more than PageSizeHint %d", pages, len(page.Items), size)
		}
		out = append(out, idsInOrder(t, page.Items)...)
		token = page.ContinuationToken
		if pages > 1000 {
			t.Fatal("more than 1000 pages")
		}
	}
	return out, token
}

// checkPaged fails t unless got holds exactly the ids in want, once each.
func checkPaged(t *testing.T, got, want []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("id %s returned twice: %v", id, got)
		}
		seen[id] = true
	}
	sorted := slices.Sorted(slices.Values(got))
	w := slices.Sorted(slices.Values(want))
	wantJSON(t, sorted, w, "paged ids")
}

func idsInOrder(t *testing.T, items [][]byte) []string {
	t.Helper()
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, mustDoc(t, it)["id"].(string))
	}
	return out
}

func allXP() []string {
	var out []string
	for p := range 3 {
		for i := range 7 {
			out = append(out, fmt.Sprintf("xp%d-%d", p, i))
		}
	}
	return out
}

// testCrossPartition: what the gateway serves without a partition key, and
// what it refuses because azcosmos 1.5.0 has no client-side query engine.
func testCrossPartition(t *testing.T, b testbackend.Backend) {
	c := b.NewContainer(t, azcosmos.ContainerProperties{})
	for p := range 3 {
		for i := range 3 {
			create(t, c, doc{"id": fmt.Sprintf("x%d-%d", p, i), "pk": fmt.Sprint("p", p), "n": i, "label": "ORDER BY"})
		}
	}
	all := azcosmos.NewPartitionKey()

	t.Run("filter", func(t *testing.T) {
		got := ids(t, queryAll(t, c, "SELECT * FROM c WHERE c.n >= 1", all, nil))
		wantJSON(t, got, []string{"x0-1", "x0-2", "x1-1", "x1-2", "x2-1", "x2-2"}, "cross-partition filter")
	})
	t.Run("projection", func(t *testing.T) {
		got := values(t, queryAll(t, c, "SELECT c.id, c.pk FROM c WHERE c.n = 0", all, nil))
		if len(got) != 3 {
			t.Fatalf("got %v", got)
		}
		for _, v := range got {
			if m := v.(map[string]any); len(m) != 2 || m["pk"] == nil {
				t.Fatalf("projection: got %v", v)
			}
		}
	})
	t.Run("value-with-params", func(t *testing.T) {
		got := values(t, queryAll(t, c, "SELECT VALUE c.id FROM c WHERE c.pk IN (@a, @b) AND c.n = 2", all,
			&azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@a", Value: "p0"}, {Name: "@b", Value: "p2"}}}))
		slices.SortFunc(got, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
		wantJSON(t, got, []string{"x0-2", "x2-2"}, "cross-partition VALUE with parameters")
	})
	t.Run("keywords-in-literals", func(t *testing.T) {
		got := ids(t, queryAll(t, c, `SELECT * FROM c WHERE c["label"] = 'ORDER BY' AND c.n = 1`, all, nil))
		wantJSON(t, got, []string{"x0-1", "x1-1", "x2-1"}, "keywords inside string literals")
	})

	// A query without a partition key whose WHERE clause pins one partition
	// runs in that partition, so the gateway serves it in full (azcosmos
	// NewQueryItemsPager documentation).
	t.Run("pinned-by-filter", func(t *testing.T) {
		got := values(t, queryAll(t, c, "SELECT VALUE c.id FROM c WHERE c.pk = 'p1' ORDER BY c.n DESC", all, nil))
		wantJSON(t, got, []string{"x1-2", "x1-1", "x1-0"}, "ORDER BY in a partition pinned by the filter")
		n := values(t, queryAll(t, c, "SELECT VALUE COUNT(1) FROM c WHERE c.n >= 1 AND c.pk = @p", all,
			&azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@p", Value: "p2"}}}))
		wantJSON(t, n, []int{2}, "COUNT in a partition pinned by the filter")
	})

	for _, tc := range []struct{ name, query string }{
		{"order-by", "SELECT * FROM c ORDER BY c.n"},
		{"top", "SELECT TOP 2 * FROM c"},
		{"offset-limit", "SELECT * FROM c OFFSET 1 LIMIT 2"},
		{"count", "SELECT VALUE COUNT(1) FROM c"},
		{"sum", "SELECT VALUE SUM(c.n) FROM c"},
		{"min", "SELECT VALUE MIN(c.n) FROM c"},
		{"max", "SELECT VALUE MAX(c.n) FROM c"},
		{"avg", "SELECT VALUE AVG(c.n) FROM c"},
		{"distinct", "SELECT DISTINCT VALUE c.pk FROM c"},
		{"group-by", "SELECT c.pk, COUNT(1) AS n FROM c GROUP BY c.pk"},
	} {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			_, err := tryQueryAll(t, c, tc.query, all, nil)
			wantStatus(t, err, sBad, "cross-partition "+tc.query)
			if sub := substatusOf(err); sub != "1004" {
				t.Fatalf("cross-partition %s: substatus %q, want 1004 (CrossPartitionQueryNotServable)", tc.query, sub)
			}
		})
	}
}
