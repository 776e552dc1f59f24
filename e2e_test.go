package cdb_test

import (
	"testing"

	"github.com/duroxide-go/cdb/durable/durabletest"
	"github.com/duroxide-go/cdb/internal/testbackend"
)

// TestE2E runs duroxide's end-to-end samples on the Go runtime over the
// Cosmos provider, once per backend (cosmostest-lagging included: the
// runtime must see read-your-writes through the provider's session
// tokens): every sample gets its own container.
func TestE2E(t *testing.T) {
	testbackend.ForEachProvider(t, func(t *testing.T, b testbackend.Backend) {
		durabletest.Run(t, newFactory(t, b))
	})
}
