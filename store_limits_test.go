package cdb_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/limits/limitstest"
	"github.com/duroxide-go/cdb/memprovider"
)

// TestStoreLimitsSameOnMemoryAndCosmos: every input Cosmos DB refuses
// (limitstest.Cases: a 2,049-byte or emoji instance id, a 3 MB input,
// output, custom status, KV value or activity result, an invalid UTF-8 KV
// key or session id, ...) is refused by the Cosmos provider and by
// memprovider with its default options alike, with a permanent error of
// kind duroxide.ErrInvalidInput; so code whose unit tests pass on
// memprovider does not meet these refusals first in production.
func TestStoreLimitsSameOnMemoryAndCosmos(t *testing.T) {
	t.Parallel()
	providers := []struct {
		name string
		p    duroxide.Provider
	}{
		{"memory", memprovider.New()},
		{"cosmostest", newHarness(t, cdb.Options{}).p},
	}
	for _, pc := range providers {
		t.Run(pc.name, func(t *testing.T) {
			for _, c := range limitstest.Cases() {
				t.Run(c.Name, func(t *testing.T) {
					err := c.Call(t.Context(), pc.p)
					require.NotErrorIs(t, err, limitstest.ErrSetup)
					require.ErrorIs(t, err, duroxide.ErrInvalidInput)
					require.False(t, duroxide.IsRetryable(err), "%v", err)
				})
			}
		})
	}
}
