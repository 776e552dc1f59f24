// Package testbackend chooses the Cosmos DB backends that tests run against
// and gives them unique, self-cleaning databases.
//
// Start with [ForEachProvider] and [All].
//
// Every test that talks to Cosmos DB through azcosmos should run once per
// backend returned by [All], so that the in-process fake (cosmostest) is
// checked against the same expectations as third-party and real
// implementations:
//
//   - "cosmostest": the project's in-process fake, always present.
//   - "cosmostest-8ranges": the same with 8 physical partitions, so
//     cross-partition queries come back one partition key range per page.
//   - "cosmostest-lagging": the same fake with lagging replicas, in
//     [AllProviders] and [ForEachProvider] only.
//   - "cosmostest-persistent": the same fake keeping its account in a data
//     directory and serving its clients in process, as the embedded store
//     (embedded.Open) does.
//   - "vercel": @vercel/cosmosdb-server behind the project's shim
//     (cosmostest/testdata/cosmos-shim), when CDB_VERCEL_ENDPOINT is set.
//   - "cosmos": a real account or the official emulator, when COSMOS_ENDPOINT
//     and COSMOS_KEY are set. COSMOS_INSECURE_TLS=1 skips certificate
//     verification, for the official emulator's self-signed certificate.
//
// CDB_BACKENDS, a comma-separated list of names, narrows the set (for example
// CDB_BACKENDS=vercel while working on the shim).
//
// A backend may lack a behaviour the tests check. Such gaps are named in
// [Backend.Gaps] and tests call [Backend.Skip] before relying on one, so the
// skip and its reason show up in the test output instead of being hidden.
package testbackend

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/cosmostest"
)

// Backend names.
const (
	NameCosmostest = "cosmostest"
	// NameCosmostestRanges is cosmostest with CosmostestRanges partition
	// key ranges (physical partitions).
	NameCosmostestRanges = "cosmostest-8ranges"
	// NameCosmostestLagging is cosmostest in its lagging-replica mode
	// (cosmostest.LagOptions): reads without a covering session token may
	// miss recent writes, as on a real account. Only [AllProviders] and
	// [ForEachProvider] include it, for tests of code that must give
	// read-your-writes through session tokens (the provider's validation
	// suite, the runtime's end-to-end samples); raw SDK conformance tests
	// read without tokens and would rightly see stale data there.
	NameCosmostestLagging = "cosmostest-lagging"
	// NameCosmostestPersistent is cosmostest keeping its account in a data
	// directory (cosmostest.Options.DataDir), its clients served through
	// cosmostest.Server.InProcessTransport: the embedded store's
	// configuration. [All], [AllProviders] and [ForEachProvider] include
	// it (the provider suites on it add about 35 s of CPU to go test).
	NameCosmostestPersistent = "cosmostest-persistent"
	NameVercel               = "vercel"
	NameCosmos               = "cosmos"
)

// Environment variables read by [All].
const (
	EnvVercelEndpoint = "CDB_VERCEL_ENDPOINT"
	EnvCosmosEndpoint = "COSMOS_ENDPOINT"
	EnvCosmosKey      = "COSMOS_KEY"
	EnvInsecureTLS    = "COSMOS_INSECURE_TLS"
	EnvBackends       = "CDB_BACKENDS"
)

// EmulatorKey is the well-known master key of the Cosmos DB emulators. The
// vercel shim checks signatures against it by default.
const EmulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// DatabasePrefix starts the name of every database created through this
// package, so leftovers on a shared account are easy to find and delete.
const DatabasePrefix = "cdbtest-"

// cleanupTimeout bounds the deletion of a test database after the test.
const cleanupTimeout = time.Minute

// Backend is one Cosmos DB implementation under test.
type Backend struct {
	// Name is NameCosmostest, NameCosmostestLagging, NameVercel or NameCosmos.
	Name string
	// Client talks to the backend with master-key auth. Its retry policy
	// never hides a 5xx, and retries 429 only on the real service, where
	// throttling is legitimate.
	Client *azcosmos.Client
	// Endpoint and Key are what Client was built from.
	Endpoint, Key string
	// Gaps maps the name of each known gap of this backend to the reason
	// the behaviour cannot be provided. See [Backend.Skip].
	Gaps map[string]string
	// Real reports whether this is the real service (or the official
	// emulator) rather than a fake. Tests use it only where Cosmos DB is
	// documented to be laxer than the fakes deliberately are.
	Real bool
	// Server is the in-process server of the cosmostest backends, nil for
	// the others.
	Server *cosmostest.Server

	newClient func(key string, opts *azcosmos.ClientOptions) (*azcosmos.Client, error)
}

// All returns the backends selected by the environment (see the package
// documentation). The cosmostest server is started for t and closed when t
// ends; other backends are only connected to.
func All(t testing.TB) []Backend {
	t.Helper()
	return all(t, false)
}

// AllProviders is [All] plus the cosmostest-lagging backend, for tests of
// code built on Cosmos DB that must be correct on a lagging replica.
func AllProviders(t testing.TB) []Backend {
	t.Helper()
	return all(t, true)
}

func all(t testing.TB, withOptIn bool) []Backend {
	t.Helper()
	var out []Backend
	for _, f := range factories {
		if !selected(f.name) || (f.optIn && !withOptIn) {
			continue
		}
		b, ok := f.make(t)
		if ok {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		t.Fatalf("testbackend: no backend selected (%s=%q)", EnvBackends, os.Getenv(EnvBackends))
	}
	return out
}

// ForEach runs f as a subtest named after each backend returned by [All].
func ForEach(t *testing.T, f func(t *testing.T, b Backend)) {
	t.Helper()
	for _, b := range All(t) {
		t.Run(b.Name, func(t *testing.T) { f(t, b) })
	}
}

// ForEachProvider runs f as a subtest named after each backend returned by
// [AllProviders]: [ForEach] plus cosmostest-lagging.
func ForEachProvider(t *testing.T, f func(t *testing.T, b Backend)) {
	t.Helper()
	for _, b := range AllProviders(t) {
		t.Run(b.Name, func(t *testing.T) { f(t, b) })
	}
}

// ForNamed runs f as a subtest named after the backend called name, when
// the environment selects it. Tests whose subject is the same on every
// backend (a payload codec, leases) use it instead of skipping the others.
func ForNamed(t *testing.T, name string, f func(t *testing.T, b Backend)) {
	t.Helper()
	for _, fac := range factories {
		if fac.name != name || !selected(fac.name) {
			continue
		}
		if b, ok := fac.make(t); ok {
			t.Run(b.Name, func(t *testing.T) { f(t, b) })
		}
	}
}

// Skip skips t with the recorded reason if b has the named gap, and does
// nothing otherwise.
func (b Backend) Skip(t testing.TB, gap string) {
	t.Helper()
	if reason, ok := b.Gaps[gap]; ok {
		t.Skipf("%s: known gap %q: %s", b.Name, gap, reason)
	}
}

// HasGap reports whether b has the named gap.
func (b Backend) HasGap(gap string) bool {
	_, ok := b.Gaps[gap]
	return ok
}

// NewClient returns another client for b, built with the given master key
// (empty means b.Key) and options (nil means [ClientOptions] for b). Tests use
// it for a wrong key or different client settings.
func (b Backend) NewClient(t testing.TB, key string, opts *azcosmos.ClientOptions) *azcosmos.Client {
	t.Helper()
	if key == "" {
		key = b.Key
	}
	if opts == nil {
		opts = b.ClientOptions()
	}
	c, err := b.newClient(key, opts)
	if err != nil {
		t.Fatalf("testbackend: new %s client: %v", b.Name, err)
	}
	t.Cleanup(c.Close)
	return c
}

// ClientOptions returns the options b.Client uses: SDK retries off on the
// fakes, so that a 429 or 5xx is seen by the test instead of being retried
// away; on the real service only 429 is retried.
func (b Backend) ClientOptions() *azcosmos.ClientOptions {
	o := &azcosmos.ClientOptions{}
	if b.Real {
		o.Retry = policy.RetryOptions{StatusCodes: []int{http.StatusTooManyRequests}}
	} else {
		o.Retry = policy.RetryOptions{MaxRetries: -1}
	}
	return o
}

// NewDatabaseName returns a database name unique to this call, derived from
// the test name so that leftovers on a shared account can be traced.
func NewDatabaseName(t testing.TB) string {
	t.Helper()
	return DatabasePrefix + sanitize(t.Name(), 40) + "-" + randomHex(t, 6)
}

// NewName returns a short unique name with the given prefix, suitable for
// containers and item ids.
func NewName(t testing.TB, prefix string) string {
	t.Helper()
	return sanitize(prefix, 40) + "-" + randomHex(t, 6)
}

// NewDatabase creates a database with a unique name on b and deletes it when
// t ends.
func (b Backend) NewDatabase(t testing.TB) *azcosmos.DatabaseClient {
	t.Helper()
	name := NewDatabaseName(t)
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if _, err := b.Client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: name}, nil); err != nil {
		t.Fatalf("testbackend: create database %s on %s: %v", name, b.Name, err)
	}
	db, err := b.Client.NewDatabase(name)
	if err != nil {
		t.Fatalf("testbackend: database client %s: %v", name, err)
	}
	t.Cleanup(func() { b.deleteDatabase(t, db) })
	return db
}

// NewContainer creates a database and, in it, a container with the given
// properties (ID defaults to "c", PartitionKeyDefinition to /pk), and returns
// the container's client. Everything is deleted when t ends.
func (b Backend) NewContainer(t testing.TB, props azcosmos.ContainerProperties) *azcosmos.ContainerClient {
	t.Helper()
	if props.ID == "" {
		props.ID = "c"
	}
	if len(props.PartitionKeyDefinition.Paths) == 0 {
		props.PartitionKeyDefinition = azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}
	}
	db := b.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if _, err := db.CreateContainer(ctx, props, nil); err != nil {
		t.Fatalf("testbackend: create container %s on %s: %v", props.ID, b.Name, err)
	}
	c, err := db.NewContainer(props.ID)
	if err != nil {
		t.Fatalf("testbackend: container client %s: %v", props.ID, err)
	}
	return c
}

func (b Backend) deleteDatabase(t testing.TB, db *azcosmos.DatabaseClient) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_, err := db.Delete(ctx, nil)
	var re *azcore.ResponseError
	if err != nil && !(errors.As(err, &re) && re.StatusCode == http.StatusNotFound) {
		t.Errorf("testbackend: delete database %s on %s: %v", db.ID(), b.Name, err)
	}
}

// factory makes one kind of backend; ok is false when the environment does
// not ask for it.
type factory struct {
	name string
	make func(t testing.TB) (b Backend, ok bool)
	// optIn backends are only in AllProviders.
	optIn bool
}

// factories lists the backends in the order tests run them. The cosmostest
// entry is added by cosmostest_backend.go.
var factories = []factory{
	{name: NameVercel, make: vercelBackend},
	{name: NameCosmos, make: cosmosBackend},
}

func selected(name string) bool {
	return strings.TrimSpace(os.Getenv(EnvBackends)) == "" || named(name)
}

// named reports whether CDB_BACKENDS lists name.
func named(name string) bool {
	v := strings.TrimSpace(os.Getenv(EnvBackends))
	return slices.ContainsFunc(strings.Split(v, ","), func(s string) bool {
		return strings.TrimSpace(s) == name
	})
}

func vercelBackend(t testing.TB) (Backend, bool) {
	endpoint := os.Getenv(EnvVercelEndpoint)
	if endpoint == "" {
		return Backend{}, false
	}
	b := Backend{
		Name:      NameVercel,
		Endpoint:  endpoint,
		Key:       EmulatorKey,
		Gaps:      VercelGaps,
		newClient: keyClient(endpoint, nil),
	}
	return finish(t, b), true
}

func cosmosBackend(t testing.TB) (Backend, bool) {
	endpoint, key := os.Getenv(EnvCosmosEndpoint), os.Getenv(EnvCosmosKey)
	if endpoint == "" || key == "" {
		return Backend{}, false
	}
	var transport policy.Transporter
	if os.Getenv(EnvInsecureTLS) == "1" {
		transport = insecureTransport()
	}
	b := Backend{
		Name:     NameCosmos,
		Endpoint: endpoint,
		Key:      key,
		Real:     true,
		// A test container has one physical partition.
		Gaps:      map[string]string{GapPartitionKeyRanges: onePartition},
		newClient: keyClient(endpoint, transport),
	}
	return finish(t, b), true
}

// finish builds b.Client from b's own client factory and options.
func finish(t testing.TB, b Backend) Backend {
	t.Helper()
	b.Client = b.NewClient(t, "", nil)
	return b
}

// keyClient returns a constructor of master-key clients for endpoint. A nil
// transport keeps azcosmos' own tuned HTTP client.
func keyClient(endpoint string, transport policy.Transporter) func(string, *azcosmos.ClientOptions) (*azcosmos.Client, error) {
	return func(key string, opts *azcosmos.ClientOptions) (*azcosmos.Client, error) {
		cred, err := azcosmos.NewKeyCredential(key)
		if err != nil {
			return nil, err
		}
		o := *opts
		if o.Transport == nil && transport != nil {
			o.Transport = transport
		}
		return azcosmos.NewClientWithKey(endpoint, cred, &o)
	}
}

// insecureTransport mirrors azcosmos' default HTTP client (which a custom
// Transport replaces) but skips certificate verification, for the official
// emulator's self-signed certificate.
func insecureTransport() *http.Client {
	return &http.Client{
		Timeout: 65 * time.Second,
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          1000,
			MaxIdleConnsPerHost:   100,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true}, //nolint:gosec // official emulator only, opted in by env
		},
	}
}

// sanitize keeps letters, digits and '-' (lower-cased), so a test name is a
// valid resource id on every backend, and cuts it to max bytes.
func sanitize(s string, max int) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			sb.WriteRune(r)
		default:
			sb.WriteByte('-')
		}
		if sb.Len() >= max {
			break
		}
	}
	return strings.Trim(sb.String(), "-")
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("testbackend: random name: %v", err)
	}
	return hex.EncodeToString(b)
}
