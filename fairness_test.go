package cdb_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
)

// TestDiscoveryIsFairUnderBacklog: a cross-partition query without ORDER
// BY serves one physical partition after another, so a standing backlog
// at the front of the result (here: 100 messages for 10 locked instances,
// more than one discovery page) would hide everything behind it forever.
// cosmostest serves cross-partition results in one fixed order, which is
// exactly that situation. Discovery must still reach the instance behind
// the backlog within a few fetches.
func TestDiscoveryIsFairUnderBacklog(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, nil)
	ctx := t.Context()
	p := newFaultyProvider(t, srv, "fair", nil)
	const busy, perBusy = 10, 10
	for i := 0; i < busy; i++ {
		require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: fmt.Sprintf("busy-%d", i), Orchestration: "O", Input: "{}", ExecutionID: 1}, 0))
	}
	for i := 0; i < busy; i++ {
		it, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
		require.NoError(t, err)
		require.NotNil(t, it, "lock busy instance %d", i)
	}
	for i := 0; i < busy; i++ {
		for j := 0; j < perBusy; j++ {
			require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: fmt.Sprintf("busy-%d", i), Name: "e", Data: fmt.Sprint(j)}, 0))
		}
	}
	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: "late", Orchestration: "O", Input: "{}", ExecutionID: 1}, 0))

	for attempt := 0; attempt < 2*4; attempt++ {
		it, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
		require.NoError(t, err)
		if it != nil {
			require.Equal(t, "late", it.Instance, "only the late instance is unlocked")
			return
		}
	}
	t.Fatal("the instance behind the backlog was never discovered")
}
