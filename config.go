package cdb

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Default names of the database and container.
const (
	DefaultDatabase  = "duroxide"
	DefaultContainer = "duroxide"
)

// Config says how to reach Cosmos DB: the account, how to authenticate,
// which database and container, and whether to bootstrap them. How the
// provider behaves once connected is Options, given to New and
// NewWithContainer alike.
//
// Exactly one way to authenticate must be given: Key (master key),
// Credential (any azcore.TokenCredential: azidentity's
// DefaultAzureCredential, ManagedIdentityCredential with a client id,
// WorkloadIdentityCredential, ...), or ConnectionString (which carries the
// endpoint and key).
type Config struct {
	// Endpoint is the account URL, e.g. https://myacct.documents.azure.com:443/.
	Endpoint string
	// Key is the account's master key (base64).
	Key string
	// Credential authenticates with Microsoft Entra ID.
	Credential azcore.TokenCredential
	// ConnectionString is "AccountEndpoint=...;AccountKey=...;" in any
	// order; see ParseConnectionString.
	ConnectionString string
	// Audience overrides the Entra ID token audience. By default azcosmos
	// asks for "<account endpoint>/.default"; some clouds and tenants only
	// accept "https://cosmos.azure.com" (AADSTS500011), and the Go SDK,
	// unlike the others, has no automatic fallback.
	Audience string

	// Database and Container name the container (both default "duroxide").
	Database  string
	Container string

	// SkipBootstrap skips creating or checking the database and container,
	// and the account check, for deployments that provision them with
	// ARM/Bicep/Terraform and want no startup request at all. The
	// account's consistency level is then not checked: it must be Session,
	// Bounded Staleness or Strong (see AcceptWeakConsistency).
	SkipBootstrap bool
	// AcceptWeakConsistency lets New start on an account whose default
	// consistency is Consistent Prefix or Eventual, which New otherwise
	// refuses (ErrWeakConsistency). At those levels the service ignores
	// session tokens, so a read may miss the provider's own latest write:
	// a fetch can load a history without the previous turn (the runtime
	// then replays a stale history and commits on top of it: duplicated
	// activities, lost events, diverging histories, none caught by an
	// ETag), a KV read can return an older value, and a status read can go
	// backwards. Only for accounts whose replicas cannot lag (a single
	// region under no load is not such a guarantee) or tests.
	AcceptWeakConsistency bool
	// Throughput, if positive, is the manual RU/s given to a container the
	// bootstrap creates. Zero leaves the account default (e.g. serverless).
	Throughput int32

	// ClientOptions are passed to azcosmos (transport, retries, regions,
	// logging). Nil uses the SDK's defaults. azcore's generic retries are
	// turned off (of Retry only TryTimeout applies): they resent writes
	// whose outcome was unknown. azcosmos' own write-safe retries stay, and
	// throttling is retried by the provider alone, within Options.Retry.
	ClientOptions *azcosmos.ClientOptions
	// InsecureSkipVerify disables TLS certificate checks, for the official
	// emulator's self-signed certificate only. Set by a connection string's
	// DisableServerCertificateValidation=True.
	InsecureSkipVerify bool
}

// Options tune the provider's behaviour; the zero value (or a nil
// *Options) gives the defaults (the Default* constants).
type Options struct {
	// Retry bounds throttling (429) retries, which the provider alone
	// makes: azcore's are turned off (see Config.ClientOptions).
	Retry RetryOptions
	// Logger receives operational messages. Nil discards them. Keys and
	// tokens are never logged. At slog.LevelDebug it also receives the
	// message trail: every orchestrator message locked, consumed, given
	// back, put aside or deleted, by document id (verbose; for following
	// one message across processes).
	Logger *slog.Logger
	// TracerProvider traces Cosmos requests (through azcore's tracing,
	// when New builds the client and Config.ClientOptions sets no
	// TracingProvider; a container given to NewWithContainer traces as
	// its client was configured). Nil: OpenTelemetry's global provider, a
	// no-op unless the service installed an SDK.
	TracerProvider trace.TracerProvider
	// MeterProvider receives the Cosmos cost metrics (nil: the global
	// provider). docs/operations.md lists them.
	MeterProvider metric.MeterProvider
	// MaintenanceInterval is how often the background maintenance loop
	// runs a round of RunMaintenance's work: delivering outbox intents
	// that were not delivered, rolling large turns forward and finishing
	// deletions a crash interrupted (default 5s). Negative disables the
	// loop.
	MaintenanceInterval time.Duration
	// OutboxMinAge is how old a pending intent must be before the
	// maintenance loop delivers it, so it does not race the acking
	// process's own delivery (default 2s). The loop leaves a large turn's
	// roll-forward and a deletion's sweep alone until they are as old, for
	// the same reason.
	OutboxMinAge time.Duration
	// OrphanLifetime is how long an event or cancellation for an
	// instance that does not exist waits for the instance's start before
	// it is deleted (counted by cdb.orphans.dropped); default
	// duroxide.DefaultOrphanLifetime. Queue messages are dropped at once.
	OrphanLifetime time.Duration
	// Leases assigns dispatch slots to dispatchers. Nil means every
	// dispatcher polls all 256 slots.
	Leases LeaseProvider
	// DiscoveryPageSize bounds how many queue entries one fetch reads while
	// looking for work (default 50).
	DiscoveryPageSize int
	// ScanPages bounds the query pages one fetch's discovery, or one
	// maintenance round, reads (default 10). Cross-partition queries are
	// served one physical partition per page, empty pages included; a
	// container with more physical partitions than this is scanned over
	// several calls, each resuming where the last stopped.
	ScanPages int
	// TurnCacheBytes bounds the memory of the turn cache: the history and
	// KV state this process committed last for each instance, which lets
	// the instance's next fetch skip the load query when nothing changed
	// since (turncache.go; default DefaultTurnCacheBytes, 32 MiB).
	// Negative disables the cache: every fetch queries.
	TurnCacheBytes int
	// WorkCandidateTTL is how long the untried rest of a work-item
	// discovery page is kept for the next fetch with the same filter,
	// which then tries those items before it queries (workcandidates.go;
	// default DefaultWorkCandidateTTL, 1s). It bounds how long older
	// leftovers are preferred to items enqueued after the query.
	// Negative disables it: every fetch queries.
	WorkCandidateTTL time.Duration
	// MaxClockSkew is how far the clocks of any two processes sharing the
	// container may disagree without one taking a lock, session or
	// dispatch lease the other still holds (default DefaultMaxClockSkew,
	// 30s). Expiries are written with the holder's clock and judged with
	// the reader's, so another process's lock counts as expired only once
	// it has been expired for MaxClockSkew by the reader's clock. The
	// price: a crashed process's locks and leases are taken over
	// MaxClockSkew after they expire, not at once. A release (ack,
	// abandon, Close) is never delayed. Negative means no margin: clocks
	// are assumed to agree exactly (a single process, or tests that
	// check exact expiry).
	MaxClockSkew time.Duration
	// Exclusive says that this process is the container's only user and
	// that every process that used it before is dead: New then expires
	// every lock and session they left (their work is fetched again at
	// once instead of after its lock timeout), and expiries are judged
	// with no clock-skew margin (MaxClockSkew is ignored: one process,
	// one clock). embedded.Open sets it for its in-process store, whose
	// data directory lock proves both. Never set it on a shared account:
	// another live process's locked work would run twice.
	Exclusive bool
	// ClientOnly makes the provider serve clients only: reads, starts,
	// events, cancellations and management, but no fetch of work, so no
	// lock is ever taken through it (fetches fail with ErrClientOnly, and
	// durable.Start refuses the provider, duroxide.DispatchRefuser).
	// embedded.Open sets it on a store joined with JoinRunning, since the
	// owning process, Exclusive, releases every lock when it restarts.
	ClientOnly bool
	// BackgroundPriority is the Cosmos DB priority level (priority-based
	// execution) of the provider's background requests: discovery polls
	// (the queries that look for work, including every poll that finds
	// none; locking and loading what they found is not background), the
	// maintenance loop and RunMaintenance, CleanupOrphanedSessions,
	// SearchInstances, ListInstances, ListInstancesByStatus,
	// SystemMetrics, QueueDepths, PruneExecutions, PruneExecutionsBulk and
	// DeleteInstanceBulk, and any call whose context carries
	// duroxide.PriorityLow (the dashboard's and the duroxide command's
	// reads). Everything else — turns, acks, abandons, lock, session and
	// lease renewals, client writes, status reads — is sent as
	// Config.ClientOptions.PriorityLevel says (unset: no level, which the
	// service treats as High), and so is a call whose context carries
	// duroxide.PriorityHigh.
	//
	// azcosmos.PriorityLevelLow (the default, for the zero value) sends
	// background requests as Low, so that a container over its RU/s
	// throttles them before the requests that move locked work forward.
	// azcosmos.PriorityLevelHigh sends them like every other request: for
	// an account whose default priority level was changed to Low (set
	// ClientOptions.PriorityLevel to High as well there), or a deployment
	// that must not have its polls shed. On an account without
	// priority-based execution enabled the level is ignored, so the
	// default costs nothing there. See docs/costs.md ("Priority").
	BackgroundPriority azcosmos.PriorityLevel
}

// Defaults of Options, applied to zero fields.
const (
	DefaultMaintenanceInterval = 5 * time.Second
	DefaultOutboxMinAge        = 2 * time.Second
	DefaultDiscoveryPageSize   = 50
	DefaultScanPages           = 10
	DefaultMaxClockSkew        = 30 * time.Second
)

func (o Options) withDefaults() Options {
	if o.MaintenanceInterval == 0 {
		o.MaintenanceInterval = DefaultMaintenanceInterval
	}
	if o.OutboxMinAge == 0 {
		o.OutboxMinAge = DefaultOutboxMinAge
	}
	if o.OrphanLifetime <= 0 {
		o.OrphanLifetime = duroxide.DefaultOrphanLifetime
	}
	if o.DiscoveryPageSize <= 0 {
		o.DiscoveryPageSize = DefaultDiscoveryPageSize
	}
	if o.ScanPages <= 0 {
		o.ScanPages = DefaultScanPages
	}
	if o.TurnCacheBytes == 0 {
		o.TurnCacheBytes = DefaultTurnCacheBytes
	}
	if o.WorkCandidateTTL == 0 {
		o.WorkCandidateTTL = DefaultWorkCandidateTTL
	}
	if o.MaxClockSkew == 0 {
		o.MaxClockSkew = DefaultMaxClockSkew
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Retry = cosmos.RetryDefaults(o.Retry)
	return o
}

// check refuses what withDefaults cannot make sense of.
func (o Options) check() error {
	switch o.BackgroundPriority {
	case "", azcosmos.PriorityLevelLow, azcosmos.PriorityLevelHigh:
		return nil
	}
	return configError("Options.BackgroundPriority %q is neither azcosmos.PriorityLevelLow nor PriorityLevelHigh", o.BackgroundPriority)
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("cdb: invalid configuration")

// ErrClientOnly is matched (errors.Is) by the fetches of a provider
// opened with Options.ClientOnly, and by durable.Start given one.
var ErrClientOnly = errors.New("cdb: the provider serves clients only (Options.ClientOnly): a runtime cannot fetch work through it")

func configError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
}

// Environment variables read by ConfigFromEnv. The examples, the tests'
// real-account backend and docs/cosmos.md use these names and no others.
const (
	EnvConnectionString = "COSMOS_CONNECTION_STRING"
	EnvEndpoint         = "COSMOS_ENDPOINT"
	EnvKey              = "COSMOS_KEY"
	EnvDatabase         = "COSMOS_DATABASE"
	EnvContainer        = "COSMOS_CONTAINER"
	EnvAudience         = "COSMOS_AUDIENCE"
	// EnvSkipBootstrap set to 1 or true sets Config.SkipBootstrap.
	EnvSkipBootstrap = "COSMOS_SKIP_BOOTSTRAP"
	// EnvInsecureTLS set to 1 or true sets Config.InsecureSkipVerify,
	// for the official emulator's self-signed certificate only.
	EnvInsecureTLS = "COSMOS_INSECURE_TLS"
)

// ConfigFromEnv builds a Config from the environment:
//   - COSMOS_CONNECTION_STRING, or COSMOS_ENDPOINT with COSMOS_KEY;
//   - COSMOS_ENDPOINT without COSMOS_KEY uses DefaultAzureCredential
//     (environment, workload identity, managed identity, Azure CLI, ...);
//   - COSMOS_DATABASE and COSMOS_CONTAINER (default "duroxide");
//   - COSMOS_AUDIENCE optionally overrides the Entra ID audience;
//   - COSMOS_SKIP_BOOTSTRAP=1 skips creating or checking the container;
//   - COSMOS_INSECURE_TLS=1 accepts the emulator's self-signed certificate.
func ConfigFromEnv() (Config, error) {
	cfg := Config{
		Endpoint:           os.Getenv(EnvEndpoint),
		Key:                os.Getenv(EnvKey),
		ConnectionString:   os.Getenv(EnvConnectionString),
		Database:           os.Getenv(EnvDatabase),
		Container:          os.Getenv(EnvContainer),
		Audience:           os.Getenv(EnvAudience),
		SkipBootstrap:      envTrue(EnvSkipBootstrap),
		InsecureSkipVerify: envTrue(EnvInsecureTLS),
	}
	if cfg.ConnectionString != "" {
		return cfg, nil
	}
	if cfg.Endpoint == "" {
		return Config{}, configError("COSMOS_ENDPOINT (or COSMOS_CONNECTION_STRING) is not set")
	}
	if err := checkEndpoint(cfg.Endpoint); err != nil {
		return Config{}, err
	}
	if cfg.Key == "" {
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return Config{}, fmt.Errorf("cdb: COSMOS_KEY is not set and DefaultAzureCredential is unavailable: %w", err)
		}
		cfg.Credential = cred
	}
	return cfg, nil
}

// envTrue reports whether the variable is set to 1 or true (any case).
func envTrue(name string) bool {
	v := strings.TrimSpace(os.Getenv(name))
	return v == "1" || strings.EqualFold(v, "true")
}

// resolve validates cfg and fills in defaults and connection-string values.
func (cfg Config) resolve() (Config, error) {
	if cfg.ConnectionString != "" {
		if cfg.Key != "" || cfg.Credential != nil {
			return cfg, configError("set only one of ConnectionString, Key and Credential")
		}
		cs, err := ParseConnectionString(cfg.ConnectionString)
		if err != nil {
			return cfg, err
		}
		if cfg.Endpoint != "" && !sameEndpoint(cfg.Endpoint, cs.Endpoint) {
			if err := checkEndpoint(cfg.Endpoint); err != nil {
				return cfg, err
			}
			return cfg, configError("Endpoint %s disagrees with the connection string's AccountEndpoint %s", SafeEndpoint(cfg.Endpoint), SafeEndpoint(cs.Endpoint))
		}
		cfg.Endpoint, cfg.Key = cs.Endpoint, cs.Key
		cfg.InsecureSkipVerify = cfg.InsecureSkipVerify || cs.DisableServerCertificateValidation
	}
	if err := checkEndpoint(cfg.Endpoint); err != nil {
		return cfg, err
	}
	switch {
	case cfg.Key != "" && cfg.Credential != nil:
		return cfg, configError("set only one of Key and Credential")
	case cfg.Key == "" && cfg.Credential == nil:
		return cfg, configError("no credential: set Key, Credential or ConnectionString")
	}
	if cfg.Database == "" {
		cfg.Database = DefaultDatabase
	}
	if cfg.Container == "" {
		cfg.Container = DefaultContainer
	}
	return cfg, nil
}

// checkEndpoint refuses what cannot be an account URL up front: azcosmos
// would accept "myacct.documents.azure.com:443" and fail every request
// later with an unsupported-protocol transport error that looks transient.
// The endpoint is not echoed: what is not an account URL may be a
// connection string or a key pasted in the wrong place.
func checkEndpoint(endpoint string) error {
	switch {
	case endpoint == "":
		return configError("Endpoint is required")
	case looksLikeConnectionString(endpoint):
		return configError("Endpoint holds a connection string (AccountEndpoint=...;AccountKey=...): set it as the ConnectionString (%s), not as the Endpoint (%s)", EnvConnectionString, EnvEndpoint)
	case SafeEndpoint(endpoint) == "":
		return configError("Endpoint is not an account URL: it needs an http(s) scheme and a host, e.g. https://myacct.documents.azure.com:443/")
	}
	return nil
}

// looksLikeConnectionString reports whether s has a connection string's
// segments (Name=Value separated by ';'), which no account URL has.
func looksLikeConnectionString(s string) bool {
	l := strings.ToLower(s)
	return strings.Contains(l, "accountkey=") || strings.Contains(l, "accountendpoint=") || strings.Contains(s, ";")
}

// SafeEndpoint returns the scheme, host and port of an account URL, with
// a trailing slash: the part of an endpoint errors and logs may show. It
// is "" when endpoint is not an http(s) URL with a host (a connection
// string or a key given as the endpoint, which must be shown nowhere).
// User information, path, query and fragment are left out: a key or
// token can hide in any of them.
func SafeEndpoint(endpoint string) string {
	if looksLikeConnectionString(endpoint) {
		return ""
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host + "/"
}

func sameEndpoint(a, b string) bool {
	return strings.TrimRight(strings.ToLower(a), "/") == strings.TrimRight(strings.ToLower(b), "/")
}

// newClient builds the azcosmos client for a resolved Config; tp traces
// its requests unless cfg.ClientOptions sets a TracingProvider.
func (cfg Config) newClient(tp trace.TracerProvider) (*azcosmos.Client, error) {
	opts := &azcosmos.ClientOptions{}
	if cfg.ClientOptions != nil {
		o := *cfg.ClientOptions
		opts = &o
	}
	// Batches carry HTML payloads at their size (internal/cosmos/batchbody.go).
	opts.PerCallPolicies = append(slices.Clip(opts.PerCallPolicies), cosmos.UnescapeHTMLPolicy())
	if cfg.InsecureSkipVerify && opts.Transport == nil {
		// Only for the emulator's self-signed certificate; see Config.
		opts.Transport = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec
	}
	// azcore retries nothing; the store retries 429s and counts every
	// attempt (internal/cosmos/retry.go).
	opts.Retry = cosmos.SDKRetryOptions(opts.Retry)
	opts.PerRetryPolicies = append(slices.Clone(opts.PerRetryPolicies), cosmos.CountAttempts())
	if !opts.TracingProvider.NewTracer(instrumentationName, "").Enabled() { // the caller set none
		if tp == nil {
			tp = otel.GetTracerProvider()
		}
		opts.TracingProvider = NewTracingProvider(tp)
	}
	if cfg.Key != "" {
		cred, err := azcosmos.NewKeyCredential(cfg.Key)
		if err != nil {
			return nil, configError("account key: %v", err)
		}
		return azcosmos.NewClientWithKey(cfg.Endpoint, cred, opts)
	}
	if cfg.Audience != "" {
		setAudience(opts, cfg.Audience)
	}
	return azcosmos.NewClient(cfg.Endpoint, cfg.Credential, opts)
}
