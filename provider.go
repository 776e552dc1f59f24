package cdb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
	"github.com/duroxide-go/cdb/internal/enqueuenotify"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// ProviderName is what Provider.Name reports.
const ProviderName = "cosmosdb"

// Version is this module's version, reported by Provider.Version.
const Version = "0.1.0"

// Provider is the Cosmos DB implementation of duroxide.Provider and
// duroxide.ProviderAdmin. It is safe for concurrent use. Create it with New
// or NewWithContainer and release it with Close.
type Provider struct {
	st     *cosmos.Store
	client *azcosmos.Client // nil when wrapping a caller's container
	opts   Options
	// clock is time.Now unless a test seam replaced it (newProvider).
	clock func() time.Time
	// enqueues are the duroxide.EnqueueNotifier subscribers (notify.go).
	enqueues enqueuenotify.Subscribers
	// ends are the duroxide.InstanceEndNotifier subscribers (notify.go).
	ends enqueuenotify.Ends

	discovery    map[string]*discoveryState // per queue type
	scans        cosmos.Cursors             // where paged scans stopped (internal/cosmos/scan.go)
	orchLocks    locks[*orchLock]
	workLocks    locks[*workLock]
	busy         busyCache // instances found locked
	sweeps       sweepSet  // deletions this process is sweeping
	incompatible busyCache // instances found outside a capability filter
	sessions     busyCache // sessions this process claimed, until their lock ends
	// foreignSessions are (owner, session) pairs where the session was seen
	// held by another owner, until that lock ends: the owner's fetches skip
	// its items without a read.
	foreignSessions busyCache
	claims          claimSet       // candidates a fetch of this process is locking (claims.go)
	oversized       oversizedSet   // instances whose too-large document was reported (oversized.go)
	turns           *turnCache     // state after this process's last turn per instance (turncache.go)
	kept            workCandidates // untried work-item candidates of the last discovery (workcandidates.go)

	// owned are the sessions this process's owners hold: their fetches
	// poll them outside the process's slots (ownedsessions.go).
	owned ownedSessions

	closeOnce sync.Once
	stop      chan struct{}
	wg        sync.WaitGroup
	// unobserve unregisters the metrics (telemetry.go); outboxBacklog is
	// the last maintenance round's count of undelivered intents.
	unobserve     func()
	outboxBacklog atomic.Int64
	// orphansDropped counts messages the orphan rule deleted (releases.go).
	orphansDropped atomic.Int64
}

// New connects to Cosmos DB as cfg says, bootstraps the database and
// container unless cfg.SkipBootstrap, and starts the maintenance loop
// (see RunMaintenance). opts tunes the provider's behaviour; nil means
// the defaults.
//
// Unless cfg.SkipBootstrap, New first reads the account (account.go): it
// fails fast, within ctx, on an unreachable endpoint, and refuses an
// account whose default consistency cannot give read-your-writes. Every
// error is a *duroxide.ProviderError classified like the provider's other
// errors: configuration errors (ErrConfig) and refusals are permanent, a
// refused connection or a timeout is retryable (duroxide.IsRetryable).
func New(ctx context.Context, cfg Config, opts *Options) (*Provider, error) {
	p, err := newFromConfig(ctx, cfg, derefOptions(opts))
	if err != nil {
		return nil, startupError(err)
	}
	return p, nil
}

func newFromConfig(ctx context.Context, cfg Config, opts Options) (*Provider, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	client, err := cfg.newClient(opts.TracerProvider)
	if err != nil {
		return nil, fmt.Errorf("cdb: creating the Cosmos client: %w", err)
	}
	container, err := client.NewContainer(cfg.Database, cfg.Container)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("cdb: %w", err)
	}
	p := newProvider(container, opts, testhooks.From(ctx))
	p.client = client
	if cfg.ClientOptions != nil {
		p.st.UseClientRetry(cfg.ClientOptions.Retry)
	}
	if err := p.bindLeases(); err != nil {
		client.Close()
		return nil, err
	}
	if !cfg.SkipBootstrap {
		err := checkAccount(ctx, p.st, cfg)
		if err == nil {
			err = bootstrap(ctx, p.st, client, cfg.Database, cfg.Container, cfg.Throughput)
		}
		if err != nil {
			client.Close()
			return nil, err
		}
	}
	if opts.Exclusive {
		if err := p.releaseDeadLocks(ctx); err != nil {
			client.Close()
			return nil, err
		}
	}
	p.start()
	return p, nil
}

// startupError classifies an error of New: permanent for configuration
// errors and anything the service refused, retryable for what a retry can
// fix (transport failures, timeouts, throttling), as RequestError decides.
func startupError(err error) error {
	const op = "new"
	var pe *duroxide.ProviderError
	if errors.As(err, &pe) {
		return err
	}
	var c interface{ Retryable() bool }
	switch {
	case errors.Is(err, ErrConfig):
		return &duroxide.ProviderError{Operation: op, Message: err.Error(), Retryable: false, Err: err}
	case errors.As(err, &c):
		return &duroxide.ProviderError{Operation: op, Message: err.Error(), Retryable: c.Retryable(), Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &duroxide.ProviderError{Operation: op, Message: err.Error(), Retryable: true, Err: err}
	}
	return &duroxide.ProviderError{Operation: op, Message: err.Error(), Retryable: false, Err: err}
}

// NewWithContainer wraps a container client the caller already has (and
// keeps owning: Close does not close its client). The container must be
// partitioned by /instanceId with IndexingPolicy(); it is not bootstrapped.
// opts is as for New; nil means the defaults. Its requests run without
// azcore's generic retries, whatever the client was built with (see
// Config.ClientOptions); throttling is retried by the provider, within
// Options.Retry.
func NewWithContainer(ctx context.Context, container *azcosmos.ContainerClient, opts *Options) (*Provider, error) {
	if container == nil {
		return nil, configError("container client is nil")
	}
	o := derefOptions(opts)
	if err := o.check(); err != nil {
		return nil, err // a configuration error, as for a nil container
	}
	// It sends no request, but a caller whose deadline has already passed
	// gets that error rather than a provider whose loops it cannot stop.
	if err := ctx.Err(); err != nil {
		return nil, duroxide.Wrap("new_with_container", err)
	}
	p := newProvider(container, o, testhooks.From(ctx))
	if err := p.bindLeases(); err != nil {
		return nil, err
	}
	p.start()
	return p, nil
}

// derefOptions copies the caller's options, so a later change to them
// does not reach a running provider; nil is the zero value (the defaults).
func derefOptions(opts *Options) Options {
	if opts == nil {
		return Options{}
	}
	return *opts
}

// newProvider builds a provider on container. seam is the test seam the
// constructor's context carried (internal/testhooks; nil in production):
// read once here, so a provider's clock and fault hooks never change.
func newProvider(container *azcosmos.ContainerClient, o Options, seam *testhooks.Seam) *Provider {
	o = o.withDefaults()
	var hooks *cosmos.Hooks
	clock := time.Now
	if seam != nil {
		hooks = seam.Cosmos
		if seam.Now != nil {
			clock = seam.Now
		}
	}
	p := &Provider{st: cosmos.NewStore(container, o.Retry, hooks), opts: o, clock: clock, stop: make(chan struct{}),
		discovery: map[string]*discoveryState{docOrchQueue: {}, docWorkerQueue: {}}, turns: newTurnCache(o.TurnCacheBytes)}
	p.st.SetBackgroundPriority(cmp.Or(o.BackgroundPriority, azcosmos.PriorityLevelLow))
	p.st.SetCallerPriority(callerPriority) // priority.go
	p.unobserve = p.registerMetrics(o.MeterProvider)
	return p
}

// bindLeases attaches Cosmos-backed leases to this provider.
func (p *Provider) bindLeases() error {
	if l, ok := p.opts.Leases.(*Leases); ok {
		return l.bind(p)
	}
	return nil
}

// now reads the provider's clock: time.Now unless a test replaced it
// (internal/testhooks).
func (p *Provider) now() time.Time { return p.clock() }

// lapsedBefore is the instant another process's lock or lease expiry must
// precede for this process to treat it as expired: now less
// MaxClockSkew, since the expiry was written with the holder's clock,
// which may run behind this one by that much.
func (p *Provider) lapsedBefore() time.Time { return p.now().Add(-p.skew()) }

// skew is the clock-skew margin in effect (Options.MaxClockSkew; none when
// negative or the store is Exclusive).
func (p *Provider) skew() time.Duration {
	if p.opts.Exclusive {
		return 0
	}
	return max(p.opts.MaxClockSkew, 0)
}

// start launches background work (the maintenance loop, lease renewal).
func (p *Provider) start() {
	if p.opts.MaintenanceInterval > 0 {
		p.wg.Add(1)
		go p.runMaintenance()
	}
	if l, ok := p.opts.Leases.(*Leases); ok {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			l.run(p.stop)
		}()
	}
}

// Close stops background work and, if New created the Cosmos client,
// closes it. It is safe to call more than once.
func (p *Provider) Close() error {
	p.closeOnce.Do(func() {
		close(p.stop)
		p.wg.Wait()
		p.unobserve()
		if p.client != nil {
			p.client.Close()
		}
	})
	return nil
}

// Name reports "cosmosdb".
func (p *Provider) Name() string { return ProviderName }

// Version reports the module version.
func (p *Provider) Version() string { return Version }

// RequestStats returns the Cosmos requests this provider has sent, by
// kind, with bytes read and request units: the basis of the cost tables in
// docs/costs.md.
func (p *Provider) RequestStats() RequestStats { return p.st.Stats() }

// ResetRequestStats zeroes the request counters.
func (p *Provider) ResetRequestStats() { p.st.ResetStats() }

var _ duroxide.Provider = (*Provider)(nil)

var _ duroxide.DispatchRefuser = (*Provider)(nil)

// RefuseDispatch implements duroxide.DispatchRefuser: ErrClientOnly for a
// provider opened with Options.ClientOnly, else nil.
func (p *Provider) RefuseDispatch() error {
	if p.opts.ClientOnly {
		return ErrClientOnly
	}
	return nil
}
