package durable_test

import (
	"testing"

	"github.com/duroxide-go/cdb/durable/durabletest"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

// TestE2E runs duroxide's end-to-end samples on the in-memory provider;
// the Cosmos provider runs them from the root package.
func TestE2E(t *testing.T) {
	t.Run("memprovider", func(t *testing.T) {
		durabletest.Run(t, durabletest.FactoryFunc(func(*testing.T) duroxide.Provider { return memprovider.New() }))
	})
}
