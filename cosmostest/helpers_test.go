package cosmostest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// Helpers for the façade's own tests: faults, latency, lagging replicas
// and the control endpoint (the server core's tests, with their own copy
// of these helpers, are in package localcosmos; the shared conformance
// suite lives in package cosmostest_test).

// fixture is a server with one database and one container partitioned on
// /instanceId.
type fixture struct {
	s  *Server
	c  *azcosmos.Client
	db *azcosmos.DatabaseClient
	ct *azcosmos.ContainerClient
}

const (
	testDB   = "db"
	testColl = "items"
)

// noRetryOptions makes the SDK give up at once, so status assertions are
// not slowed down by retries.
func noRetryOptions() *azcosmos.ClientOptions {
	return &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}}
}

// newFixture starts a server of the test's own, so tests that use it call
// t.Parallel. These stay serial: the fault-delay tests and
// TestCloseCutsDelays (they time delays on the wall clock) and
// TestLagWindowBoundsStaleness (its staleness window is 100 ms of wall
// time); TestConformance runs its cases in parallel itself.
func newFixture(t testing.TB, opts *Options) *fixture {
	t.Helper()
	s := New(t, opts)
	c, err := s.NewClient(noRetryOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	f := &fixture{s: s, c: c}
	f.db, f.ct = f.setup(t, c)
	return f
}

// setup creates the test database and container with c (which must be
// allowed to).
func (f *fixture) setup(t testing.TB, c *azcosmos.Client) (*azcosmos.DatabaseClient, *azcosmos.ContainerClient) {
	t.Helper()
	ctx := testCtx(t)
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: testDB}, nil); err != nil {
		t.Fatalf("create database: %v", err)
	}
	db, _ := c.NewDatabase(testDB)
	_, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{
		ID: testColl,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{
			Paths: []string{"/instanceId"}, Kind: azcosmos.PartitionKeyKindHash, Version: 2,
		},
		IndexingPolicy: &azcosmos.IndexingPolicy{
			Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent,
			IncludedPaths: []azcosmos.IncludedPath{{Path: "/*"}},
			CompositeIndexes: [][]azcosmos.CompositeIndex{{
				{Path: "/kind", Order: azcosmos.CompositeIndexAscending},
				{Path: "/seq", Order: azcosmos.CompositeIndexAscending},
			}},
		},
	}, nil)
	if err != nil {
		t.Fatalf("create container: %v", err)
	}
	ct, _ := c.NewContainer(testDB, testColl)
	return db, ct
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func item(id, instance string, kv ...any) []byte {
	m := map[string]any{"id": id, "instanceId": instance}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return b
}

func pkOf(v string) azcosmos.PartitionKey { return azcosmos.NewPartitionKeyString(v) }

// status returns the HTTP status of an SDK error (0 for nil, -1 if none).
func status(err error) int {
	if err == nil {
		return 0
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return -1
}

func substatus(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.RawResponse != nil {
		return re.RawResponse.Header.Get("x-ms-substatus")
	}
	return ""
}

func wantStatus(t testing.TB, err error, want int, what string) {
	t.Helper()
	if got := status(err); got != want {
		t.Fatalf("%s: status %d, want %d (err: %v)", what, got, want, err)
	}
}

func wantOK(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func decode(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return m
}

func (f *fixture) create(t testing.TB, id, instance string, kv ...any) azcosmos.ItemResponse {
	t.Helper()
	r, err := f.ct.CreateItem(testCtx(t), pkOf(instance), item(id, instance, kv...), nil)
	wantOK(t, err, "create "+id)
	return r
}

func (f *fixture) read(t testing.TB, id, instance string) map[string]any {
	t.Helper()
	r, err := f.ct.ReadItem(testCtx(t), pkOf(instance), id, nil)
	wantOK(t, err, "read "+id)
	return decode(t, r.Value)
}

// docsPath is the path of the test container's documents.
const docsPath = "/dbs/" + testDB + "/colls/" + testColl + "/docs"
