package testbackend

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/cosmostest"
)

func init() {
	// cosmostest always runs, and runs first.
	factories = append([]factory{{NameCosmostest, cosmostestBackend}}, factories...)
}

// cosmostestBackend starts an in-process cosmostest server for t.
func cosmostestBackend(t testing.TB) (Backend, bool) {
	s := cosmostest.NewTestServer(t, &cosmostest.Options{Auth: cosmostest.AuthKey})
	b := Backend{
		Name:     NameCosmostest,
		Endpoint: s.Endpoint(),
		Key:      s.Key(),
		Gaps:     map[string]string{},
		newClient: func(key string, opts *azcosmos.ClientOptions) (*azcosmos.Client, error) {
			if key == s.Key() {
				return s.NewClient(opts)
			}
			return keyClient(s.Endpoint(), nil)(key, opts)
		},
	}
	return finish(t, b), true
}
