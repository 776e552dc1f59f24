package durable_test

import (
	"testing"

	"github.com/duroxide-go/cdb/durable/durabletest"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

// memFactory gives each test a fresh in-memory store; it can corrupt
// stored history (durabletest.HistoryCorrupter).
type memFactory struct{}

func (memFactory) NewProvider(*testing.T) duroxide.Provider { return memprovider.New() }

func (memFactory) CorruptInstanceHistory(_ *testing.T, p duroxide.Provider, instance string) {
	p.(*memprovider.Provider).CorruptHistory(instance)
}

// TestE2E runs duroxide's end-to-end samples and runtime behaviour tests
// on the in-memory provider; the Cosmos provider runs them from the root
// package.
func TestE2E(t *testing.T) {
	t.Run("memprovider", func(t *testing.T) {
		durabletest.Run(t, memFactory{})
	})
}
