package memprovider_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/limits/limitstest"
	"github.com/duroxide-go/cdb/memprovider"
)

// TestDefaultLimitsRefuseWhatCosmosRefuses: with default options every
// input Cosmos DB refuses is refused, permanently, with ErrInvalidInput
// (the root package's TestStoreLimitsSameOnMemoryAndCosmos runs the same
// cases against the Cosmos provider too).
func TestDefaultLimitsRefuseWhatCosmosRefuses(t *testing.T) {
	p := memprovider.New()
	for _, c := range limitstest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			err := c.Call(t.Context(), p)
			require.NotErrorIs(t, err, limitstest.ErrSetup)
			require.ErrorIs(t, err, duroxide.ErrInvalidInput)
			require.False(t, duroxide.IsRetryable(err), "%v", err)
		})
	}
}

// TestRelaxedLimitsAcceptWhatCosmosRefuses: WithRelaxedLimits is the
// explicit way to store what Cosmos DB would refuse.
func TestRelaxedLimitsAcceptWhatCosmosRefuses(t *testing.T) {
	for _, c := range limitstest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			require.NoError(t, c.Call(t.Context(), memprovider.New(memprovider.WithRelaxedLimits())))
		})
	}
}

// TestDefaultLimitsAcceptWhatCosmosStores: ids Cosmos DB stores (slashes,
// quotes, BMP unicode, 2,048 bytes) and a 1 MB input are accepted.
func TestDefaultLimitsAcceptWhatCosmosStores(t *testing.T) {
	p := memprovider.New()
	big := strings.Repeat("x", 1024*1024)
	for _, id := range []string{`a/b\c?d#e"f`, "ünïcødé-日本語", limitstest.ID2049[:2048]} {
		require.NoError(t, p.EnqueueForOrchestrator(t.Context(), duroxide.StartOrchestrationItem{Instance: id, Orchestration: "O", Input: "{}", ExecutionID: 1}, 0), id)
	}
	require.NoError(t, p.EnqueueForOrchestrator(t.Context(), duroxide.ExternalRaisedItem{Instance: "big", Name: "e", Data: big}, 0))
}
