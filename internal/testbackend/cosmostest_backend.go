package testbackend

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/cosmostest"
)

func init() {
	// cosmostest always runs, and runs first: with one partition key range,
	// then with several.
	factories = append([]factory{{NameCosmostest, cosmostestBackend}, {NameCosmostestRanges, cosmostestRangesBackend}}, factories...)
}

// CosmostestRanges is how many partition key ranges (physical partitions)
// the NameCosmostestRanges backend models.
const CosmostestRanges = 8

// cosmostestBackend starts an in-process cosmostest server for t.
func cosmostestBackend(t testing.TB) (Backend, bool) {
	return newCosmostest(t, NameCosmostest, 1), true
}

// cosmostestRangesBackend starts an in-process cosmostest server whose
// containers have CosmostestRanges physical partitions, so cross-partition
// queries come back one range per page, with empty pages.
func cosmostestRangesBackend(t testing.TB) (Backend, bool) {
	return newCosmostest(t, NameCosmostestRanges, CosmostestRanges), true
}

func newCosmostest(t testing.TB, name string, ranges int) Backend {
	s := cosmostest.NewTestServer(t, &cosmostest.Options{Auth: cosmostest.AuthKey, PartitionKeyRanges: ranges})
	gaps := map[string]string{}
	if ranges == 1 {
		gaps[GapPartitionKeyRanges] = onePartition
	}
	b := Backend{
		Name:     name,
		Endpoint: s.Endpoint(),
		Key:      s.Key(),
		Gaps:     gaps,
		newClient: func(key string, opts *azcosmos.ClientOptions) (*azcosmos.Client, error) {
			if key == s.Key() {
				return s.NewClient(opts)
			}
			return keyClient(s.Endpoint(), nil)(key, opts)
		},
	}
	return finish(t, b)
}
