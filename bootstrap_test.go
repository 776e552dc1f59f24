package cdb_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
)

// Infrastructure bootstrap: New creates the database and the container
// (partitioned by /instanceId, with the embedded indexing policy) unless
// they exist, idempotently; SkipBootstrap sends nothing; with an Entra ID
// credential, which Cosmos refuses control-plane writes, New verifies the
// container with one metadata read and otherwise fails with an actionable
// message. Each test runs its own cosmostest server.

// controlPlaneOps are the requests bootstrap may send.
var controlPlaneOps = []cosmostest.Op{
	cosmostest.OpCreateDatabase, cosmostest.OpReadDatabase, cosmostest.OpQueryDatabases,
	cosmostest.OpCreateContainer, cosmostest.OpReadContainer, cosmostest.OpReplaceContainer, cosmostest.OpQueryContainers,
	cosmostest.OpReplaceOffer,
}

func bsKeyConfig(srv *cosmostest.Server) cdb.Config {
	return cdb.Config{Endpoint: srv.Endpoint(), Key: srv.Key(), Database: hDatabase, Container: hContainer, ClientOptions: hClientOptions()}
}

func bsTokenConfig(srv *cosmostest.Server, cred azcore.TokenCredential) cdb.Config {
	return cdb.Config{Endpoint: srv.Endpoint(), Credential: cred, Database: hDatabase, Container: hContainer, ClientOptions: hClientOptions()}
}

// bsOptions is o with the maintenance loop off unless o sets it.
func bsOptions(o cdb.Options) *cdb.Options {
	if o.MaintenanceInterval == 0 {
		o.MaintenanceInterval = -1
	}
	return &o
}

func bsNew(t *testing.T, cfg cdb.Config) *cdb.Provider {
	t.Helper()
	return bsNewWith(t, cfg, cdb.Options{})
}

func bsNewWith(t *testing.T, cfg cdb.Config, o cdb.Options) *cdb.Provider {
	t.Helper()
	p, err := cdb.New(t.Context(), cfg, bsOptions(o))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// bsContainer reads the container's properties with a key client.
func bsContainer(t *testing.T, srv *cosmostest.Server) azcosmos.ContainerProperties {
	t.Helper()
	client, err := azcosmos.NewClientWithKey(srv.Endpoint(), bsKeyCred(t, srv), hClientOptions())
	require.NoError(t, err)
	defer client.Close()
	c, err := client.NewContainer(hDatabase, hContainer)
	require.NoError(t, err)
	r, err := c.Read(t.Context(), nil)
	require.NoError(t, err)
	require.NotNil(t, r.ContainerProperties)
	return *r.ContainerProperties
}

func bsKeyCred(t *testing.T, srv *cosmostest.Server) azcosmos.KeyCredential {
	t.Helper()
	cred, err := azcosmos.NewKeyCredential(srv.Key())
	require.NoError(t, err)
	return cred
}

func bsControlPlane(srv *cosmostest.Server) map[cosmostest.Op]int {
	out := map[cosmostest.Op]int{}
	counts := srv.Counts()
	for _, op := range controlPlaneOps {
		if n := counts[op]; n > 0 {
			out[op] = n
		}
	}
	return out
}

// bsSmokeTurn proves the provider works on the container.
func bsSmokeTurn(t *testing.T, p *cdb.Provider, inst string) {
	t.Helper()
	createHInstance(t, p, inst)
	hist, err := p.Read(t.Context(), inst)
	require.NoError(t, err)
	require.Len(t, hist, 1)
}

// TestBootstrapCreatesContainer: New on an empty account creates the
// database and a container partitioned by /instanceId with the embedded
// indexing policy (read back and compared, composite indexes included) and
// the requested throughput.
func TestBootstrapCreatesContainer(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, nil)
	cfg := bsKeyConfig(srv)
	cfg.Throughput = 600
	p := bsNew(t, cfg)
	require.Equal(t, map[cosmostest.Op]int{cosmostest.OpReadContainer: 1, cosmostest.OpCreateDatabase: 1, cosmostest.OpCreateContainer: 1},
		bsControlPlane(srv))

	props := bsContainer(t, srv)
	require.Equal(t, hContainer, props.ID)
	require.Equal(t, []string{cdb.PartitionKeyPath}, props.PartitionKeyDefinition.Paths)
	require.Equal(t, "/instanceId", cdb.PartitionKeyPath)
	require.Equal(t, azcosmos.PartitionKeyKindHash, props.PartitionKeyDefinition.Kind)
	require.Equal(t, 2, props.PartitionKeyDefinition.Version, "large partition keys (v2) allow instance ids up to 2048 bytes")
	want := cdb.IndexingPolicy()
	got := props.IndexingPolicy
	require.NotNil(t, got)
	require.NotEmpty(t, want.CompositeIndexes)
	require.Equal(t, want.CompositeIndexes, got.CompositeIndexes)
	require.Equal(t, want.IndexingMode, got.IndexingMode)
	require.Equal(t, want.Automatic, got.Automatic)
	require.ElementsMatch(t, want.IncludedPaths, got.IncludedPaths)
	for _, ex := range want.ExcludedPaths {
		require.Contains(t, got.ExcludedPaths, ex)
	}

	client, err := azcosmos.NewClientWithKey(srv.Endpoint(), bsKeyCred(t, srv), hClientOptions())
	require.NoError(t, err)
	defer client.Close()
	c, err := client.NewContainer(hDatabase, hContainer)
	require.NoError(t, err)
	tp, err := c.ReadThroughput(t.Context(), nil)
	require.NoError(t, err)
	manual, ok := tp.ThroughputProperties.ManualThroughput()
	require.True(t, ok)
	require.Equal(t, int32(600), manual)

	bsSmokeTurn(t, p, "bs-1")
}

// TestBootstrapIdempotent: a second New on a bootstrapped container costs
// one metadata read and leaves the container untouched; when creation races
// with another process (the read says 404 but the database and container
// exist by the time we create them), the 409s mean "exists".
func TestBootstrapIdempotent(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, nil)
	p1 := bsNew(t, bsKeyConfig(srv))
	bsSmokeTurn(t, p1, "idem-1")
	before := bsContainer(t, srv)
	docs, err := srv.Documents(hDatabase, hContainer)
	require.NoError(t, err)

	srv.ResetCounts()
	p2 := bsNew(t, bsKeyConfig(srv))
	require.Equal(t, map[cosmostest.Op]int{cosmostest.OpReadContainer: 1}, bsControlPlane(srv), "a second bootstrap must only read")
	after := bsContainer(t, srv)
	require.Equal(t, before.ETag, after.ETag, "container replaced")
	require.Equal(t, before.IndexingPolicy, after.IndexingPolicy)
	docs2, err := srv.Documents(hDatabase, hContainer)
	require.NoError(t, err)
	require.Equal(t, docs, docs2, "documents changed by a second bootstrap")

	// Race: another process created everything after our read.
	srv.ResetCounts()
	srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpReadContainer, Status: http.StatusNotFound, Times: 1})
	p3 := bsNew(t, bsKeyConfig(srv))
	require.Equal(t, map[cosmostest.Op]int{cosmostest.OpReadContainer: 1, cosmostest.OpCreateDatabase: 1, cosmostest.OpCreateContainer: 1},
		bsControlPlane(srv))
	require.Equal(t, before.ETag, bsContainer(t, srv).ETag, "409 on create must leave the container as it was")

	// Every provider works on the same container.
	hist, err := p2.Read(t.Context(), "idem-1")
	require.NoError(t, err)
	require.Len(t, hist, 1)
	bsSmokeTurn(t, p3, "idem-3")

	// Database exists, container does not: only the container is created.
	srv2 := cosmostest.New(t, nil)
	_, err = srv2.Client().CreateDatabase(t.Context(), azcosmos.DatabaseProperties{ID: hDatabase}, nil)
	require.NoError(t, err)
	bsSmokeTurn(t, bsNew(t, bsKeyConfig(srv2)), "idem-4")
}

// TestBootstrapSkip: SkipBootstrap sends no control-plane request (and no
// request at all) from New.
func TestBootstrapSkip(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, nil)
	bsNew(t, bsKeyConfig(srv)) // provision
	srv.ResetCounts()
	cfg := bsKeyConfig(srv)
	cfg.SkipBootstrap = true
	p := bsNew(t, cfg)
	require.Empty(t, srv.Counts(), "New with SkipBootstrap sent requests")
	bsSmokeTurn(t, p, "skip-1")
	require.Empty(t, bsControlPlane(srv))

	// Skipping on an account without the container: New still succeeds
	// (no check), and the first operation fails.
	empty := cosmostest.New(t, nil)
	cfg = bsKeyConfig(empty)
	cfg.SkipBootstrap = true
	p2 := bsNew(t, cfg)
	require.Empty(t, empty.Counts())
	require.Error(t, p2.EnqueueForOrchestrator(t.Context(), hStart("skip-2"), 0))
	require.Empty(t, bsControlPlane(empty))
}

// TestBootstrapWrongPartitionKey: an existing container partitioned by
// another path is a configuration error (wrapping ErrConfig) and nothing is
// created or changed.
func TestBootstrapWrongPartitionKey(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, nil)
	ctx := t.Context()
	client := srv.Client()
	_, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: hDatabase}, nil)
	require.NoError(t, err)
	db, err := client.NewDatabase(hDatabase)
	require.NoError(t, err)
	_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: hContainer,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	require.NoError(t, err)
	srv.ResetCounts()

	_, err = cdb.New(ctx, bsKeyConfig(srv), bsOptions(cdb.Options{}))
	require.Error(t, err)
	require.ErrorIs(t, err, cdb.ErrConfig)
	require.Contains(t, err.Error(), "/pk")
	require.Contains(t, err.Error(), "/instanceId")
	require.Equal(t, map[cosmostest.Op]int{cosmostest.OpReadContainer: 1}, bsControlPlane(srv))
}

// TestBootstrapEntraIDExistingContainer: with an Entra ID credential and a
// container provisioned beforehand (here with key auth), New succeeds with
// exactly one metadata read and no control-plane write, and the provider
// works with tokens.
func TestBootstrapEntraIDExistingContainer(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, &cosmostest.Options{Auth: cosmostest.AuthKeyOrToken})
	require.NoError(t, bsNew(t, bsKeyConfig(srv)).Close())
	srv.ResetCounts()

	p := bsNew(t, bsTokenConfig(srv, srv.TokenCredential()))
	require.Equal(t, map[cosmostest.Op]int{cosmostest.OpReadContainer: 1}, bsControlPlane(srv))
	bsSmokeTurn(t, p, "aad-1")
	require.Equal(t, map[cosmostest.Op]int{cosmostest.OpReadContainer: 1}, bsControlPlane(srv))
}

// TestBootstrapEntraIDMissingContainer: with an Entra ID credential and no
// container, Cosmos refuses to create it (403/5300); New fails with an
// error wrapping ErrBootstrap that says so and names the remedies, never a
// bare 403.
func TestBootstrapEntraIDMissingContainer(t *testing.T) {
	t.Parallel()
	t.Run("nothing provisioned", func(t *testing.T) {
		srv := cosmostest.New(t, &cosmostest.Options{Auth: cosmostest.AuthToken})
		_, err := cdb.New(t.Context(), bsTokenConfig(srv, srv.TokenCredential()), bsOptions(cdb.Options{}))
		requireEntraRemedies(t, err)
		require.Zero(t, srv.Counts()[cosmostest.OpCreateContainer], "the container create was tried after the database create was refused")
	})
	t.Run("database provisioned, container missing", func(t *testing.T) {
		srv := cosmostest.New(t, &cosmostest.Options{Auth: cosmostest.AuthKeyOrToken})
		client, err := azcosmos.NewClientWithKey(srv.Endpoint(), bsKeyCred(t, srv), hClientOptions())
		require.NoError(t, err)
		defer client.Close()
		_, err = client.CreateDatabase(t.Context(), azcosmos.DatabaseProperties{ID: hDatabase}, nil)
		require.NoError(t, err)
		_, err = cdb.New(t.Context(), bsTokenConfig(srv, srv.TokenCredential()), bsOptions(cdb.Options{}))
		requireEntraRemedies(t, err)
	})
}

func requireEntraRemedies(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, cdb.ErrBootstrap)
	msg := err.Error()
	for _, want := range []string{"5300", "does not exist", "ARM/Bicep", "az cosmosdb", "key auth", hContainer, cdb.PartitionKeyPath} {
		require.Contains(t, msg, want)
	}
	var ce *cdb.RequestError
	require.ErrorAs(t, err, &ce, "the Cosmos error stays reachable")
	require.Equal(t, http.StatusForbidden, ce.StatusCode)
	require.Equal(t, 5300, ce.SubStatus)
}

// TestBootstrapEntraIDNoRoleAssignment: a principal without a data-plane
// role gets 403/5301 on the container read; the error explains the role
// assignment to make.
func TestBootstrapEntraIDNoRoleAssignment(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, &cosmostest.Options{Auth: cosmostest.AuthKeyOrToken})
	require.NoError(t, bsNew(t, bsKeyConfig(srv)).Close())
	srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpReadContainer, Status: http.StatusForbidden, SubStatus: 5301})
	srv.ResetCounts()
	_, err := cdb.New(t.Context(), bsTokenConfig(srv, srv.TokenCredential()), bsOptions(cdb.Options{}))
	require.Error(t, err)
	require.ErrorIs(t, err, cdb.ErrBootstrap)
	for _, want := range []string{"5301", "role assignment", "Cosmos DB Built-in Data Contributor", "00000000-0000-0000-0000-000000000002"} {
		require.Contains(t, err.Error(), want)
	}
	require.Equal(t, map[cosmostest.Op]int{cosmostest.OpReadContainer: 1}, bsControlPlane(srv), "nothing is created after a 5301")

	// Any other 403 still names the container instead of being bare.
	srv.ClearFaults()
	srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpReadContainer, Status: http.StatusForbidden})
	_, err = cdb.New(t.Context(), bsTokenConfig(srv, srv.TokenCredential()), bsOptions(cdb.Options{}))
	require.ErrorIs(t, err, cdb.ErrBootstrap)
	require.Contains(t, err.Error(), hContainer)
	require.Contains(t, err.Error(), "refused")
}

// TestBootstrapThrottled: a 429 on the container read is retried after
// x-ms-retry-after-ms within Options.Retry and New then succeeds; beyond
// the budget New fails with ErrBootstrap.
func TestBootstrapThrottled(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, nil)
	require.NoError(t, bsNew(t, bsKeyConfig(srv)).Close())
	retry := cdb.RetryOptions{MaxThrottleRetries: 4}

	srv.ResetCounts()
	srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpReadContainer, Status: http.StatusTooManyRequests,
		Headers: map[string]string{"x-ms-retry-after-ms": "5"}, Times: 3})
	p := bsNewWith(t, bsKeyConfig(srv), cdb.Options{Retry: retry})
	require.Equal(t, map[cosmostest.Op]int{cosmostest.OpReadContainer: 4}, bsControlPlane(srv))
	bsSmokeTurn(t, p, "throttled-1")

	srv.ResetCounts()
	srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpReadContainer, Status: http.StatusTooManyRequests,
		Headers: map[string]string{"x-ms-retry-after-ms": "5"}})
	_, err := cdb.New(t.Context(), bsKeyConfig(srv), bsOptions(cdb.Options{Retry: retry}))
	require.ErrorIs(t, err, cdb.ErrBootstrap)
	var ce *cdb.RequestError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, http.StatusTooManyRequests, ce.StatusCode)
	require.Equal(t, map[cosmostest.Op]int{cosmostest.OpReadContainer: 5}, bsControlPlane(srv))

	// Throttling on the creates is retried the same way.
	srv2 := cosmostest.New(t, nil)
	srv2.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateDatabase, Status: http.StatusTooManyRequests, Times: 2})
	srv2.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateContainer, Status: http.StatusTooManyRequests, Times: 2})
	bsSmokeTurn(t, bsNewWith(t, bsKeyConfig(srv2), cdb.Options{Retry: retry}), "throttled-2")
	require.Equal(t, 3, srv2.Counts()[cosmostest.OpCreateContainer])
}

// TestBootstrapKeysNeverInErrors: no error from New, whatever fails,
// contains the account key (or a malformed one).
func TestBootstrapKeysNeverInErrors(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, nil)
	ctx := t.Context()
	key := srv.Key()
	var errs []error
	collect := func(cfg cdb.Config) {
		_, err := cdb.New(ctx, cfg, bsOptions(cdb.Options{}))
		require.Error(t, err)
		errs = append(errs, err)
	}

	for _, f := range []cosmostest.Fault{
		{Op: cosmostest.OpReadContainer, Status: http.StatusInternalServerError},
		{Op: cosmostest.OpReadContainer, Status: http.StatusForbidden},
		{Op: cosmostest.OpCreateContainer, Status: http.StatusBadRequest},
		{Op: cosmostest.OpCreateDatabase, Drop: cosmostest.DropBeforeApply},
	} {
		remove := srv.InjectFault(f)
		collect(bsKeyConfig(srv))
		remove()
	}

	wrongKey := bsKeyConfig(srv)
	wrongKey.Key = "dGhpcyBpcyBub3QgdGhlIGFjY291bnQga2V5IGF0IGFsbCBhdCBhbGwh"
	collect(wrongKey)

	malformed := "not-base64!!" + key[:20]
	badKey := bsKeyConfig(srv)
	badKey.Key = malformed
	collect(badKey)

	cs := cdb.Config{ConnectionString: "AccountKey=" + malformed + ";AccountEndpoint=" + srv.Endpoint() + ";"}
	collect(cs)
	cs = cdb.Config{ConnectionString: "AccountKey=" + key + ";AccountEndpoint=ftp://nowhere;"}
	collect(cs)
	cs = cdb.Config{ConnectionString: "AccountKey=" + key + ";AccountKey=" + key + ";AccountEndpoint=" + srv.Endpoint()}
	collect(cs)
	both := bsKeyConfig(srv)
	both.ConnectionString = "AccountEndpoint=" + srv.Endpoint() + ";AccountKey=" + key
	collect(both)

	// After a failure the provider works with the right key.
	bsSmokeTurn(t, bsNew(t, bsKeyConfig(srv)), "keys-1")

	for _, err := range errs {
		msg := err.Error()
		require.NotContains(t, msg, key)
		require.NotContains(t, msg, key[:16], "a prefix of the key leaked")
		require.NotContains(t, msg, wrongKey.Key)
		require.NotContains(t, msg, malformed)
		require.NotContains(t, msg, "not-base64")
	}
}

// scopeRecorder wraps a credential and records the scopes requested.
type scopeRecorder struct {
	inner  azcore.TokenCredential
	mu     sync.Mutex
	scopes [][]string
}

func (r *scopeRecorder) GetToken(ctx context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	r.mu.Lock()
	r.scopes = append(r.scopes, append([]string(nil), o.Scopes...))
	r.mu.Unlock()
	return r.inner.GetToken(ctx, o)
}

func (r *scopeRecorder) recorded() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]string(nil), r.scopes...)
}

// TestBootstrapAudience: Config.Audience makes the credential be asked for
// "<audience>/.default"; without it azcosmos asks for the account
// endpoint's scope.
func TestBootstrapAudience(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, &cosmostest.Options{Auth: cosmostest.AuthKeyOrToken})
	require.NoError(t, bsNew(t, bsKeyConfig(srv)).Close())

	for _, audience := range []string{"https://cosmos.azure.com", "https://cosmos.azure.com/"} {
		rec := &scopeRecorder{inner: srv.TokenCredential()}
		cfg := bsTokenConfig(srv, rec)
		cfg.Audience = audience
		p := bsNew(t, cfg)
		bsSmokeTurn(t, p, "aud-"+url.PathEscape(audience))
		scopes := rec.recorded()
		require.NotEmpty(t, scopes, "no token was requested")
		for _, s := range scopes {
			require.Equal(t, []string{"https://cosmos.azure.com/.default"}, s)
		}
	}

	rec := &scopeRecorder{inner: srv.TokenCredential()}
	bsNew(t, bsTokenConfig(srv, rec))
	u, err := url.Parse(srv.Endpoint())
	require.NoError(t, err)
	scopes := rec.recorded()
	require.NotEmpty(t, scopes)
	require.Equal(t, []string{u.Scheme + "://" + u.Hostname() + "/.default"}, scopes[0])
}

// TestBootstrapConfigErrors: invalid configurations fail with ErrConfig
// before any request.
func TestBootstrapConfigErrors(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, nil)
	ctx := t.Context()
	for name, cfg := range map[string]cdb.Config{
		"no endpoint":          {Key: srv.Key()},
		"no credential":        {Endpoint: srv.Endpoint()},
		"key and credential":   {Endpoint: srv.Endpoint(), Key: srv.Key(), Credential: srv.TokenCredential()},
		"malformed conn str":   {ConnectionString: "AccountEndpoint" + srv.Endpoint()},
		"conn str without key": {ConnectionString: "AccountEndpoint=" + srv.Endpoint()},
		"endpoint disagrees":   {Endpoint: "https://other.documents.azure.com/", ConnectionString: "AccountEndpoint=" + srv.Endpoint() + ";AccountKey=" + srv.Key()},
	} {
		_, err := cdb.New(ctx, cfg, bsOptions(cdb.Options{}))
		require.ErrorIs(t, err, cdb.ErrConfig, name)
		require.False(t, errors.Is(err, cdb.ErrBootstrap), name)
	}
	require.Empty(t, srv.Counts())
	_, err := cdb.NewWithContainer(ctx, nil, nil)
	require.ErrorIs(t, err, cdb.ErrConfig)
	cc, err := srv.Client().NewContainer(hDatabase, hContainer)
	require.NoError(t, err)
	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err = cdb.NewWithContainer(done, cc, nil)
	require.ErrorIs(t, err, context.Canceled, "NewWithContainer honours its context")

	// A connection string in any order connects.
	p := bsNew(t, cdb.Config{ConnectionString: "AccountKey=" + srv.Key() + ";Extra=1;AccountEndpoint=" + srv.Endpoint(),
		Database: hDatabase, Container: hContainer, ClientOptions: hClientOptions()})
	bsSmokeTurn(t, p, "cs-1")
	var _ duroxide.Provider = p
	require.False(t, strings.Contains(p.Name(), " "))
}
