package cdb_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/duroxide/providertest"
	"github.com/duroxide-go/cdb/internal/testbackend"
)

// factory runs the duroxide validation suite and the durabletest suites
// against the Cosmos provider: every test gets its own container in a
// database shared by the run.
type factory struct {
	b  testbackend.Backend
	db string
	// leases gives every provider Cosmos leases (cdb.Leases).
	leases bool
}

// instance is a provider of the suite with SDK access to its container,
// for the factory's CorruptInstanceHistory and MaxAttemptCount.
type instance struct {
	*cdb.Provider
	container *azcosmos.ContainerClient
}

func newFactory(t *testing.T, b testbackend.Backend) *factory {
	db := testbackend.NewDatabaseName(t)
	ctx := t.Context()
	_, err := b.Client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: db}, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		if d, err := b.Client.NewDatabase(db); err == nil {
			_, _ = d.Delete(context.Background(), nil)
		}
	})
	return &factory{b: b, db: db}
}

// newCosmosProvider opens a provider on a fresh container (a harness in
// the run's database) with the suite's maintenance timings.
func (f *factory) newCosmosProvider(t *testing.T, opts cdb.Options) *instance {
	t.Helper()
	if opts.MaintenanceInterval == 0 {
		opts.MaintenanceInterval = 100 * time.Millisecond
	}
	if opts.OutboxMinAge == 0 {
		opts.OutboxMinAge = 50 * time.Millisecond
	}
	// The suite checks the contract's exact lock expiry; the processes of a
	// test share a clock (the harness leaves no skew margin;
	// clockskew_test.go checks the margin).
	h := newHarness(t, opts, onBackend(f.b), inContainer(f.db, testbackend.NewName(t, "c")))
	return &instance{Provider: h.p, container: h.sdk}
}

func (f *factory) NewProvider(t *testing.T) duroxide.Provider {
	var o cdb.Options
	if f.leases {
		l, err := cdb.NewLeases(cdb.LeaseOptions{LeaseDuration: 3 * time.Second, RenewInterval: time.Second})
		require.NoError(t, err)
		o.Leases = l
	}
	return f.newCosmosProvider(t, o)
}

func (f *factory) LockTimeout() time.Duration        { return time.Second }
func (f *factory) ShortPollThreshold() time.Duration { return 500 * time.Millisecond }

// CorruptInstanceHistory overwrites every stored event with bytes no
// decoder accepts, through the SDK, like an operator's bad edit would.
func (f *factory) CorruptInstanceHistory(t *testing.T, p duroxide.Provider, inst string) {
	c := p.(*instance).container
	ctx := t.Context()
	tok := cdb.SessionTokenFor(p.(*instance).Provider, inst)
	pager := c.NewQueryItemsPager("SELECT * FROM c WHERE c.type = 'history'", azcosmos.NewPartitionKeyString(inst), &azcosmos.QueryOptions{SessionToken: &tok})
	n := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		require.NoError(t, err)
		for _, raw := range page.Items {
			var doc map[string]any
			require.NoError(t, json.Unmarshal(raw, &doc))
			doc["eventData"] = "NOT_VALID_JSON{{{"
			body, _ := json.Marshal(doc)
			r, err := c.ReplaceItem(ctx, azcosmos.NewPartitionKeyString(inst), doc["id"].(string), body, nil)
			require.NoError(t, err)
			if r.SessionToken != nil {
				cdb.ObserveSessionToken(p.(*instance).Provider, inst, *r.SessionToken)
			}
			n++
		}
	}
	require.NotZero(t, n, "no history to corrupt for %s", inst)
}

func (f *factory) MaxAttemptCount(t *testing.T, p duroxide.Provider, inst string) uint32 {
	c := p.(*instance).container
	// Read what the provider wrote: on a lagging replica only its session
	// token guarantees that.
	tok := cdb.SessionTokenFor(p.(*instance).Provider, inst)
	pager := c.NewQueryItemsPager("SELECT VALUE c.attemptCount FROM c WHERE c.type = 'orch_queue'", azcosmos.NewPartitionKeyString(inst), &azcosmos.QueryOptions{SessionToken: &tok})
	var m uint32
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		require.NoError(t, err)
		for _, raw := range page.Items {
			var n uint32
			require.NoError(t, json.Unmarshal(raw, &n))
			m = max(m, n)
		}
	}
	return m
}

func TestValidation(t *testing.T) {
	t.Parallel()
	testbackend.ForEachProvider(t, func(t *testing.T, b testbackend.Backend) {
		providertest.Run(t, newFactory(t, b))
	})
}
