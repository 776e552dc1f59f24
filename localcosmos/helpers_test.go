package localcosmos

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/internal/sdkfixture"
)

// Helpers for the server core's own tests (the shared conformance suite
// lives in package cosmostest_test, and runs on the core through
// cosmostest.New; what these share with cosmostest's own tests is
// internal/sdkfixture).

// fixture is a server with one database and one container partitioned on
// /instanceId (sdkfixture.Setup).
type fixture struct {
	s  *Server
	c  *azcosmos.Client
	db *azcosmos.DatabaseClient
	ct *azcosmos.ContainerClient
}

// The helpers both servers' tests share, under this package's names.
const (
	testDB   = sdkfixture.DB
	testColl = sdkfixture.Coll
	docsPath = sdkfixture.DocsPath
)

var (
	noRetryOptions = sdkfixture.NoRetryOptions
	testCtx        = sdkfixture.Ctx
	item           = sdkfixture.Item
	pkOf           = sdkfixture.PK
	status         = sdkfixture.Status
	substatus      = sdkfixture.Substatus
	wantStatus     = sdkfixture.WantStatus
	wantOK         = sdkfixture.WantOK
	decode         = sdkfixture.Decode
)

// setup creates the test database and container with c (which must be
// allowed to).
func (f *fixture) setup(t testing.TB, c *azcosmos.Client) (*azcosmos.DatabaseClient, *azcosmos.ContainerClient) {
	t.Helper()
	ctr := sdkfixture.Setup(t, c)
	return ctr.DB, ctr.CT
}

func (f *fixture) container() sdkfixture.Container {
	return sdkfixture.Container{C: f.c, DB: f.db, CT: f.ct}
}

func (f *fixture) create(t testing.TB, id, instance string, kv ...any) azcosmos.ItemResponse {
	t.Helper()
	return f.container().Create(t, id, instance, kv...)
}

func (f *fixture) read(t testing.TB, id, instance string) map[string]any {
	t.Helper()
	return f.container().Read(t, id, instance)
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
