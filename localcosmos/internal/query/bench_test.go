package query

import (
	"fmt"
	"testing"
)

func benchDocs(n int) []map[string]any {
	docs := make([]map[string]any, n)
	for i := range docs {
		docs[i] = map[string]any{
			"id":         fmt.Sprintf("doc-%05d", i),
			"instanceId": fmt.Sprintf("inst-%d", i%50),
			"status":     []string{"open", "closed", "pending"}[i%3],
			"seq":        float64((i * 7919) % n),
			"payload":    map[string]any{"size": float64(i % 1000), "tags": []any{"a", "b"}},
		}
	}
	return docs
}

// BenchmarkExecuteWhereOrderBy runs a filtered, sorted query over 10,000
// documents, the size of a large test container.
func BenchmarkExecuteWhereOrderBy(b *testing.B) {
	docs := benchDocs(10000)
	q, err := Parse("SELECT c.id, c.seq FROM c WHERE c.status = @s AND c.payload.size >= 100 ORDER BY c.seq DESC")
	if err != nil {
		b.Fatal(err)
	}
	params := Params{"@s": "open"}
	if err := q.Validate(Options{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := q.Execute(docs, params, Options{})
		if err != nil || len(res) == 0 {
			b.Fatalf("%d results, %v", len(res), err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	const text = "SELECT TOP 10 c.id, c.seq FROM c WHERE c.instanceId = @i AND (c.status IN ('open', 'pending') OR NOT IS_DEFINED(c.status)) ORDER BY c.seq"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(text); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzParse checks that no query text makes the parser or the evaluator
// panic: every input either fails with *Error or runs.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM c", "SELECT VALUE COUNT(1) FROM c WHERE c.a = @a",
		"SELECT DISTINCT TOP 3 c.a, c['b'] AS b FROM c WHERE c.n BETWEEN 1 AND 2 ORDER BY c.a DESC",
		"SELECT c.pk, SUM(c.n) FROM c GROUP BY c.pk", "SELECT VALUE [1, {a: 'x\\u0041'}, -2.5e3]",
		"SELECT * FROM c WHERE c.s LIKE '[a-c]%' ESCAPE '!' OFFSET 1 LIMIT 2",
		"SELECT * FROM c JOIN t IN c.tags", "SELECT udf.f(1)", "SELECT ~1 << 3 >>> 1 ?? 2 ? 3 : 4",
	} {
		f.Add(s)
	}
	docs := []map[string]any{
		{"id": "a", "n": 1.0, "s": "abc", "arr": []any{1.0, "x"}, "o": map[string]any{"k": nil}},
		{"id": "b", "n": "2", "pk": "p"},
	}
	f.Fuzz(func(t *testing.T, text string) {
		q, err := Parse(text)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("non-*Error %T: %v", err, err)
			}
			return
		}
		_ = q.Validate(Options{CrossPartition: true})
		_ = q.Validate(Options{})
		_, _ = q.PartitionKeyFilter([]string{"/pk"}, Params{"@a": 1})
		if _, err := q.Execute(docs, Params{"@a": 1.0}, Options{}); err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("non-*Error %T: %v", err, err)
			}
		}
	})
}
