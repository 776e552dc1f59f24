package localcosmos

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// allPages runs a query to the end and returns every item and the page sizes.
func allPages(t testing.TB, ct *azcosmos.ContainerClient, q string, pk azcosmos.PartitionKey, o *azcosmos.QueryOptions) ([]map[string]any, []int) {
	t.Helper()
	var items []map[string]any
	var sizes []int
	pager := ct.NewQueryItemsPager(q, pk, o)
	for pager.More() {
		page, err := pager.NextPage(testCtx(t))
		wantOK(t, err, "query "+q)
		sizes = append(sizes, len(page.Items))
		for _, it := range page.Items {
			var v map[string]any
			if err := json.Unmarshal(it, &v); err != nil {
				var x any
				_ = json.Unmarshal(it, &x)
				v = map[string]any{"value": x}
			}
			items = append(items, v)
		}
	}
	return items, sizes
}

func TestQueryScopes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for i := 0; i < 5; i++ {
		f.create(t, fmt.Sprint("a", i), "i1", "kind", "k", "seq", i)
		f.create(t, fmt.Sprint("b", i), "i2", "kind", "k", "seq", i)
	}
	// Partition-scoped queries see one partition, and may ORDER BY, TOP, COUNT.
	items, _ := allPages(t, f.ct, "SELECT * FROM c WHERE c.seq >= @min", pkOf("i1"), &azcosmos.QueryOptions{
		QueryParameters: []azcosmos.QueryParameter{{Name: "@min", Value: 2}}})
	if len(items) != 3 {
		t.Fatalf("partition query: %d items", len(items))
	}
	items, _ = allPages(t, f.ct, "SELECT TOP 2 c.id FROM c ORDER BY c.seq DESC", pkOf("i2"), nil)
	if len(items) != 2 || items[0]["id"] != "b4" || items[1]["id"] != "b3" {
		t.Fatalf("ORDER BY DESC: %v", items)
	}
	items, _ = allPages(t, f.ct, "SELECT VALUE COUNT(1) FROM c", pkOf("i2"), nil)
	if items[0]["value"] != float64(5) {
		t.Fatalf("COUNT: %v", items)
	}
	items, _ = allPages(t, f.ct, "SELECT c.id FROM c ORDER BY c.kind, c.seq", pkOf("i2"), nil)
	if len(items) != 5 {
		t.Fatalf("composite ORDER BY: %v", items)
	}

	// Cross-partition: filters work, the rest is refused like the gateway.
	items, _ = allPages(t, f.ct, "SELECT c.id FROM c WHERE c.seq = 1", azcosmos.NewPartitionKey(), nil)
	if len(items) != 2 {
		t.Fatalf("cross-partition filter: %v", items)
	}
	for _, q := range []string{
		"SELECT * FROM c ORDER BY c.seq",
		"SELECT TOP 1 * FROM c",
		"SELECT VALUE COUNT(1) FROM c",
		"SELECT DISTINCT c.kind FROM c",
		"SELECT * FROM c OFFSET 1 LIMIT 1",
	} {
		pager := f.ct.NewQueryItemsPager(q, azcosmos.NewPartitionKey(), nil)
		_, err := pager.NextPage(testCtx(t))
		wantStatus(t, err, http.StatusBadRequest, q)
		if substatus(err) != "1004" {
			t.Fatalf("%s: substatus %q", q, substatus(err))
		}
	}
	// A filter on the partition key routes to one partition.
	items, _ = allPages(t, f.ct, "SELECT VALUE COUNT(1) FROM c WHERE c.instanceId = 'i1'", azcosmos.NewPartitionKey(), nil)
	if items[0]["value"] != float64(5) {
		t.Fatalf("routed COUNT: %v", items)
	}
	// Cross-partition disabled.
	no := false
	pager := f.ct.NewQueryItemsPager("SELECT * FROM c", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{EnableCrossPartitionQuery: &no})
	_, err := pager.NextPage(testCtx(t))
	wantStatus(t, err, http.StatusBadRequest, "cross-partition query disabled")

	// Query errors are 400 with the service's body.
	pager = f.ct.NewQueryItemsPager("SELEC * FROM c", pkOf("i1"), nil)
	_, err = pager.NextPage(testCtx(t))
	wantStatus(t, err, http.StatusBadRequest, "syntax error")
	pager = f.ct.NewQueryItemsPager("SELECT * FROM c ORDER BY c.kind, c.id", pkOf("i1"), nil)
	_, err = pager.NextPage(testCtx(t))
	wantStatus(t, err, http.StatusBadRequest, "ORDER BY without composite index")
}

func TestQueryPaging(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for i := 0; i < 20; i++ {
		f.create(t, fmt.Sprintf("d%02d", i), fmt.Sprint("i", i%3), "seq", i)
	}
	for _, tc := range []struct {
		name string
		pk   azcosmos.PartitionKey
		q    string
		want int
	}{
		{"cross-partition", azcosmos.NewPartitionKey(), "SELECT * FROM c", 20},
		{"partition", pkOf("i0"), "SELECT * FROM c", 7},
		{"partition-order-by", pkOf("i0"), "SELECT * FROM c ORDER BY c.seq DESC", 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items, sizes := allPages(t, f.ct, tc.q, tc.pk, &azcosmos.QueryOptions{PageSizeHint: 3})
			if len(items) != tc.want {
				t.Fatalf("%d items, want %d (pages %v)", len(items), tc.want, sizes)
			}
			if want := (tc.want + 2) / 3; len(sizes) != want {
				t.Fatalf("pages %v, want %d pages", sizes, want)
			}
			seen := map[string]bool{}
			for _, it := range items {
				id := it["id"].(string)
				if seen[id] {
					t.Fatalf("duplicate %s", id)
				}
				seen[id] = true
			}
		})
	}

	// Header values: -1 = as many as fit, default 100.
	_, sizes := allPages(t, f.ct, "SELECT * FROM c", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: -1})
	if len(sizes) != 1 || sizes[0] != 20 {
		t.Fatalf("PageSizeHint -1: pages %v", sizes)
	}

	// A token resumes in a new pager.
	pager := f.ct.NewQueryItemsPager("SELECT * FROM c ORDER BY c.seq", pkOf("i1"), &azcosmos.QueryOptions{PageSizeHint: 2})
	first, err := pager.NextPage(testCtx(t))
	wantOK(t, err, "first page")
	if first.ContinuationToken == nil {
		t.Fatal("no continuation token")
	}
	items, _ := allPages(t, f.ct, "SELECT * FROM c ORDER BY c.seq", pkOf("i1"), &azcosmos.QueryOptions{PageSizeHint: 2, ContinuationToken: first.ContinuationToken})
	if len(items) != 5 || items[0]["id"] != "d07" {
		t.Fatalf("resumed: %v", items)
	}
	// A token from another query is refused.
	pager = f.ct.NewQueryItemsPager("SELECT * FROM c", pkOf("i1"), &azcosmos.QueryOptions{ContinuationToken: first.ContinuationToken})
	_, err = pager.NextPage(testCtx(t))
	wantStatus(t, err, http.StatusBadRequest, "foreign continuation")
	bad := "garbage"
	pager = f.ct.NewQueryItemsPager("SELECT * FROM c", pkOf("i1"), &azcosmos.QueryOptions{ContinuationToken: &bad})
	_, err = pager.NextPage(testCtx(t))
	wantStatus(t, err, http.StatusBadRequest, "garbage continuation")
}

// Documents written between pages of a streaming query are neither
// duplicated nor cause existing ones to be skipped.
func TestQueryPagingWithConcurrentInserts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for i := 0; i < 10; i++ {
		f.create(t, fmt.Sprintf("d%02d", i), fmt.Sprint("i", i%2))
	}
	pager := f.ct.NewQueryItemsPager("SELECT c.id FROM c", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: 3})
	seen := map[string]int{}
	n := 0
	for pager.More() {
		page, err := pager.NextPage(testCtx(t))
		wantOK(t, err, "page")
		for _, it := range page.Items {
			seen[decode(t, it)["id"].(string)]++
		}
		// Insert into both partitions and delete one not yet read.
		f.create(t, fmt.Sprintf("new%02d", n), fmt.Sprint("i", n%2))
		n++
		if n == 1 {
			_, err := f.ct.DeleteItem(testCtx(t), pkOf("i1"), "d09", nil)
			wantOK(t, err, "delete")
		}
	}
	for i := 0; i < 9; i++ {
		if id := fmt.Sprintf("d%02d", i); seen[id] != 1 {
			t.Errorf("%s seen %d times", id, seen[id])
		}
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("%s seen %d times", id, c)
		}
	}
	if seen["d09"] != 0 {
		t.Error("deleted document returned")
	}
}

// Iterating an array (FROM t IN c.tags) yields several results per
// document; a page boundary inside a document resumes where it stopped.
func TestQueryPagingInsideDocument(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.create(t, "a", "i1", "tags", []any{"t1", "t2", "t3", "t4", "t5"})
	f.create(t, "b", "i2", "tags", []any{"u1", "u2"})
	items, sizes := allPages(t, f.ct, "SELECT VALUE t FROM t IN c.tags", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: 2})
	var got []string
	for _, it := range items {
		got = append(got, it["value"].(string))
	}
	if strings.Join(got, ",") != "t1,t2,t3,t4,t5,u1,u2" {
		t.Fatalf("JOIN pages %v: %v", sizes, got)
	}
}

func TestQueryResponseShape(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.create(t, "a", "i1")
	body := []byte(`{"query":"SELECT * FROM c WHERE c.id = @id","parameters":[{"name":"@id","value":"a"}]}`)
	req := signedRequest(t, f.s, http.MethodPost, docsPath, body, map[string]string{
		"x-ms-documentdb-query": "True", "Content-Type": "application/query+json", "x-ms-documentdb-partitionkey": `["i1"]`})
	st, h, res := do(t, req)
	if st != http.StatusOK || res["_count"] != float64(1) || res["_rid"] == "" || h.Get("x-ms-item-count") != "1" {
		t.Fatalf("query response: %d %v %v", st, h, res)
	}
	docs := res["Documents"].([]any)
	if docs[0].(map[string]any)["id"] != "a" {
		t.Fatalf("documents: %v", docs)
	}
	// application/json is not a query.
	req = signedRequest(t, f.s, http.MethodPost, docsPath, body, map[string]string{
		"x-ms-documentdb-query": "True", "x-ms-documentdb-partitionkey": `["i1"]`})
	if st, _, _ := do(t, req); st != http.StatusBadRequest {
		t.Fatalf("query with application/json: %d", st)
	}
}

func TestQueryResourcesAndReadMany(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testCtx(t)
	pager := f.c.NewQueryDatabasesPager("SELECT * FROM c", nil)
	page, err := pager.NextPage(ctx)
	wantOK(t, err, "query databases")
	if len(page.Databases) != 1 || page.Databases[0].ID != testDB {
		t.Fatalf("databases: %+v", page.Databases)
	}
	cp := f.db.NewQueryContainersPager("SELECT * FROM c WHERE c.id = @id", &azcosmos.QueryContainersOptions{
		QueryParameters: []azcosmos.QueryParameter{{Name: "@id", Value: testColl}}})
	cpage, err := cp.NextPage(ctx)
	wantOK(t, err, "query containers")
	if len(cpage.Containers) != 1 || cpage.Containers[0].ID != testColl {
		t.Fatalf("containers: %+v", cpage.Containers)
	}

	// ReadManyItems reads the partition key ranges, then queries by range.
	for i := 0; i < 4; i++ {
		f.create(t, fmt.Sprint("m", i), fmt.Sprint("i", i))
	}
	rm, err := f.ct.ReadManyItems(ctx, []azcosmos.ItemIdentity{
		{ID: "m0", PartitionKey: pkOf("i0")}, {ID: "m2", PartitionKey: pkOf("i2")}, {ID: "m3", PartitionKey: pkOf("i0")},
	}, nil)
	wantOK(t, err, "read many")
	var ids []string
	for _, it := range rm.Items {
		ids = append(ids, decode(t, it)["id"].(string))
	}
	sort.Strings(ids)
	if strings.Join(ids, ",") != "m0,m2" {
		t.Fatalf("read many: %v", ids)
	}
}
