package localcosmos

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestIndexedQueriesMatchFullScan runs the same queries on two servers
// holding the same random documents, one reading through the type index
// and one scanning every document, and requires the same answers page by
// page (page sizes 1 to unlimited): items, continuation or not, status and
// session token. Both servers have three partition key ranges, and the
// documents change between rounds of queries.
func TestIndexedQueriesMatchFullScan(t *testing.T) {
	t.Parallel()
	testIndexedQueries(t, nil, []int{1, 2, 3, 7, 100, -1})
}

// TestIndexedQueriesMatchFullScanLagging is the same with lagging replicas
// (the same seed on both servers), so stale versions of documents — some
// of another type, some deleted since — are served. Each page may come
// from another replica, and a page that resumes inside a range then sees
// other documents around its position (with a full scan too, a document
// read in part can be returned again), so the comparison is of unlimited
// pages: each a whole partition key range as one replica set serves it.
func TestIndexedQueriesMatchFullScanLagging(t *testing.T) {
	t.Parallel()
	testIndexedQueries(t, &seededReplicas{versions: 4, window: time.Hour, seed: 7}, []int{-1})
}

func testIndexedQueries(t *testing.T, lag *seededReplicas, sizes []int) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 23))
	opts := func() *Options {
		o := &Options{PartitionKeyRanges: 3}
		if lag != nil {
			o.Replicas = lag.fresh()
		}
		return o
	}
	indexed, scan := newFixture(t, opts()), newFixture(t, opts())
	scan.s.st.fullScan = true
	// One clock for both, so that _ts and _etag agree.
	at := time.Now()
	for _, f := range []*fixture{indexed, scan} {
		f.s.SetClock(func() time.Time { return at })
	}

	types := []any{"orch_queue", "worker_queue", "history", "instance", 5.0, nil, []any{"history"}, "absent"}
	write := func() {
		for range 120 {
			id := "d" + strconv.Itoa(rng.IntN(150))
			inst := "i" + strconv.Itoa(rng.IntN(10))
			if rng.IntN(5) == 0 {
				for _, f := range []*fixture{indexed, scan} {
					_, _ = f.ct.DeleteItem(testCtx(t), pkOf(inst), id, nil)
				}
				continue
			}
			doc := map[string]any{"id": id, "instanceId": inst, "n": float64(rng.IntN(10))}
			if ty := types[rng.IntN(len(types))]; ty != "absent" {
				doc["type"] = ty
			}
			doc["sub"] = map[string]any{"type": types[rng.IntN(4)]}
			arr := make([]any, rng.IntN(4))
			for i := range arr {
				arr[i] = float64(rng.IntN(5))
			}
			doc["arr"] = arr
			body, _ := json.Marshal(doc)
			for _, f := range []*fixture{indexed, scan} {
				if _, err := f.ct.UpsertItem(testCtx(t), pkOf(inst), body, nil); err != nil {
					t.Fatalf("upsert: %v", err)
				}
			}
		}
	}
	type param struct {
		Name  string `json:"name"`
		Value any    `json:"value"`
	}
	type q struct {
		text   string
		params []param
		range0 bool // also run range-addressed (queries the gateway does not serve across partitions)
	}
	queries := []q{
		{text: "SELECT * FROM c WHERE c.type = 'history'"},
		{text: "SELECT c.id, c.n FROM c WHERE c.type = @t AND c.n < @n", params: []param{{"@t", "worker_queue"}, {"@n", 6}}},
		{text: "SELECT * FROM c WHERE (c.type = 'orch_queue' OR c.type = 'worker_queue') AND c.n >= 3"},
		{text: "SELECT VALUE c.id FROM c WHERE c.type = 'instance' OR c.type = 'nothing' OR 'instance' = c.type"},
		{text: "SELECT * FROM c WHERE c['type'] = 'history' AND IS_DEFINED(c.n)"},
		{text: "SELECT c.id, a FROM c JOIN a IN c.arr WHERE c.type = 'history'"},
		{text: "SELECT * FROM c WHERE c.sub.type = 'history'"},
		{text: "SELECT * FROM c.sub s WHERE s.type = 'history'"},
		{text: "SELECT VALUE r.id FROM root r WHERE r.type = 'history' AND r.n > 2"},
		{text: "SELECT * FROM c WHERE c.type = 5"},
		{text: "SELECT * FROM c WHERE c.type = @missing"},
		{text: "SELECT * FROM c WHERE c.type = @t", params: []param{{"@t", []string{"history"}}}},
		{text: "SELECT * FROM c WHERE c.type = 'history' AND c.type = 'instance'"},
		{text: "SELECT * FROM c WHERE c.type = 'history' OR c.n = 1"},
		{text: "SELECT TOP 7 c.id, c.n FROM c WHERE c.type = 'history' ORDER BY c.n", range0: true},
		{text: "SELECT DISTINCT VALUE c.n FROM c WHERE c.type = 'worker_queue' OR c.type = 'orch_queue'", range0: true},
		{text: "SELECT VALUE COUNT(1) FROM c WHERE c.type = 'history'", range0: true},
	}
	run := func(f *fixture, qq q, range0 bool, size int, cont string) (int, string, string, string) {
		body, _ := json.Marshal(map[string]any{"query": qq.text, "parameters": append([]param{}, qq.params...)})
		h := map[string]string{"x-ms-documentdb-query": "True", "Content-Type": "application/query+json",
			"x-ms-max-item-count": strconv.Itoa(size)}
		if range0 {
			h["x-ms-documentdb-partitionkeyrangeid"] = "0"
		} else {
			h["x-ms-documentdb-query-enablecrosspartition"] = "True"
		}
		if cont != "" {
			h["x-ms-continuation"] = cont
		}
		code, hdr, m := do(t, signedRequest(t, f.s, http.MethodPost, docsPath, body, h))
		items, _ := json.Marshal(m["Documents"])
		return code, string(items), hdr.Get("x-ms-continuation"), hdr.Get("x-ms-session-token")
	}
	for round := range 3 {
		write()
		for _, qq := range queries {
			for _, range0 := range []bool{false, true} {
				if range0 && !qq.range0 {
					continue
				}
				for _, size := range sizes {
					what := fmt.Sprintf("round %d, %q range0=%v size %d", round, qq.text, range0, size)
					ci, cs := "", ""
					for page := 0; ; page++ {
						if page > 2000 {
							t.Fatalf("%s: more than 2000 pages", what)
						}
						codeI, itemsI, nextI, tokI := run(indexed, qq, range0, size, ci)
						codeS, itemsS, nextS, tokS := run(scan, qq, range0, size, cs)
						if codeI != codeS || itemsI != itemsS || (nextI == "") != (nextS == "") || tokI != tokS {
							t.Fatalf("%s, page %d:\nindexed: %d %s next=%q session=%s\nscan:    %d %s next=%q session=%s",
								what, page, codeI, itemsI, nextI, tokI, codeS, itemsS, nextS, tokS)
						}
						if nextI == "" {
							break
						}
						ci, cs = nextI, nextS
					}
				}
			}
		}
	}
	// The index was used: a query pinned to one type reads only that
	// type's documents, so it is charged less than the full scan.
	charge := func(f *fixture) float32 {
		pager := f.ct.NewQueryItemsPager("SELECT * FROM c WHERE c.type = 'instance'", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: -1})
		resp, err := pager.NextPage(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		return resp.RequestCharge
	}
	if ci, cs := charge(indexed), charge(scan); ci >= cs {
		t.Errorf("request charge with the index %.2f, full scan %.2f: want less", ci, cs)
	}
}

// The partition key header's fast path reads exactly what the JSON
// decoder reads, and leaves everything else to it.
func TestPlainStringPKMatchesDecoder(t *testing.T) {
	t.Parallel()
	for _, h := range []string{`["a"]`, `[""]`, `["i-1/x y"]`, `["é"]`, `["a\"b"]`, `["a\\b"]`, `["\u00e9"]`,
		"[\"\x01\"]", "[\"\xff\"]", `["a","b"]`, `[ "a" ]`, `["a"`, `[1]`, `["a"] `} {
		s, ok := plainStringPK(h)
		if !ok {
			continue
		}
		var raw []any
		if err := decodeJSON([]byte(h), &raw); err != nil || len(raw) != 1 || raw[0] != s {
			t.Errorf("%q: fast path %q, decoder %v (%v)", h, s, raw, err)
		}
	}
	if _, ok := plainStringPK(`["plain-id"]`); !ok {
		t.Error(`["plain-id"] does not take the fast path`)
	}
}
