package cdb_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
)

// Numbers the provider compares in queries must stay exact as doubles
// (Cosmos DB's query engine): these tests use the extreme values.

const exact53 = uint64(1) << 53

func pinned(t *testing.T, h *harness, inst string, v duroxide.SemVer) {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(inst), 0))
	item := mustFetchOrch(t, h.p, inst)
	md := hRunning("HOrch")
	md.PinnedDuroxideVersion = &v
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1, HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch")}, Metadata: md,
	}))
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "go", Data: "1"}, 0))
}

func fetchWith(t *testing.T, p *cdb.Provider, lo, hi duroxide.SemVer) (*duroxide.OrchestrationItem, error) {
	return p.FetchOrchestrationItem(t.Context(), hLock, 0,
		&duroxide.DispatcherCapabilityFilter{SupportedDuroxideVersions: []duroxide.SemVerRange{{Min: lo, Max: hi}}})
}

// TestNumbersPinnedVersionsCompareExactly: the lock condition compares
// version components, so 1.1000.0 is not taken for 2.0.0 (the packed form
// major*1e6+minor*1e3+patch made them equal), and components up to 2^53
// compare exactly.
func TestNumbersPinnedVersionsCompareExactly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	v := duroxide.SemVer{Major: 1, Minor: 1000, Patch: 0}
	pinned(t, h, "minor-1000", v)
	item, err := fetchWith(t, h.p, duroxide.SemVer{Major: 2}, duroxide.SemVer{Major: 2})
	require.NoError(t, err)
	require.Nil(t, item, "a 2.0.0 dispatcher locked an instance pinned to 1.1000.0")
	item, err = fetchWith(t, h.p, v, v)
	require.NoError(t, err)
	require.NotNil(t, item)
	require.NoError(t, h.p.AbandonOrchestrationItem(t.Context(), item.LockToken, hLock, true))

	big := duroxide.SemVer{Major: exact53, Minor: exact53, Patch: exact53 - 1}
	pinned(t, h, "huge", big)
	item, err = fetchWith(t, h.p, duroxide.SemVer{Major: exact53, Minor: exact53, Patch: exact53}, duroxide.SemVer{Major: exact53, Minor: exact53, Patch: exact53})
	require.NoError(t, err)
	require.Nil(t, item, "patch 2^53-1 matched a range starting at patch 2^53")
	item, err = fetchWith(t, h.p, big, big)
	require.NoError(t, err)
	require.NotNil(t, item)
	require.Equal(t, "huge", item.Instance)
}

// TestNumbersAboveTwoToThe53Refused: an execution id, pinned version or
// filter bound above 2^53 is refused with a permanent error, nothing
// written, instead of being compared approximately.
func TestNumbersAboveTwoToThe53Refused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart("x"), 0))
	item := mustFetchOrch(t, h.p, "x")
	before := h.snapshot()
	requirePermanentErr(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: exact53 + 1, HistoryDelta: []duroxide.Event{hStarted("x", "HOrch")}, Metadata: hRunning("HOrch"),
	}))
	md := hRunning("HOrch")
	md.PinnedDuroxideVersion = &duroxide.SemVer{Major: 1, Minor: exact53 + 1}
	requirePermanentErr(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1, HistoryDelta: []duroxide.Event{hStarted("x", "HOrch")}, Metadata: md,
	}))
	h.requireUnchanged(before)
	_, err := h.p.ReadWithExecution(ctx, "x", exact53+1)
	requirePermanentErr(t, err)
	_, err = fetchWith(t, h.p, duroxide.SemVer{}, duroxide.SemVer{Major: exact53 + 1})
	requirePermanentErr(t, err)

	// 2^53 itself is exact and accepted.
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: exact53, HistoryDelta: []duroxide.Event{hEvent("x", exact53, 1, duroxide.OrchestrationStarted{Name: "HOrch", Version: "1.0.0", Input: "{}"})}, Metadata: hRunning("HOrch"),
	}))
	hist, err := h.p.ReadWithExecution(ctx, "x", exact53)
	require.NoError(t, err)
	require.Len(t, hist, 1)
}
