package cosmostest_test

// The conformance suite: one set of expectations, written against azcosmos
// only, run against every backend testbackend.All selects. It pins down the
// Cosmos DB behaviour the provider relies on, so that cosmostest can never
// be kinder than the real service without a test failing. See
// conformance_*_test.go for the areas.
//
// Run on the fake only:                go test ./cosmostest -run TestConformance
// Also on @vercel/cosmosdb-server:     CDB_VERCEL_ENDPOINT=http://127.0.0.1:PORT/ go test ...
// Also on a real account or emulator:  COSMOS_ENDPOINT=... COSMOS_KEY=... go test ...

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/internal/sdkfixture"
	"github.com/duroxide-go/cdb/internal/testbackend"
)

// conformanceTimeout bounds each request a case makes, so that a backend
// that never answers fails the case instead of hanging until go test's
// own timeout.
const conformanceTimeout = time.Minute

// area is one group of conformance cases.
type area struct {
	name string
	run  func(t *testing.T, b testbackend.Backend)
}

// areas lists every conformance area, in the order they run.
var areas = []area{
	{"resources", testResources},
	{"items", testItems},
	{"ids", testIDs},
	{"limits", testLimits},
	{"patch", testPatch},
	{"batch", testBatch},
	{"query", testQuery},
	{"paging", testPaging},
	{"crosspartition", testCrossPartition},
	{"concurrency", testConcurrency},
	{"auth", testAuth},
}

// TestConformance runs every area as TestConformance/<backend>/<area>/<case>.
// Backends run in parallel with each other; areas run in parallel within a
// backend, each in its own database.
func TestConformance(t *testing.T) {
	for _, b := range testbackend.All(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			for _, a := range areas {
				t.Run(a.name, func(t *testing.T) {
					t.Parallel()
					a.run(t, b)
				})
			}
		})
	}
}

// ctx returns a context for one request, bounded by conformanceTimeout and
// canceled when the test ends.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), conformanceTimeout)
	t.Cleanup(cancel)
	return c
}

// doc is an item as the tests write and read it.
type doc = map[string]any

// pk is shorthand for a string partition key.
func pk(v string) azcosmos.PartitionKey { return azcosmos.NewPartitionKeyString(v) }

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return b
}

func mustDoc(t *testing.T, b []byte) doc {
	t.Helper()
	var d doc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("unmarshal %q: %v", truncate(b), err)
	}
	return d
}

// truncate shortens long values (ids, bodies) in failure messages.
func truncate(b []byte) string {
	if len(b) > 80 {
		return fmt.Sprintf("%s...(%d bytes)", b[:80], len(b))
	}
	return string(b)
}

// statusOf and substatusOf are the HTTP status and x-ms-substatus of an
// SDK error (internal/sdkfixture, which the servers' own tests share).
var (
	statusOf    = sdkfixture.Status
	substatusOf = sdkfixture.Substatus
)

// wantStatus fails t unless err carries the HTTP status want.
func wantStatus(t *testing.T, err error, want int, what string) {
	t.Helper()
	if got := statusOf(err); got != want {
		t.Fatalf("%s: got status %d (err %v), want %d", what, got, err, want)
	}
}

// noErr fails t on any error.
func noErr(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// withContent returns item options that ask for the written item back.
func withContent() *azcosmos.ItemOptions {
	return &azcosmos.ItemOptions{EnableContentResponseOnWrite: true}
}

// ifMatch returns item options with an If-Match condition (and, explicitly,
// no content on write: see sdk-and-peers.md §1.3).
func ifMatch(e azcore.ETag) *azcosmos.ItemOptions {
	return &azcosmos.ItemOptions{IfMatchEtag: &e, EnableContentResponseOnWrite: false}
}

// create writes d into c under partition d["pk"] and returns the ETag.
func create(t *testing.T, c *azcosmos.ContainerClient, d doc) azcore.ETag {
	t.Helper()
	id := truncate([]byte(fmt.Sprint(d["id"])))
	r, err := c.CreateItem(ctx(t), pk(d["pk"].(string)), mustJSON(t, d), nil)
	noErr(t, err, "create "+id)
	if r.ETag == "" {
		t.Fatalf("create %s: no ETag", id)
	}
	return r.ETag
}

// read returns the item and its ETag.
func read(t *testing.T, c *azcosmos.ContainerClient, p, id string) (doc, azcore.ETag) {
	t.Helper()
	r, err := c.ReadItem(ctx(t), pk(p), id, nil)
	noErr(t, err, "read "+truncate([]byte(id)))
	return mustDoc(t, r.Value), r.ETag
}

// queryAll runs a query to the end and returns every item, failing t on
// error.
func queryAll(t *testing.T, c *azcosmos.ContainerClient, q string, p azcosmos.PartitionKey, o *azcosmos.QueryOptions) [][]byte {
	t.Helper()
	items, err := tryQueryAll(t, c, q, p, o)
	noErr(t, err, "query "+q)
	return items
}

// tryQueryAll runs a query to the end and returns every item or the first
// error.
func tryQueryAll(t *testing.T, c *azcosmos.ContainerClient, q string, p azcosmos.PartitionKey, o *azcosmos.QueryOptions) ([][]byte, error) {
	t.Helper()
	pager := c.NewQueryItemsPager(q, p, o)
	var items [][]byte
	for pages := 0; pager.More(); pages++ {
		if pages > 10000 {
			t.Fatalf("query %q: more than 10000 pages", q)
		}
		page, err := pager.NextPage(ctx(t))
		if err != nil {
			return nil, err
		}
		items = append(items, page.Items...)
	}
	return items, nil
}

// ids returns the "id" of each item, sorted.
func ids(t *testing.T, items [][]byte) []string {
	t.Helper()
	out := make([]string, 0, len(items))
	for _, it := range items {
		id, _ := mustDoc(t, it)["id"].(string)
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// values decodes every item as a JSON value.
func values(t *testing.T, items [][]byte) []any {
	t.Helper()
	out := make([]any, 0, len(items))
	for _, it := range items {
		var v any
		if err := json.Unmarshal(it, &v); err != nil {
			t.Fatalf("unmarshal %q: %v", truncate(it), err)
		}
		out = append(out, v)
	}
	return out
}

// wantJSON fails t unless got and want encode to the same JSON.
func wantJSON(t *testing.T, got, want any, what string) {
	t.Helper()
	g, w := string(mustJSON(t, got)), string(mustJSON(t, want))
	if g != w {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}

// Short names for the statuses the cases expect.
const (
	sOK        = http.StatusOK
	sCreated   = http.StatusCreated
	sNoContent = http.StatusNoContent
	sBad       = http.StatusBadRequest
	sUnauth    = http.StatusUnauthorized
	sNotFound  = http.StatusNotFound
	sConflict  = http.StatusConflict
	sPrecond   = http.StatusPreconditionFailed
	sTooLarge  = http.StatusRequestEntityTooLarge
	sFailedDep = http.StatusFailedDependency
)

// azcoreETag converts an _etag read from a body into an ETag.
func azcoreETag(v any) azcore.ETag {
	s, _ := v.(string)
	return azcore.ETag(s)
}
