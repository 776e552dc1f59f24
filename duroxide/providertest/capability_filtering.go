package providertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// Port of duroxide src/provider_validation/capability_filtering.rs (20
// tests): fetch filtering by the execution's pinned duroxide version
// (Phase 1: first range only, NULL always compatible, empty list matches
// nothing), pinned versions stored from ack metadata, and corrupted
// history (filter applied before decoding; history_error instead of Err).
// Five tests use the factory's CorruptInstanceHistory/MaxAttemptCount.

var capabilityFilteringTests = []Test{
	{Name: "test_fetch_with_filter_none_returns_any_item", Func: testFetchWithFilterNoneReturnsAnyItem},
	{Name: "test_fetch_with_compatible_filter_returns_item", Func: testFetchWithCompatibleFilterReturnsItem},
	{Name: "test_fetch_with_incompatible_filter_skips_item", Func: testFetchWithIncompatibleFilterSkipsItem},
	{Name: "test_fetch_filter_skips_incompatible_selects_compatible", Func: testFetchFilterSkipsIncompatibleSelectsCompatible},
	{Name: "test_fetch_filter_does_not_lock_skipped_instances", Func: testFetchFilterDoesNotLockSkippedInstances},
	{Name: "test_fetch_filter_null_pinned_version_always_compatible", Func: testFetchFilterNullPinnedVersionAlwaysCompatible},
	{Name: "test_fetch_filter_boundary_versions", Func: testFetchFilterBoundaryVersions},
	{Name: "test_pinned_version_stored_via_ack_metadata", Func: testPinnedVersionStoredViaAckMetadata},
	{Name: "test_pinned_version_immutable_across_ack_cycles", Func: testPinnedVersionImmutableAcrossAckCycles},
	{Name: "test_continue_as_new_execution_gets_own_pinned_version", Func: testContinueAsNewExecutionGetsOwnPinnedVersion},
	{Name: "test_filter_with_empty_supported_versions_returns_nothing", Func: testFilterWithEmptySupportedVersionsReturnsNothing},
	{Name: "test_concurrent_filtered_fetch_no_double_lock", Func: testConcurrentFilteredFetchNoDoubleLock},
	{Name: "test_ack_stores_pinned_version_via_metadata_update", Func: testAckStoresPinnedVersionViaMetadataUpdate},
	{Name: "test_provider_updates_pinned_version_when_told", Func: testProviderUpdatesPinnedVersionWhenTold},
	{Name: "test_fetch_corrupted_history_filtered_vs_unfiltered", Func: testFetchCorruptedHistoryFilteredVsUnfiltered},
	{Name: "test_fetch_deserialization_error_increments_attempt_count", Func: testFetchDeserializationErrorIncrementsAttemptCount},
	{Name: "test_fetch_deserialization_error_eventually_reaches_poison", Func: testFetchDeserializationErrorEventuallyReachesPoison},
	{Name: "test_fetch_filter_applied_before_history_deserialization", Func: testFetchFilterAppliedBeforeHistoryDeserialization},
	{Name: "test_fetch_single_range_only_uses_first_range", Func: testFetchSingleRangeOnlyUsesFirstRange},
	{Name: "test_ack_appends_event_to_corrupted_history", Func: testAckAppendsEventToCorruptedHistory},
}

// capLock is the module's hard-coded lock (Rust LOCK_TIMEOUT).
const capLock = 30 * time.Second

func capVer(major, minor, patch uint64) duroxide.SemVer {
	return duroxide.SemVer{Major: major, Minor: minor, Patch: patch}
}

// capRange is a filter holding the single inclusive range [lo, hi].
func capRange(lo, hi duroxide.SemVer) *duroxide.DispatcherCapabilityFilter {
	return &duroxide.DispatcherCapabilityFilter{SupportedDuroxideVersions: []duroxide.SemVerRange{{Min: lo, Max: hi}}}
}

// capStartedEvent is OrchestrationStarted (event 1) stamped with
// duroxideVersion.
func capStartedEvent(instance string, executionID uint64, duroxideVersion string) duroxide.Event {
	e := startedEvent(instance, executionID)
	e.DuroxideVersion = duroxideVersion
	return e
}

// capFetch fetches with filter (30 s lock) and requires no error.
func capFetch(t *testing.T, p duroxide.Provider, filter *duroxide.DispatcherCapabilityFilter) *duroxide.OrchestrationItem {
	t.Helper()
	item, err := p.FetchOrchestrationItem(t.Context(), capLock, 0, filter)
	require.NoError(t, err, "fetch_orchestration_item")
	return item
}

// capAbandon abandons an orchestration item, undoing its attempt.
func capAbandon(t *testing.T, p duroxide.Provider, item *duroxide.OrchestrationItem, ignoreAttempt bool) {
	t.Helper()
	require.NoError(t, p.AbandonOrchestrationItem(t.Context(), item.LockToken, 0, ignoreAttempt), "abandon_orchestration_item")
}

// capPoke enqueues an ExternalRaised named name.
func capPoke(t *testing.T, p duroxide.Provider, instance, name string) {
	t.Helper()
	enqueueOrch(t, p, externalRaised(instance, name, "{}"))
}

// seedInstanceWithVersion is Rust's seed_instance_with_version: enqueue a
// start, fetch until this instance comes up (other instances' items are
// abandoned afterwards with ignore_attempt), and ack it with the pinned
// version on OrchestrationStarted and in the metadata, enqueueing a
// follow-up ExternalRaised in the same ack.
func seedInstanceWithVersion(t *testing.T, p duroxide.Provider, instance string, pinned duroxide.SemVer) {
	t.Helper()
	enqueueOrch(t, p, startItem(instance))
	var others []string
	var token string
	for {
		item := capFetch(t, p, nil)
		require.NotNil(t, item, "seeding %s: work should be available", instance)
		if item.Instance == instance {
			token = item.LockToken
			break
		}
		others = append(others, item.LockToken)
	}
	md := runningMetadata()
	md.PinnedDuroxideVersion = &pinned
	mustAck(t, p, token, duroxide.OrchestrationCommit{
		ExecutionID:       1,
		HistoryDelta:      []duroxide.Event{capStartedEvent(instance, 1, pinned.String())},
		OrchestratorItems: []duroxide.WorkItem{externalRaised(instance, "ping", "{}")},
		Metadata:          md,
	})
	for _, tok := range others {
		_ = p.AbandonOrchestrationItem(t.Context(), tok, 0, true)
	}
}

// capFetchHistoryError fetches without a filter with lock and requires an
// item whose history could not be decoded.
func capFetchHistoryError(t *testing.T, p duroxide.Provider, lock time.Duration, what string) *duroxide.OrchestrationItem {
	t.Helper()
	item, err := p.FetchOrchestrationItem(t.Context(), lock, 0, nil)
	require.NoError(t, err, "%s: corrupted history must give an item with history_error, not an error", what)
	require.NotNil(t, item, "%s: corrupted history must give an item with history_error, not nothing", what)
	require.NotNil(t, item.HistoryError, "%s: history_error should be set", what)
	assert.Empty(t, item.History, "%s: history should be empty when it cannot be decoded", what)
	return item
}

func testFetchWithFilterNoneReturnsAnyItem(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	seedInstanceWithVersion(t, p, "inst-1", capVer(1, 2, 3))
	assert.NotNil(t, capFetch(t, p, nil), "filter=nil should return any item")
}

func testFetchWithCompatibleFilterReturnsItem(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	seedInstanceWithVersion(t, p, "inst-2", capVer(1, 2, 3))
	assert.NotNil(t, capFetch(t, p, capRange(capVer(1, 0, 0), capVer(1, 9, 9))), "a compatible filter should return the item")
}

func testFetchWithIncompatibleFilterSkipsItem(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	seedInstanceWithVersion(t, p, "inst-3", capVer(1, 2, 3))
	assert.Nil(t, capFetch(t, p, capRange(capVer(2, 0, 0), capVer(2, 9, 9))), "an incompatible filter should return nothing")
}

func testFetchFilterSkipsIncompatibleSelectsCompatible(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	seedInstanceWithVersion(t, p, "inst-v1", capVer(1, 0, 0))
	seedInstanceWithVersion(t, p, "inst-v2", capVer(2, 0, 0))

	item := capFetch(t, p, capRange(capVer(2, 0, 0), capVer(2, 9, 9)))
	require.NotNil(t, item, "should return the v2 instance")
	assert.Equal(t, "inst-v2", item.Instance)
	capAbandon(t, p, item, true)

	item = capFetch(t, p, capRange(capVer(1, 0, 0), capVer(1, 9, 9)))
	require.NotNil(t, item, "should return the v1 instance")
	assert.Equal(t, "inst-v1", item.Instance)
}

func testFetchFilterDoesNotLockSkippedInstances(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	seedInstanceWithVersion(t, p, "inst-5", capVer(1, 0, 0))
	assert.Nil(t, capFetch(t, p, capRange(capVer(2, 0, 0), capVer(2, 9, 9))))
	assert.NotNil(t, capFetch(t, p, capRange(capVer(0, 0, 0), capVer(1, 9, 9))),
		"the instance must not have been locked by the incompatible fetch")
}

func testFetchFilterNullPinnedVersionAlwaysCompatible(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueOrch(t, p, startItem("inst-null"))
	item := mustFetchInstance(t, p, capLock, "inst-null")
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{capStartedEvent("inst-null", 1, "0.0.0")},
		Metadata:     runningMetadata(), // no pinned version
	})
	capPoke(t, p, "inst-null", "ping")
	assert.NotNil(t, capFetch(t, p, capRange(capVer(99, 0, 0), capVer(99, 9, 9))),
		"an execution without a pinned version is always compatible")
}

func testFetchFilterBoundaryVersions(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	filter := capRange(capVer(1, 0, 0), capVer(1, 9, 99))

	seedInstanceWithVersion(t, p, "v1-low", capVer(1, 0, 0))
	item := capFetch(t, p, filter)
	require.NotNil(t, item, "1.0.0 is within [1.0.0, 1.9.99]")
	assert.Equal(t, "v1-low", item.Instance)
	capAbandon(t, p, item, true)

	seedInstanceWithVersion(t, p, "v1-high", capVer(1, 9, 99))
	item = capFetch(t, p, filter)
	require.NotNil(t, item, "1.9.99 is within [1.0.0, 1.9.99]")
	capAbandon(t, p, item, true)

	// A separate provider keeps the v1 instances out of the way.
	p2 := f.NewProvider(t)
	seedInstanceWithVersion(t, p2, "v2-exact", capVer(2, 0, 0))
	assert.Nil(t, capFetch(t, p2, filter), "2.0.0 is not within [1.0.0, 1.9.99]")
	assert.NotNil(t, capFetch(t, p2, nil), "v2-exact should be fetchable without a filter")
}

func testPinnedVersionStoredViaAckMetadata(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	seedInstanceWithVersion(t, p, "inst-8", capVer(3, 1, 4))
	assert.NotNil(t, capFetch(t, p, capRange(capVer(3, 0, 0), capVer(3, 9, 9))),
		"the version stored from the ack metadata should be filterable")
}

func testPinnedVersionImmutableAcrossAckCycles(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	seedInstanceWithVersion(t, p, "inst-9", capVer(1, 0, 0))
	filter := capRange(capVer(0, 0, 0), capVer(1, 9, 9))

	item := capFetch(t, p, filter)
	require.NotNil(t, item)
	assert.Equal(t, "inst-9", item.Instance)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: runningMetadata()})

	capPoke(t, p, "inst-9", "ping2")
	assert.NotNil(t, capFetch(t, p, filter), "the pinned version should persist across ack cycles")
}

func testContinueAsNewExecutionGetsOwnPinnedVersion(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "inst-can"
	seedInstanceWithVersion(t, p, inst, capVer(1, 0, 0))

	item := capFetch(t, p, capRange(capVer(0, 0, 0), capVer(1, 9, 9)))
	require.NotNil(t, item)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{continuedAsNewEvent(inst, 1, 2, "{}")},
		OrchestratorItems: []duroxide.WorkItem{duroxide.ContinueAsNewItem{
			Instance: inst, Orchestration: testOrchName, Input: testInput,
			Version: ptr(testOrchVersion), CarryForwardEvents: []duroxide.CarryForwardEvent{},
		}},
		Metadata: kvStatusMetadata(duroxide.StatusContinuedAsNew),
	})

	item = capFetch(t, p, nil)
	require.NotNil(t, item, "the ContinueAsNew item should be fetchable")
	md := runningMetadata()
	md.PinnedDuroxideVersion = ptr(capVer(2, 0, 0))
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  2,
		HistoryDelta: []duroxide.Event{capStartedEvent(inst, 2, "2.0.0")},
		Metadata:     md,
	})

	capPoke(t, p, inst, "ping")
	item = capFetch(t, p, capRange(capVer(2, 0, 0), capVer(2, 9, 9)))
	require.NotNil(t, item, "a v2 filter should match execution 2")
	assert.Equal(t, inst, item.Instance)
	capAbandon(t, p, item, true)

	assert.Nil(t, capFetch(t, p, capRange(capVer(1, 0, 0), capVer(1, 9, 9))),
		"a v1 filter must not match execution 2: its pin is 2.0.0, not inherited from execution 1")
}

func testFilterWithEmptySupportedVersionsReturnsNothing(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	seedInstanceWithVersion(t, p, "inst-empty", capVer(1, 0, 0))
	assert.Nil(t, capFetch(t, p, &duroxide.DispatcherCapabilityFilter{SupportedDuroxideVersions: []duroxide.SemVerRange{}}),
		"an empty version list matches nothing")
}

func testConcurrentFilteredFetchNoDoubleLock(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	seedInstanceWithVersion(t, p, "inst-conc", capVer(1, 0, 0))
	filter := capRange(capVer(0, 0, 0), capVer(1, 9, 9))
	assert.NotNil(t, capFetch(t, p, filter), "the first fetch should succeed")
	assert.Nil(t, capFetch(t, p, filter), "the second fetch should return nothing (instance locked)")
}

func testAckStoresPinnedVersionViaMetadataUpdate(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "inst-backfill"
	enqueueOrch(t, p, startItem(inst))
	item := mustFetchInstance(t, p, capLock, inst)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{capStartedEvent(inst, 1, "1.2.3")},
		Metadata:     runningMetadata(),
	})

	capPoke(t, p, inst, "ping")
	item = mustFetchInstance(t, p, capLock, inst)
	md := runningMetadata()
	md.PinnedDuroxideVersion = ptr(capVer(1, 2, 3))
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: md})

	capPoke(t, p, inst, "ping2")
	assert.NotNil(t, capFetch(t, p, capRange(capVer(1, 0, 0), capVer(1, 9, 9))),
		"a pinned version backfilled by a later ack should be filterable")
}

func testProviderUpdatesPinnedVersionWhenTold(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "inst-update"
	seedInstanceWithVersion(t, p, inst, capVer(1, 0, 0))

	item := capFetch(t, p, capRange(capVer(0, 0, 0), capVer(1, 9, 9)))
	require.NotNil(t, item)
	md := runningMetadata()
	md.PinnedDuroxideVersion = ptr(capVer(2, 0, 0))
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: md})

	capPoke(t, p, inst, "ping2")
	item = capFetch(t, p, capRange(capVer(2, 0, 0), capVer(2, 0, 0)))
	require.NotNil(t, item, "the provider should have stored the new pinned version 2.0.0")
	capAbandon(t, p, item, true)

	assert.Nil(t, capFetch(t, p, capRange(capVer(1, 0, 0), capVer(1, 0, 0))),
		"a v1-only filter must no longer match: the pin was updated to 2.0.0")
}

func testFetchCorruptedHistoryFilteredVsUnfiltered(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	const inst = "inst-corrupt-39"
	seedInstanceWithVersion(t, p, inst, capVer(1, 0, 0))
	f.CorruptInstanceHistory(t, p, inst)

	item, err := p.FetchOrchestrationItem(ctx, capLock, 0, capRange(capVer(2, 0, 0), capVer(2, 9, 9)))
	require.NoError(t, err, "a filtered fetch must not fail on an excluded instance's history")
	assert.Nil(t, item, "a filtered fetch should return nothing for an excluded version")

	item = capFetchHistoryError(t, p, capLock, "unfiltered fetch")
	assert.Equal(t, inst, item.Instance)
	capAbandon(t, p, item, true)
}

func testFetchDeserializationErrorIncrementsAttemptCount(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "inst-deser-41"
	seedInstanceWithVersion(t, p, inst, capVer(1, 0, 0))
	f.CorruptInstanceHistory(t, p, inst)
	shortLock := 50 * time.Millisecond

	item := capFetchHistoryError(t, p, shortLock, "first fetch")
	capAbandon(t, p, item, false)
	sleep(t, 100*time.Millisecond)

	item = capFetchHistoryError(t, p, shortLock, "second fetch")
	capAbandon(t, p, item, false)

	got := f.MaxAttemptCount(t, p, inst)
	assert.GreaterOrEqual(t, got, uint32(2), "attempt_count should be >= 2 after two fetch cycles")
}

func testFetchDeserializationErrorEventuallyReachesPoison(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "inst-poison-42"
	seedInstanceWithVersion(t, p, inst, capVer(1, 0, 0))
	f.CorruptInstanceHistory(t, p, inst)
	shortLock := 50 * time.Millisecond
	const maxAttempts = 5

	for i := 1; i <= maxAttempts; i++ {
		item := capFetchHistoryError(t, p, shortLock, fmt.Sprintf("fetch #%d", i))
		capAbandon(t, p, item, false)
		sleep(t, 100*time.Millisecond)
	}
	got := f.MaxAttemptCount(t, p, inst)
	assert.GreaterOrEqual(t, got, uint32(maxAttempts), "attempt_count should reach %d after %d fetch cycles", maxAttempts, maxAttempts)
}

func testFetchFilterAppliedBeforeHistoryDeserialization(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	const inst = "inst-order-43"
	seedInstanceWithVersion(t, p, inst, capVer(99, 0, 0))
	f.CorruptInstanceHistory(t, p, inst)

	item, err := p.FetchOrchestrationItem(ctx, capLock, 0, capRange(capVer(1, 0, 0), capVer(2, 0, 0)))
	require.NoError(t, err, "the filter must be applied before decoding history")
	assert.Nil(t, item, "an excluded version must not be returned")

	item = capFetchHistoryError(t, p, capLock, "unfiltered fetch")
	capAbandon(t, p, item, true)
}

func testFetchSingleRangeOnlyUsesFirstRange(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	seedInstanceWithVersion(t, p, "inst-range-a", capVer(1, 0, 0))
	seedInstanceWithVersion(t, p, "inst-range-b", capVer(3, 0, 0))
	filter := &duroxide.DispatcherCapabilityFilter{SupportedDuroxideVersions: []duroxide.SemVerRange{
		{Min: capVer(1, 0, 0), Max: capVer(1, 5, 0)},
		{Min: capVer(3, 0, 0), Max: capVer(3, 5, 0)},
	}}

	item := capFetch(t, p, filter)
	require.NotNil(t, item, "should return instance A (first range)")
	assert.Equal(t, "inst-range-a", item.Instance, "Phase 1 uses only the first range")
	capAbandon(t, p, item, true)

	if item := capFetch(t, p, filter); item != nil {
		assert.Equal(t, "inst-range-a", item.Instance, "the second range must be ignored: inst-range-b must never be returned")
	}
}

func testAckAppendsEventToCorruptedHistory(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	const inst = "inst-ack-corrupt-45"
	seedInstanceWithVersion(t, p, inst, capVer(1, 0, 0))
	f.CorruptInstanceHistory(t, p, inst)

	item := capFetchHistoryError(t, p, capLock, "fetch of corrupted history")
	histErr := *item.HistoryError
	details := duroxide.PoisonError{
		AttemptCount: 4,
		MaxAttempts:  3,
		MessageType: duroxide.PoisonMessageType{
			Kind: duroxide.PoisonFailedDeserialization, Instance: inst, ExecutionID: item.ExecutionID, Error: histErr,
		},
		Message: histErr,
	}
	// ErrorDetails::display_message for a FailedDeserialization poison.
	output := fmt.Sprintf("poison: orchestration %s history deserialization failed after %d attempts (max %d): %s",
		inst, details.AttemptCount, details.MaxAttempts, histErr)

	err := p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  item.ExecutionID,
		HistoryDelta: []duroxide.Event{event(inst, item.ExecutionID, 99999, duroxide.OrchestrationFailed{Details: details})},
		Metadata: duroxide.ExecutionMetadata{
			Status:               ptr(duroxide.StatusFailed),
			Output:               ptr(output),
			OrchestrationName:    ptr(item.OrchestrationName),
			OrchestrationVersion: ptr(item.Version),
		},
	})
	require.NoError(t, err, "the ack must succeed: it only appends and never re-reads stored history")

	info, err := admOf(t, p).InstanceInfo(ctx, inst)
	require.NoError(t, err, "get_instance_info")
	assert.Equal(t, duroxide.StatusFailed, info.Status, "the execution should be Failed after the poison ack")
	require.NotNil(t, info.Output, "the output should be set")
	assert.Contains(t, *info.Output, "deserialization failed")
}
