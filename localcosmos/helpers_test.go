package localcosmos

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// Helpers for the server core's own tests (the shared conformance suite
// lives in package cosmostest_test, and runs on the core through
// cosmostest.New).

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

// startServer starts a server for the test t and closes it when the test
// ends (cosmostest.New, for the core's own tests).
func startServer(t testing.TB, opts *Options) *Server {
	t.Helper()
	s, err := NewServer(opts)
	if err != nil {
		t.Fatalf("localcosmos: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// newFixture starts a server of the test's own, so tests that use it call
// t.Parallel.
func newFixture(t testing.TB, opts *Options) *fixture {
	t.Helper()
	s := startServer(t, opts)
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

// signedRequest builds a request to the server signed with its master key,
// for what the SDK cannot send (malformed bodies, raw headers).
func signedRequest(t testing.TB, s *Server, method, path string, body []byte, headers map[string]string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, strings.TrimSuffix(s.Endpoint(), "/")+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2020-11-05")
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	parsed, perr := parseRequest(req)
	if perr != nil {
		t.Fatal(perr)
	}
	req.Header.Set("Authorization", masterAuth(s.Key(), method, parsed.resType, parsed.resLink, req.Header.Get("x-ms-date")))
	return req
}

func masterAuth(key, method, resType, resLink, date string) string {
	kb, _ := base64.StdEncoding.DecodeString(key)
	mac := hmac.New(sha256.New, kb)
	mac.Write([]byte(strings.ToLower(method) + "\n" + strings.ToLower(resType) + "\n" + resLink + "\n" + strings.ToLower(date) + "\n\n"))
	return url.QueryEscape("type=master&ver=1.0&sig=" + base64.StdEncoding.EncodeToString(mac.Sum(nil)))
}

// do sends a request and returns the status, headers and body.
func do(t testing.TB, req *http.Request) (int, http.Header, map[string]any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(b) > 0 {
		_ = json.Unmarshal(b, &m)
	}
	return resp.StatusCode, resp.Header, m
}

// docsPath is the path of the test container's documents.
const docsPath = "/dbs/" + testDB + "/colls/" + testColl + "/docs"
