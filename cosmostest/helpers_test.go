package cosmostest

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/internal/sdkfixture"
)

// Helpers for the façade's own tests: faults, latency, lagging replicas
// and the control endpoint (the server core's tests are in package
// localcosmos, the shared conformance suite in package cosmostest_test;
// what the first two share is internal/sdkfixture).

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
