package testbackend

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/cosmostest"
)

// EnvLagSeed overrides the seed of the cosmostest-lagging backend's
// replica choice, to repeat or vary a run.
const EnvLagSeed = "CDB_LAG_SEED"

// LagOptions are the lagging-replica settings of the cosmostest-lagging
// backend: a read without a covering session token may miss up to three of
// a partition's latest writes made in the last two seconds.
func LagOptions() *cosmostest.LagOptions {
	seed := int64(1)
	if v, err := strconv.ParseInt(os.Getenv(EnvLagSeed), 10, 64); err == nil && v != 0 {
		seed = v
	}
	return &cosmostest.LagOptions{Versions: 3, Window: 2 * time.Second, Seed: seed}
}

func init() {
	// cosmostest always runs, and runs first; its lagging mode follows,
	// for the tests that opt in (AllProviders).
	factories = append([]factory{
		{name: NameCosmostest, make: cosmostestBackend(NameCosmostest, nil)},
		{name: NameCosmostestLagging, make: cosmostestBackend(NameCosmostestLagging, LagOptions()), optIn: true},
	}, factories...)
}

// cosmostestBackend returns a factory that starts an in-process cosmostest
// server for t, lagging when lag is set.
func cosmostestBackend(name string, lag *cosmostest.LagOptions) func(t testing.TB) (Backend, bool) {
	return func(t testing.TB) (Backend, bool) {
		s := cosmostest.NewTestServer(t, &cosmostest.Options{Auth: cosmostest.AuthKey, Lag: lag})
		b := Backend{
			Name:     name,
			Endpoint: s.Endpoint(),
			Key:      s.Key(),
			Gaps:     map[string]string{},
			Server:   s,
			newClient: func(key string, opts *azcosmos.ClientOptions) (*azcosmos.Client, error) {
				if key == s.Key() {
					return s.NewClient(opts)
				}
				return keyClient(s.Endpoint(), nil)(key, opts)
			},
		}
		return finish(t, b), true
	}
}
