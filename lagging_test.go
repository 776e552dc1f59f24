package cdb_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
)

// lagTurns is how many instances each run drives through two turns.
const lagTurns = 25

// runLaggedTurns drives lagTurns instances through a first turn on one
// provider (process A) and fetches their second turn on another (process
// B), on a cosmostest server with lagging replicas. It returns how many
// second turns did not load the first turn's history exactly: a stale
// read that the runtime would replay and commit on top of.
func runLaggedTurns(t *testing.T, withTokens bool) (stale int) {
	t.Helper()
	srv := cosmostest.New(t, &cosmostest.Options{Lag: &cosmostest.LagOptions{Versions: 3, Window: time.Hour, Seed: 42}})
	h := &harness{t: t, srv: srv, endpoint: srv.Endpoint(), key: srv.Key(), db: hDatabase, coll: hContainer, clientOpts: hClientOptions()}
	a, b := h.open(cdb.Options{}), h.open(cdb.Options{})
	if !withTokens {
		cdb.DisableSessionTokens(a)
		cdb.DisableSessionTokens(b)
	}
	ctx := t.Context()
	for i := range lagTurns {
		inst := fmt.Sprintf("lag-%d", i)
		require.NoError(t, a.EnqueueForOrchestrator(ctx, hStart(inst), 0))
		first, odd := fetchEventually(t, a, inst)
		stale += odd
		require.NoError(t, a.AckOrchestrationItem(ctx, first.LockToken, duroxide.OrchestrationCommit{
			ExecutionID: 1, HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch")}, Metadata: hRunning("HOrch"),
		}))
		require.NoError(t, a.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "go", Data: "{}"}, 0))
		second, odd := fetchEventually(t, b, inst)
		stale += odd
		if second.HistoryError != nil || len(second.History) != 1 {
			stale++
			t.Logf("%s: second turn loaded %d events (history error %v), want the first turn's 1", inst, len(second.History), second.HistoryError)
		}
		// Park the instance, so later fetches find only the next one.
		require.NoError(t, b.AbandonOrchestrationItem(ctx, second.LockToken, time.Hour, true))
	}
	return stale
}

// fetchEventually fetches until p returns an item for instance: without
// session tokens a lagging replica can hide new work from discovery for a
// while, which only delays it. Items of other instances (parked ones that
// a stale read showed as ready again) are counted as odd and parked again.
func fetchEventually(t *testing.T, p *cdb.Provider, instance string) (item *duroxide.OrchestrationItem, odd int) {
	t.Helper()
	ctx := t.Context()
	eventually(t, time.Minute, func() bool {
		var err error
		item, err = p.FetchOrchestrationItem(ctx, hLock, 0, nil)
		require.NoError(t, err)
		if item != nil && item.Instance != instance {
			t.Logf("fetched %q while waiting for %q", item.Instance, instance)
			odd++
			require.NoError(t, p.AbandonOrchestrationItem(ctx, item.LockToken, time.Hour, true))
			item = nil
		}
		return item != nil
	}, "no orchestration item for %q", instance)
	return item, odd
}

// TestLaggingReplicaNeedsSessionTokens shows that the lagging-replica mode
// catches a provider that sends no session tokens: with the handling off,
// a process that fetches a turn loads a history that misses the turn
// another process committed before; with it on, never.
func TestLaggingReplicaNeedsSessionTokens(t *testing.T) {
	t.Run("without-tokens", func(t *testing.T) {
		stale := runLaggedTurns(t, false)
		require.NotZero(t, stale, "no stale history in %d turns: the lagging mode would not catch a missing session token", lagTurns)
	})
	t.Run("with-tokens", func(t *testing.T) {
		require.Zero(t, runLaggedTurns(t, true), "a turn loaded a stale history although session tokens were sent")
	})
}
