// Package sdkfixture holds what the local Cosmos DB server's own tests
// (package localcosmos) and its test façade's (package cosmostest) share:
// the test database and container they create through the azcosmos SDK,
// and the small assertions on SDK results and errors. It is a test
// helper, as net/http/httptest is, kept internal so that it is no API.
//
// Start with [Container].
package sdkfixture

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

// The test database and container, partitioned on /instanceId.
const (
	DB   = "db"
	Coll = "items"
	// DocsPath is the path of the test container's documents.
	DocsPath = "/dbs/" + DB + "/colls/" + Coll + "/docs"
)

// Container is the test database and container, and the client that
// created them.
type Container struct {
	C  *azcosmos.Client
	DB *azcosmos.DatabaseClient
	CT *azcosmos.ContainerClient
}

// NoRetryOptions makes the SDK give up at once, so status assertions are
// not slowed down by retries.
func NoRetryOptions() *azcosmos.ClientOptions {
	return &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}}
}

// Setup creates the test database and container with c, which must be
// allowed to: the container indexes every path and has the composite
// index (kind, seq) the provider's queries need.
func Setup(t testing.TB, c *azcosmos.Client) Container {
	t.Helper()
	ctx := Ctx(t)
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: DB}, nil); err != nil {
		t.Fatalf("create database: %v", err)
	}
	db, _ := c.NewDatabase(DB)
	_, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{
		ID: Coll,
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
	ct, _ := c.NewContainer(DB, Coll)
	return Container{C: c, DB: db, CT: ct}
}

// Ctx is the test's context with a 30 s deadline, so a request the
// server never answers fails the test instead of hanging it.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Item is the JSON of a document with id, instanceId and the key-value
// pairs kv.
func Item(id, instance string, kv ...any) []byte {
	m := map[string]any{"id": id, "instanceId": instance}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return b
}

// PK is the partition key v.
func PK(v string) azcosmos.PartitionKey { return azcosmos.NewPartitionKeyString(v) }

// Status returns the HTTP status of an SDK error (0 for nil, -1 if none).
func Status(err error) int {
	if err == nil {
		return 0
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return -1
}

// Substatus returns the x-ms-substatus of an SDK error ("" if none).
func Substatus(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.RawResponse != nil {
		return re.RawResponse.Header.Get("x-ms-substatus")
	}
	return ""
}

// WantStatus fails the test unless err has HTTP status want.
func WantStatus(t testing.TB, err error, want int, what string) {
	t.Helper()
	if got := Status(err); got != want {
		t.Fatalf("%s: status %d, want %d (err: %v)", what, got, want, err)
	}
}

// WantOK fails the test if err is not nil.
func WantOK(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Decode decodes a JSON object or fails the test.
func Decode(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return m
}

// Create creates the document id in instance's partition, with kv.
func (c Container) Create(t testing.TB, id, instance string, kv ...any) azcosmos.ItemResponse {
	t.Helper()
	r, err := c.CT.CreateItem(Ctx(t), PK(instance), Item(id, instance, kv...), nil)
	WantOK(t, err, "create "+id)
	return r
}

// Read reads the document id in instance's partition.
func (c Container) Read(t testing.TB, id, instance string) map[string]any {
	t.Helper()
	r, err := c.CT.ReadItem(Ctx(t), PK(instance), id, nil)
	WantOK(t, err, "read "+id)
	return Decode(t, r.Value)
}
