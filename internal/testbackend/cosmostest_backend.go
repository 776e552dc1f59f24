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
	// cosmostest always runs, and runs first: with one partition key range,
	// then with several; its lagging mode follows, for the tests that opt
	// in (AllProviders).
	factories = append([]factory{
		{name: NameCosmostest, make: cosmostestBackend},
		{name: NameCosmostestRanges, make: cosmostestRangesBackend},
		{name: NameCosmostestLagging, make: cosmostestLaggingBackend, optIn: true},
		{name: NameCosmostestPersistent, make: cosmostestPersistentBackend, providersOnRequest: true},
	}, factories...)
}

// CosmostestRanges is how many partition key ranges (physical partitions)
// the NameCosmostestRanges backend models.
const CosmostestRanges = 8

// cosmostestBackend starts an in-process cosmostest server for t.
func cosmostestBackend(t testing.TB) (Backend, bool) {
	return newCosmostest(t, NameCosmostest, 1, nil), true
}

// cosmostestRangesBackend starts an in-process cosmostest server whose
// containers have CosmostestRanges physical partitions, so cross-partition
// queries come back one range per page, with empty pages.
func cosmostestRangesBackend(t testing.TB) (Backend, bool) {
	return newCosmostest(t, NameCosmostestRanges, CosmostestRanges, nil), true
}

// cosmostestLaggingBackend starts an in-process cosmostest server with
// lagging replicas (LagOptions).
func cosmostestLaggingBackend(t testing.TB) (Backend, bool) {
	return newCosmostest(t, NameCosmostestLagging, 1, LagOptions()), true
}

// PersistentCompactAfter is the write-ahead log size after which the
// cosmostest-persistent backend compacts: small, so suites cross
// compactions too.
const PersistentCompactAfter = 256 << 10

// cosmostestPersistentBackend starts an in-process cosmostest server that
// keeps its account in a data directory of t's (write-ahead log and
// snapshots, fsynced before each acknowledgement).
func cosmostestPersistentBackend(t testing.TB) (Backend, bool) {
	return newCosmostestWith(t, NameCosmostestPersistent, &cosmostest.Options{DataDir: t.TempDir(), CompactAfterBytes: PersistentCompactAfter}), true
}

func newCosmostest(t testing.TB, name string, ranges int, lag *cosmostest.LagOptions) Backend {
	return newCosmostestWith(t, name, &cosmostest.Options{PartitionKeyRanges: ranges, Lag: lag})
}

func newCosmostestWith(t testing.TB, name string, opts *cosmostest.Options) Backend {
	o := *opts
	o.Auth = cosmostest.AuthKey
	ranges := max(o.PartitionKeyRanges, 1)
	s := cosmostest.New(t, &o)
	gaps := map[string]string{}
	if ranges == 1 {
		gaps[GapPartitionKeyRanges] = onePartition
	}
	b := Backend{
		Name:     name,
		Endpoint: s.Endpoint(),
		Key:      s.Key(),
		Gaps:     gaps,
		Server:   s,
		newClient: func(key string, opts *azcosmos.ClientOptions) (*azcosmos.Client, error) {
			if key == s.Key() {
				return s.NewClient(opts)
			}
			return keyClient(s.Endpoint(), nil)(key, opts)
		},
	}
	return finish(t, b)
}
