package localcosmos

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

func TestAccount(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	if !strings.HasPrefix(s.Endpoint(), "http://127.0.0.1:") || !strings.HasSuffix(s.Endpoint(), "/") {
		t.Fatalf("endpoint %q", s.Endpoint())
	}
	req := signedRequest(t, s, http.MethodGet, "/", nil, nil)
	st, _, body := do(t, req)
	if st != http.StatusOK {
		t.Fatalf("GET /: %d", st)
	}
	for _, k := range []string{"writableLocations", "readableLocations"} {
		locs := body[k].([]any)
		if len(locs) != 1 || locs[0].(map[string]any)["databaseAccountEndpoint"] != s.Endpoint() {
			t.Fatalf("%s: %v", k, locs)
		}
	}
	if body["userConsistencyPolicy"] == nil {
		t.Fatal("no userConsistencyPolicy")
	}
	// The ready-made client works and is closed with the server.
	if _, err := s.Client().CreateDatabase(testCtx(t), azcosmos.DatabaseProperties{ID: "x"}, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close()
	if s.Client() != nil {
		t.Fatal("Client after Close")
	}
}

func TestDatabasesAndContainers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testCtx(t)
	_, err := f.c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: testDB}, nil)
	wantStatus(t, err, http.StatusConflict, "create existing database")
	_, err = f.c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "a/b"}, nil)
	wantStatus(t, err, http.StatusBadRequest, "database id with /")
	_, err = f.c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: strings.Repeat("d", 256)}, nil)
	wantStatus(t, err, http.StatusBadRequest, "256-character database id")
	_, err = f.c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: strings.Repeat("d", 255)}, nil)
	wantOK(t, err, "255-character database id")

	r, err := f.ct.Read(ctx, nil)
	wantOK(t, err, "read container")
	p := r.ContainerProperties
	if p.PartitionKeyDefinition.Version != 2 || p.PartitionKeyDefinition.Kind != azcosmos.PartitionKeyKindHash ||
		len(p.IndexingPolicy.CompositeIndexes) != 1 || p.ResourceID == "" || p.SelfLink == "" || p.ETag == nil || p.LastModified.IsZero() {
		t.Fatalf("container properties: %+v %+v", p, p.IndexingPolicy)
	}
	_, err = f.db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: testColl, PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/x"}}}, nil)
	wantStatus(t, err, http.StatusConflict, "create existing container")
	_, err = f.db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "nopk"}, nil)
	wantStatus(t, err, http.StatusBadRequest, "container without partition key")

	missing, _ := f.c.NewDatabase("missing")
	_, err = missing.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/x"}}}, nil)
	wantStatus(t, err, http.StatusNotFound, "container in missing database")
	mc, _ := f.c.NewContainer("missing", "c")
	_, err = mc.ReadItem(ctx, pkOf("x"), "a", nil)
	wantStatus(t, err, http.StatusNotFound, "item in missing database")
	if substatus(err) != "1003" {
		t.Fatalf("item in missing database: substatus %q", substatus(err))
	}

	// Replace keeps the documents; the partition key cannot change.
	f.create(t, "a", "i1")
	p.IndexingPolicy.CompositeIndexes = nil
	_, err = f.ct.Replace(ctx, *p, nil)
	wantOK(t, err, "replace container")
	f.read(t, "a", "i1")
	p.PartitionKeyDefinition.Paths = []string{"/other"}
	_, err = f.ct.Replace(ctx, *p, nil)
	wantStatus(t, err, http.StatusBadRequest, "change partition key")

	// Throughput.
	tp := azcosmos.NewManualThroughputProperties(400)
	_, err = f.db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "tp", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/x"}}},
		&azcosmos.CreateContainerOptions{ThroughputProperties: &tp})
	wantOK(t, err, "create container with throughput")
	tc, _ := f.db.NewContainer("tp")
	tr, err := tc.ReadThroughput(ctx, nil)
	wantOK(t, err, "read throughput")
	if n, ok := tr.ThroughputProperties.ManualThroughput(); !ok || n != 400 {
		t.Fatalf("throughput %v %v", n, ok)
	}
	_, err = tc.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(500), nil)
	wantOK(t, err, "replace throughput")
	tr, _ = tc.ReadThroughput(ctx, nil)
	if n, _ := tr.ThroughputProperties.ManualThroughput(); n != 500 {
		t.Fatalf("replaced throughput %v", n)
	}

	// Deleting the container deletes its documents.
	_, err = f.ct.Delete(ctx, nil)
	wantOK(t, err, "delete container")
	_, err = f.ct.ReadItem(ctx, pkOf("i1"), "a", nil)
	wantStatus(t, err, http.StatusNotFound, "item of deleted container")
	_, err = f.ct.Read(ctx, nil)
	wantStatus(t, err, http.StatusNotFound, "deleted container")
	_, err = f.db.Delete(ctx, nil)
	wantOK(t, err, "delete database")
	_, err = f.db.Read(ctx, nil)
	wantStatus(t, err, http.StatusNotFound, "deleted database")
}

func TestIDsAndSizes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testCtx(t)
	for _, id := range []string{`a\b`, "", strings.Repeat("x", 1024)} {
		_, err := f.ct.CreateItem(ctx, pkOf("i1"), item(id, "i1"), nil)
		wantStatus(t, err, http.StatusBadRequest, fmt.Sprintf("create id %.20q", id))
	}
	// Accepted at create, then unusable by id (conformance: testIDs).
	for id, byID := range map[string]int{"a/b": http.StatusNotFound, "a#b": http.StatusUnauthorized, "ab ": http.StatusUnauthorized, "a?b": 0} {
		_, err := f.ct.CreateItem(ctx, pkOf("i1"), item(id, "i1"), nil)
		wantStatus(t, err, 0, fmt.Sprintf("create id %q", id))
		_, err = f.ct.ReadItem(ctx, pkOf("i1"), id, nil)
		wantStatus(t, err, byID, fmt.Sprintf("read id %q", id))
	}
	_, err := f.ct.CreateItem(ctx, pkOf("i1"), []byte(`{"instanceId":"i1"}`), nil)
	wantStatus(t, err, http.StatusBadRequest, "create without id")
	_, err = f.ct.CreateItem(ctx, pkOf("i1"), []byte(`{"id":5,"instanceId":"i1"}`), nil)
	wantStatus(t, err, http.StatusBadRequest, "create with numeric id")
	_, err = f.ct.CreateItem(ctx, pkOf("i1"), []byte(`[1]`), nil)
	wantStatus(t, err, http.StatusBadRequest, "create with an array")
	long := strings.Repeat("é", 511) // 1022 bytes
	f.create(t, long, "i1")
	f.read(t, long, "i1")

	// 2 MB: the limit is on the serialized item.
	pad := maxDocumentSize - len(item("max", "i1", "blob", ""))
	_, err = f.ct.CreateItem(ctx, pkOf("i1"), item("max", "i1", "blob", strings.Repeat("a", pad)), nil)
	wantOK(t, err, "item of exactly 2 MB")
	_, err = f.ct.CreateItem(ctx, pkOf("i1"), item("over", "i1", "blob", strings.Repeat("a", pad+1)), nil)
	wantStatus(t, err, http.StatusRequestEntityTooLarge, "item over 2 MB")
	if !strings.Contains(err.Error(), msgTooLarge) {
		t.Fatalf("item over 2 MB: %v", err)
	}
	_, err = f.ct.UpsertItem(ctx, pkOf("i1"), item("over", "i1", "blob", strings.Repeat("a", 5*1024*1024)), nil)
	wantStatus(t, err, http.StatusRequestEntityTooLarge, "body over 4 MB")
}

func TestPartitionKeyHeader(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testCtx(t)
	_, err := f.ct.CreateItem(ctx, pkOf("i2"), item("a", "i1"), nil)
	wantStatus(t, err, http.StatusBadRequest, "partition key mismatch")
	if substatus(err) != "1001" || !strings.Contains(err.Error(), "PartitionKey extracted from document doesn't match") {
		t.Fatalf("partition key mismatch: %q %v", substatus(err), err)
	}
	_, err = f.ct.CreateItem(ctx, azcosmos.NewPartitionKey(), item("a", "i1"), nil)
	wantStatus(t, err, http.StatusBadRequest, "no partition key header")
	_, err = f.ct.ReplaceItem(ctx, pkOf("i1"), "a", item("a", "i2"), nil)
	wantStatus(t, err, http.StatusBadRequest, "replace with another partition key")
	_, err = f.ct.ReplaceItem(ctx, pkOf("i1"), "a", item("b", "i1"), nil)
	wantStatus(t, err, http.StatusBadRequest, "replace with another id")

	// null and a missing property are different partitions; [{}] is the
	// undefined one, which the Go SDK cannot address.
	_, err = f.ct.CreateItem(ctx, azcosmos.NullPartitionKey, []byte(`{"id":"n","instanceId":null}`), nil)
	wantOK(t, err, "null partition key")
	_, err = f.ct.CreateItem(ctx, azcosmos.NullPartitionKey, []byte(`{"id":"u"}`), nil)
	wantStatus(t, err, http.StatusBadRequest, "missing property with a null header")
	hdr := map[string]string{"x-ms-documentdb-partitionkey": `[{}]`}
	if st, _, b := do(t, signedRequest(t, f.s, http.MethodPost, docsPath, []byte(`{"id":"u"}`), hdr)); st != http.StatusCreated {
		t.Fatalf("undefined partition: %d %v", st, b)
	}
	if st, _, _ := do(t, signedRequest(t, f.s, http.MethodGet, docsPath+"/u", nil, hdr)); st != http.StatusOK {
		t.Fatalf("read in undefined partition: %d", st)
	}
	for _, h := range []string{`["i1","x"]`, `i1`, `[[1]]`} {
		if st, _, _ := do(t, signedRequest(t, f.s, http.MethodGet, docsPath+"/u", nil, map[string]string{"x-ms-documentdb-partitionkey": h})); st != http.StatusBadRequest {
			t.Fatalf("header %s: %d", h, st)
		}
	}
	// Numbers compare as numbers.
	_, err = f.ct.CreateItem(ctx, azcosmos.NewPartitionKeyNumber(1), []byte(`{"id":"num","instanceId":1.0}`), nil)
	wantOK(t, err, "number partition key")
	_, err = f.ct.ReadItem(ctx, azcosmos.NewPartitionKeyNumber(1), "num", nil)
	wantOK(t, err, "read number partition key")
}

func TestHierarchicalPartitionKey(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	c, _ := s.NewClient(noRetryOptions())
	defer c.Close()
	ctx := testCtx(t)
	_, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "h"}, nil)
	wantOK(t, err, "database")
	db, _ := c.NewDatabase("h")
	_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{
		Paths: []string{"/tenant", "/user"}, Kind: azcosmos.PartitionKeyKindMultiHash, Version: 2}}, nil)
	wantOK(t, err, "container")
	ct, _ := db.NewContainer("c")
	pk := azcosmos.NewPartitionKeyString("t1").AppendString("u1")
	_, err = ct.CreateItem(ctx, pk, []byte(`{"id":"a","tenant":"t1","user":"u1"}`), nil)
	wantOK(t, err, "create")
	_, err = ct.CreateItem(ctx, azcosmos.NewPartitionKeyString("t1").AppendString("u2"), []byte(`{"id":"a","tenant":"t1","user":"u2"}`), nil)
	wantOK(t, err, "create in sibling partition")
	_, err = ct.ReadItem(ctx, azcosmos.NewPartitionKeyString("t1"), "a", nil)
	wantStatus(t, err, http.StatusBadRequest, "point read with a prefix")
	items, _ := allPages(t, ct, "SELECT * FROM c", azcosmos.NewPartitionKeyString("t1"), nil)
	if len(items) != 2 {
		t.Fatalf("prefix query: %v", items)
	}
}

func TestUniqueKeys(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil)
	c, _ := s.NewClient(noRetryOptions())
	defer c.Close()
	ctx := testCtx(t)
	_, _ = c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "u"}, nil)
	db, _ := c.NewDatabase("u")
	_, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/p"}},
		UniqueKeyPolicy:        &azcosmos.UniqueKeyPolicy{UniqueKeys: []azcosmos.UniqueKey{{Paths: []string{"/email"}}}}}, nil)
	wantOK(t, err, "container")
	ct, _ := db.NewContainer("c")
	p := azcosmos.NewPartitionKeyString("p")
	_, err = ct.CreateItem(ctx, p, []byte(`{"id":"a","p":"p","email":"x@y"}`), nil)
	wantOK(t, err, "first")
	_, err = ct.CreateItem(ctx, p, []byte(`{"id":"b","p":"p","email":"x@y"}`), nil)
	wantStatus(t, err, http.StatusConflict, "duplicate unique key")
	_, err = ct.CreateItem(ctx, azcosmos.NewPartitionKeyString("q"), []byte(`{"id":"b","p":"q","email":"x@y"}`), nil)
	wantOK(t, err, "same key in another partition")
	_, err = ct.UpsertItem(ctx, p, []byte(`{"id":"a","p":"p","email":"x@y","v":2}`), nil)
	wantOK(t, err, "rewrite of the same item")
}

func TestIfNoneMatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	r := f.create(t, "a", "i1")
	req := signedRequest(t, f.s, http.MethodGet, docsPath+"/a", nil, map[string]string{"x-ms-documentdb-partitionkey": `["i1"]`, "If-None-Match": string(r.ETag)})
	if st, _, _ := do(t, req); st != http.StatusNotModified {
		t.Fatalf("If-None-Match current: %d", st)
	}
	req = signedRequest(t, f.s, http.MethodGet, docsPath+"/a", nil, map[string]string{"x-ms-documentdb-partitionkey": `["i1"]`, "If-None-Match": `"old"`})
	if st, _, _ := do(t, req); st != http.StatusOK {
		t.Fatalf("If-None-Match old: %d", st)
	}
}

func TestUnsupportedRequest(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.s.ResetCounts()
	req := signedRequest(t, f.s, http.MethodGet, "/dbs/db/colls/items/sprocs", nil, nil)
	st, _, body := do(t, req)
	if st != http.StatusBadRequest || !strings.Contains(body["message"].(string), "cosmostest does not support") {
		t.Fatalf("unsupported: %d %v", st, body)
	}
	if f.s.Counts()[OpUnsupported] != 1 {
		t.Fatalf("counts: %v", f.s.Counts())
	}
}

func TestCountsAndStats(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.s.ResetCounts()
	for i := 0; i < 3; i++ {
		f.create(t, fmt.Sprint("a", i), "i1", "blob", strings.Repeat("x", 1000))
	}
	f.read(t, "a0", "i1")
	_, err := f.ct.ReadItem(testCtx(t), pkOf("i1"), "missing", nil)
	wantStatus(t, err, http.StatusNotFound, "missing")
	allPages(t, f.ct, "SELECT * FROM c", pkOf("i1"), &azcosmos.QueryOptions{PageSizeHint: 2})

	counts := f.s.Counts()
	if counts[OpCreateItem] != 3 || counts[OpReadItem] != 2 || counts[OpQuery] != 2 || len(counts) != 3 {
		t.Fatalf("counts: %v", counts)
	}
	if st := f.s.Stats(OpQuery); st.Requests != 2 || st.DocumentsReturned != 3 || st.ResponseBytes < 3000 || st.RequestCharge <= 0 {
		t.Fatalf("query stats: %+v", st)
	}
	if st := f.s.Stats(OpReadItem); st.DocumentsReturned != 1 || st.ResponseBytes < 1000 {
		t.Fatalf("read stats: %+v", st)
	}
	if st := f.s.Stats(OpCreateItem); st.DocumentsReturned != 0 || st.ResponseBytes != 0 || st.RequestCharge < 15 {
		t.Fatalf("create stats (minimal responses): %+v", st)
	}
	f.s.ResetCounts()
	if len(f.s.Counts()) != 0 || f.s.Stats(OpQuery) != (Stats{}) {
		t.Fatal("ResetCounts left counts")
	}
}

func TestClock(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	f.s.SetClock(func() time.Time { return at })
	if !f.s.Now().Equal(at) {
		t.Fatal("Now ignores SetClock")
	}
	f.create(t, "a", "i1")
	if ts := f.read(t, "a", "i1")["_ts"]; ts != float64(at.Unix()) {
		t.Fatalf("_ts %v, want %d", ts, at.Unix())
	}
	f.s.SetClock(nil)
	if time.Since(f.s.Now()) > time.Minute {
		t.Fatal("SetClock(nil) did not restore the wall clock")
	}
}

func TestDirectAccess(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.create(t, "a", "i1", "n", 1)
	f.create(t, "b", "i1", "n", 2)
	f.create(t, "c", "i2", "n", 3)
	docs, err := f.s.Documents(testDB, testColl)
	wantOK(t, err, "Documents")
	if len(docs) != 3 || docs[0]["id"] != "a" || docs[2]["id"] != "c" || docs[0]["_etag"] == nil {
		t.Fatalf("Documents: %v", docs)
	}
	docs[0]["n"] = 99 // a copy
	old := f.read(t, "a", "i1")["_etag"]
	err = f.s.UpdateDocuments(testDB, testColl, func(d map[string]any) bool {
		switch d["id"] {
		case "a":
			d["n"] = "corrupted"
		case "b":
			return false
		case "c":
			d["id"] = "c2"
		}
		return true
	})
	wantOK(t, err, "UpdateDocuments")
	got := f.read(t, "a", "i1")
	if got["n"] != "corrupted" || got["_etag"] == old {
		t.Fatalf("updated document: %v", got)
	}
	_, err = f.ct.ReadItem(testCtx(t), pkOf("i1"), "b", nil)
	wantStatus(t, err, http.StatusNotFound, "deleted by UpdateDocuments")
	f.read(t, "c2", "i2")
	if _, err := f.s.Documents("nope", testColl); err == nil {
		t.Fatal("Documents of a missing database")
	}
}

func TestLogf(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var lines []string
	s := startServer(t, &Options{Logf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}})
	_, err := s.Client().CreateDatabase(testCtx(t), azcosmos.DatabaseProperties{ID: "x"}, nil)
	wantOK(t, err, "create database")
	mu.Lock()
	defer mu.Unlock()
	if len(lines) < 2 || !strings.Contains(strings.Join(lines, "\n"), "POST /dbs (CreateDatabase) -> 201") {
		t.Fatalf("log: %q", lines)
	}
}

func TestErrorBody(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	_, err := f.ct.ReadItem(testCtx(t), pkOf("i1"), "missing", nil)
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusNotFound || re.ErrorCode != "404 Not Found" {
		t.Fatalf("missing: %v", err)
	}
	var body struct{ Code, Message string }
	if err := json.NewDecoder(re.RawResponse.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Code != "NotFound" || !strings.Contains(body.Message, msgNotFound) || !strings.Contains(body.Message, "ActivityId: ") {
		t.Fatalf("error body: %+v", body)
	}
}

func TestConsistencyLevel(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.create(t, "a", "i1")
	for level, want := range map[azcosmos.ConsistencyLevel]int{
		azcosmos.ConsistencyLevelStrong:           http.StatusBadRequest,
		azcosmos.ConsistencyLevelBoundedStaleness: http.StatusBadRequest,
		azcosmos.ConsistencyLevelSession:          0,
		azcosmos.ConsistencyLevelEventual:         0,
	} {
		_, err := f.ct.ReadItem(testCtx(t), pkOf("i1"), "a", &azcosmos.ItemOptions{ConsistencyLevel: &level})
		wantStatus(t, err, want, string(level))
	}
	g := newFixture(t, &Options{ConsistencyLevel: "Strong"})
	g.create(t, "a", "i1")
	strong := azcosmos.ConsistencyLevelStrong
	_, err := g.ct.ReadItem(testCtx(t), pkOf("i1"), "a", &azcosmos.ItemOptions{ConsistencyLevel: &strong})
	wantOK(t, err, "strong read on a strong account")
	if _, err := NewServer(&Options{ConsistencyLevel: "Linearizable"}); err == nil {
		t.Fatal("unknown consistency level accepted")
	}
}

func TestTimeToLive(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testCtx(t)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	f.s.SetClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	ttl := int32(10)
	_, err := f.db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "ttl", DefaultTimeToLive: &ttl,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/instanceId"}}}, nil)
	wantOK(t, err, "container with ttl")
	ct, _ := f.db.NewContainer("ttl")
	for _, it := range [][]byte{item("default", "i1"), item("forever", "i1", "ttl", -1), item("short", "i1", "ttl", 2)} {
		_, err := ct.CreateItem(ctx, pkOf("i1"), it, nil)
		wantOK(t, err, "create")
	}
	// Items in a container without defaultTtl never expire, whatever their ttl.
	f.create(t, "plain", "i1", "ttl", 1)

	advance(2 * time.Second)
	_, err = ct.ReadItem(ctx, pkOf("i1"), "short", nil)
	wantStatus(t, err, http.StatusNotFound, "expired by item ttl")
	advance(8 * time.Second)
	_, err = ct.ReadItem(ctx, pkOf("i1"), "default", nil)
	wantStatus(t, err, http.StatusNotFound, "expired by default ttl")
	_, err = ct.ReadItem(ctx, pkOf("i1"), "forever", nil)
	wantOK(t, err, "ttl -1")
	f.read(t, "plain", "i1")
	items, _ := allPages(t, ct, "SELECT * FROM c", pkOf("i1"), nil)
	if len(items) != 1 || items[0]["id"] != "forever" {
		t.Fatalf("query after expiry: %v", items)
	}
	_, err = ct.CreateItem(ctx, pkOf("i1"), item("default", "i1"), nil)
	wantOK(t, err, "create over an expired item")
	_, err = ct.ReplaceItem(ctx, pkOf("i1"), "short", item("short", "i1"), nil)
	wantStatus(t, err, http.StatusNotFound, "replace an expired item")

	bad := int32(0)
	_, err = f.db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "ttl0", DefaultTimeToLive: &bad,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/instanceId"}}}, nil)
	wantStatus(t, err, http.StatusBadRequest, "defaultTtl 0")
}

// azcosmos writes partition key strings with strconv.QuoteToASCII, which
// escapes characters outside the BMP as \U0001f642: not JSON, so refused.
func TestPartitionKeyOutsideBMP(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	_, err := f.ct.CreateItem(testCtx(t), pkOf("ü"), item("a", "ü"), nil)
	wantOK(t, err, "partition key in the BMP")
	f.read(t, "a", "ü")
	_, err = f.ct.CreateItem(testCtx(t), pkOf("🙂"), item("a", "🙂"), nil)
	wantStatus(t, err, http.StatusBadRequest, "partition key outside the BMP")
}
