package query

import (
	"testing"
)

func TestCrossPartitionGatewayRefusals(t *testing.T) {
	refused := []string{
		"SELECT * FROM c ORDER BY c.id",
		"SELECT * FROM c ORDER BY c.id DESC",
		"SELECT TOP 5 * FROM c",
		"SELECT TOP @n * FROM c",
		"SELECT * FROM c OFFSET 0 LIMIT 10",
		"SELECT VALUE COUNT(1) FROM c",
		"SELECT COUNT(1) FROM c",
		"SELECT VALUE COUNT(1) FROM c WHERE c.pk = @pk AND c.n > 1 OR c.x = 2",
		"SELECT VALUE MIN(c.n) FROM c",
		"SELECT VALUE MAX(c.n) FROM c",
		"SELECT VALUE SUM(c.n) FROM c",
		"SELECT VALUE AVG(c.n) FROM c",
		"SELECT c.id, COUNT(1) AS n FROM c GROUP BY c.id",
		"SELECT VALUE COUNT(1) * 2 FROM c",
		"SELECT DISTINCT c.pk FROM c",
		"SELECT DISTINCT VALUE c.pk FROM c",
		"SELECT c.pk FROM c GROUP BY c.pk",
	}
	for _, text := range refused {
		t.Run(text, func(t *testing.T) {
			q, err := Parse(text)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			err = q.Validate(Options{CrossPartition: true})
			if err == nil {
				t.Fatal("want gateway refusal")
			}
			e := asQueryError(t, err)
			if e.SubStatus != 1004 || e.Message != GatewayCrossPartitionMessage {
				t.Fatalf("want 400/1004 gateway message, got %d: %s", e.SubStatus, e.Message)
			}
			// The same query is fine in a single partition.
			if err := q.Validate(Options{}); err != nil {
				t.Fatalf("single partition: %v", err)
			}
		})
	}
	allowed := []string{
		"SELECT * FROM c",
		"SELECT * FROM c WHERE c.status = 'open' AND ARRAY_CONTAINS(@ids, c.id)",
		"SELECT c.id, c.n * 2 AS double FROM c WHERE IS_DEFINED(c.x)",
		"SELECT VALUE c.id FROM c",
		"SELECT VALUE {id: c.id} FROM c WHERE c.n IN (1, 2)",
	}
	for _, text := range allowed {
		t.Run("allowed "+text, func(t *testing.T) {
			q, err := Parse(text)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if err := q.Validate(Options{CrossPartition: true}); err != nil {
				t.Fatalf("cross-partition simple query refused: %v", err)
			}
		})
	}
}

func TestCompositeIndexChecks(t *testing.T) {
	asc := func(p string) CompositePath { return CompositePath{Path: p, Order: "ascending"} }
	desc := func(p string) CompositePath { return CompositePath{Path: p, Order: "descending"} }
	policy := IndexPolicy{CompositeIndexes: [][]CompositePath{
		{asc("/name"), asc("/age")},
		{asc("/instanceId"), desc("/seq")},
		{asc("/a"), asc("/b"), asc("/c")},
		{{Path: "/x"}, {Path: "/y", Order: "Descending"}}, // empty order = ascending; order is case-insensitive
		{asc("/address/city"), asc("/ts")},
	}}
	cases := []struct {
		query string
		ok    bool
	}{
		{"SELECT * FROM c ORDER BY c.name ASC, c.age ASC", true},
		{"SELECT * FROM c ORDER BY c.name, c.age", true},
		{"SELECT * FROM c ORDER BY c.name DESC, c.age DESC", true}, // all reversed
		{"SELECT * FROM c ORDER BY c.name ASC, c.age DESC", false}, // mixed
		{"SELECT * FROM c ORDER BY c.age ASC, c.name ASC", false},  // wrong sequence
		{"SELECT * FROM c ORDER BY c.instanceId ASC, c.seq DESC", true},
		{"SELECT * FROM c ORDER BY c.instanceId DESC, c.seq ASC", true},
		{"SELECT * FROM c ORDER BY c.instanceId, c.seq", false},
		{"SELECT * FROM c ORDER BY c.a, c.b, c.c", true},
		{"SELECT * FROM c ORDER BY c.a, c.b", false}, // prefix of a longer composite does not serve
		{"SELECT * FROM c ORDER BY c.x, c.y DESC", true},
		{"SELECT * FROM c ORDER BY c.x DESC, c.y", true},
		{"SELECT * FROM c ORDER BY c.address.city, c.ts", true},
		{"SELECT * FROM c ORDER BY c['address']['city'], c.ts", true},
		{"SELECT * FROM c ORDER BY c.name, c.nope", false},
		{"SELECT * FROM c ORDER BY c.name", true}, // single field: range index, no composite needed
		{"SELECT * FROM c ORDER BY c.unlisted DESC", true},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			q, err := Parse(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			err = q.Validate(Options{Index: policy})
			if tc.ok {
				if err != nil {
					t.Fatalf("want ok, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("want composite-index refusal")
			}
			e := asQueryError(t, err)
			if e.Detail() != "The order by query does not have a corresponding composite index that it can be served from." {
				t.Fatalf("wrong message: %s", e.Message)
			}
			if e.SubStatus != 0 {
				t.Fatalf("substatus %d", e.SubStatus)
			}
		})
	}
	t.Run("no composite indexes at all", func(t *testing.T) {
		q, _ := Parse("SELECT * FROM c ORDER BY c.a, c.b DESC")
		if err := q.Validate(Options{}); err == nil {
			t.Fatal("want refusal")
		}
	})
	t.Run("gateway refusal wins over missing composite index", func(t *testing.T) {
		q, _ := Parse("SELECT * FROM c ORDER BY c.a, c.b DESC")
		e := asQueryError(t, q.Validate(Options{CrossPartition: true}))
		if e.SubStatus != 1004 {
			t.Fatalf("want 1004, got %v", e)
		}
	})
}

func TestOrderByPathChecks(t *testing.T) {
	cases := []struct {
		name   string
		query  string
		policy IndexPolicy
		want   string // "" = ok
	}{
		{"computed expression", "SELECT * FROM c ORDER BY LOWER(c.name)", IndexPolicy{},
			"Unsupported ORDER BY clause. ORDER BY item expression could not be mapped to a document path."},
		{"arithmetic", "SELECT * FROM c ORDER BY c.a + 1", IndexPolicy{},
			"Unsupported ORDER BY clause. ORDER BY item expression could not be mapped to a document path."},
		{"the alias itself", "SELECT * FROM c ORDER BY c", IndexPolicy{},
			"Unsupported ORDER BY clause. ORDER BY item expression could not be mapped to a document path."},
		{"excluded exact path", "SELECT * FROM c ORDER BY c.secret", IndexPolicy{IncludedPaths: []string{"/*"}, ExcludedPaths: []string{"/secret/?"}},
			"The index path corresponding to the specified order-by item is excluded."},
		{"excluded subtree", "SELECT * FROM c ORDER BY c.payload.size", IndexPolicy{IncludedPaths: []string{"/*"}, ExcludedPaths: []string{"/payload/*"}},
			"The index path corresponding to the specified order-by item is excluded."},
		{"everything excluded, one included", "SELECT * FROM c ORDER BY c.other", IndexPolicy{IncludedPaths: []string{"/ts/?"}, ExcludedPaths: []string{"/*"}},
			"The index path corresponding to the specified order-by item is excluded."},
		{"everything excluded, sort path included", "SELECT * FROM c ORDER BY c.ts", IndexPolicy{IncludedPaths: []string{"/ts/?"}, ExcludedPaths: []string{"/*"}}, ""},
		{"only excluded paths given", "SELECT * FROM c ORDER BY c.a", IndexPolicy{ExcludedPaths: []string{"/b/*"}}, ""},
		{"quoted _etag excluded", "SELECT * FROM c ORDER BY c._etag", IndexPolicy{IncludedPaths: []string{"/*"}, ExcludedPaths: []string{"/\"_etag\"/?"}},
			"The index path corresponding to the specified order-by item is excluded."},
		{"_ts still indexed next to _etag exclusion", "SELECT * FROM c ORDER BY c._ts", IndexPolicy{IncludedPaths: []string{"/*"}, ExcludedPaths: []string{"/\"_etag\"/?"}}, ""},
		{"more specific include beats broader exclude", "SELECT * FROM c ORDER BY c.payload.size", IndexPolicy{IncludedPaths: []string{"/*", "/payload/size/?"}, ExcludedPaths: []string{"/payload/*"}}, ""},
		{"default policy", "SELECT * FROM c ORDER BY c.anything.deep", IndexPolicy{}, ""},
		{"composite serves even excluded paths", "SELECT * FROM c ORDER BY c.a, c.b", IndexPolicy{ExcludedPaths: []string{"/*"},
			CompositeIndexes: [][]CompositePath{{{Path: "/a"}, {Path: "/b"}}}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, err := Parse(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			err = q.Validate(Options{Index: tc.policy})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("want ok, got %v", err)
				}
				return
			}
			e := asQueryError(t, err)
			if e.Detail() != tc.want {
				t.Fatalf("got %q, want %q", e.Detail(), tc.want)
			}
		})
	}
	t.Run("unmappable ORDER BY is reported before the gateway refusal", func(t *testing.T) {
		q, _ := Parse("SELECT * FROM c ORDER BY LOWER(c.name)")
		e := asQueryError(t, q.Validate(Options{CrossPartition: true}))
		if e.SubStatus == 1004 {
			t.Fatal("query-plan error should come first")
		}
	})
}

func TestPartitionKeyFilter(t *testing.T) {
	cases := []struct {
		query  string
		paths  []string
		params Params
		want   string // JSON of values, "" = not pinned
	}{
		{"SELECT * FROM c WHERE c.pk = 'p1'", []string{"/pk"}, nil, `["p1"]`},
		{"SELECT * FROM c WHERE 'p1' = c.pk AND c.n > 1", []string{"/pk"}, nil, `["p1"]`},
		{"SELECT * FROM c WHERE c.n > 1 AND (c.pk = @pk)", []string{"/pk"}, Params{"@pk": "x"}, `["x"]`},
		{"SELECT * FROM c WHERE c.pk = @pk", []string{"/pk"}, nil, ""},
		{"SELECT * FROM c WHERE c.pk = 'a' OR c.pk = 'b'", []string{"/pk"}, nil, ""},
		{"SELECT * FROM c WHERE c.pk IN ('a')", []string{"/pk"}, nil, ""},
		{"SELECT * FROM c WHERE c.pk != 'a'", []string{"/pk"}, nil, ""},
		{"SELECT * FROM c", []string{"/pk"}, nil, ""},
		{"SELECT * FROM c WHERE c.pk = 'a' AND c.pk = 'b'", []string{"/pk"}, nil, ""},
		{"SELECT * FROM c WHERE c.tenant.id = 5 AND c.user = 'u'", []string{"/tenant/id", "/user"}, nil, `[5,"u"]`},
		{"SELECT * FROM c WHERE c.tenant.id = 5", []string{"/tenant/id", "/user"}, nil, ""},
		{"SELECT * FROM r WHERE r[\"pk\"] = 1", []string{"/pk"}, nil, `[1]`},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			q, err := Parse(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := q.PartitionKeyFilter(tc.paths, tc.params)
			if tc.want == "" {
				if ok {
					t.Fatalf("want not pinned, got %v", got)
				}
				return
			}
			if !ok || !jsonEqual(t, got, tc.want) {
				t.Fatalf("got %v %v, want %s", got, ok, tc.want)
			}
		})
	}
}
