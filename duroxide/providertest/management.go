package providertest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// Port of duroxide src/provider_validation/management.rs (13 tests): the
// ProviderAdmin discovery and metrics methods, and Provider.InstanceStats.

var managementTests = []Test{
	{Name: "test_list_instances", Func: testListInstances},
	{Name: "test_list_instances_by_status", Func: testListInstancesByStatus},
	{Name: "test_list_executions", Func: testListExecutions},
	{Name: "test_get_instance_info", Func: testGetInstanceInfo},
	{Name: "test_get_execution_info", Func: testGetExecutionInfo},
	{Name: "test_get_system_metrics", Func: testGetSystemMetrics},
	{Name: "test_get_queue_depths", Func: testGetQueueDepths},
	{Name: "test_get_instance_stats_nonexistent", Func: testGetInstanceStatsNonexistent},
	{Name: "test_get_instance_stats_history", Func: testGetInstanceStatsHistory},
	{Name: "test_get_instance_stats_kv", Func: testGetInstanceStatsKv},
	{Name: "test_get_instance_stats_carry_forward", Func: testGetInstanceStatsCarryForward},
	{Name: "test_get_instance_stats_kv_delta_only", Func: testGetInstanceStatsKvDeltaOnly},
	{Name: "test_get_instance_stats_kv_merged", Func: testGetInstanceStatsKvMerged},
}

// mgmtStartAndAck enqueues startItem(instance), fetches it and acks
// execution 1 with event and md.
func mgmtStartAndAck(t *testing.T, p duroxide.Provider, instance string, ev duroxide.Event, md duroxide.ExecutionMetadata) {
	t.Helper()
	enqueueOrch(t, p, startItem(instance))
	item := mustFetchInstance(t, p, testLock, instance)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{ev},
		Metadata:     md,
	})
}

// mustInstanceStats reads the instance's stats and requires them.
func mustInstanceStats(t *testing.T, p duroxide.Provider, instance string) *duroxide.SystemStats {
	t.Helper()
	s, err := p.InstanceStats(t.Context(), instance)
	require.NoError(t, err, "get_instance_stats")
	require.NotNil(t, s, "instance %s should exist", instance)
	return s
}

func testListInstances(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	ids := []string{"mgmt-inst-0", "mgmt-inst-1", "mgmt-inst-2"}
	for _, id := range ids {
		createInstance(t, p, id)
	}
	got, err := a.ListInstances(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(got), 3, "should list all created instances")
	for _, id := range ids {
		assert.Contains(t, got, id)
	}
}

func testListInstancesByStatus(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	mgmtStartAndAck(t, p, "mgmt-completed", startedEvent("mgmt-completed", 1), statusMetadata(duroxide.StatusCompleted, "done"))

	got, err := a.ListInstancesByStatus(ctx, duroxide.StatusCompleted)
	require.NoError(t, err)
	assert.Contains(t, got, "mgmt-completed", "should list the completed instance")
}

func testListExecutions(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	mgmtStartAndAck(t, p, "mgmt-multi-exec", startedEvent("mgmt-multi-exec", 1), duroxide.ExecutionMetadata{})

	got, err := a.ListExecutions(ctx, "mgmt-multi-exec")
	require.NoError(t, err)
	assert.Contains(t, got, uint64(1), "should list execution 1")
}

func testGetInstanceInfo(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	mgmtStartAndAck(t, p, "mgmt-info",
		event("mgmt-info", 1, 1, duroxide.OrchestrationStarted{Name: "InfoOrch", Version: "2.0.0", Input: "test"}),
		duroxide.ExecutionMetadata{OrchestrationName: ptr("InfoOrch"), OrchestrationVersion: ptr("2.0.0")})

	info, err := a.InstanceInfo(ctx, "mgmt-info")
	require.NoError(t, err)
	require.NotNil(t, info)
	assert.Equal(t, "mgmt-info", info.InstanceID)
	assert.Equal(t, "InfoOrch", info.OrchestrationName)
	assert.Equal(t, "2.0.0", info.OrchestrationVersion)
	assert.Equal(t, uint64(1), info.CurrentExecutionID)
}

func testGetExecutionInfo(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	mgmtStartAndAck(t, p, "mgmt-exec-info", startedEvent("mgmt-exec-info", 1),
		duroxide.ExecutionMetadata{Status: ptr(duroxide.StatusCompleted), Output: ptr("result")})

	info, err := a.ExecutionInfo(ctx, "mgmt-exec-info", 1)
	require.NoError(t, err)
	require.NotNil(t, info)
	assert.Equal(t, uint64(1), info.ExecutionID)
	assert.Equal(t, duroxide.StatusCompleted, info.Status)
	assert.Equal(t, ptr("result"), info.Output)
}

func testGetSystemMetrics(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	before, err := a.SystemMetrics(ctx)
	require.NoError(t, err)
	require.NotNil(t, before)

	mgmtStartAndAck(t, p, "mgmt-metrics", startedEvent("mgmt-metrics", 1), runningMetadata())

	after, err := a.SystemMetrics(ctx)
	require.NoError(t, err)
	require.NotNil(t, after)
	assert.Greater(t, after.TotalInstances, before.TotalInstances, "total_instances should increase")
	assert.Positive(t, after.TotalEvents, "total_events should be > 0")
}

func testGetQueueDepths(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	a := admOf(t, p)
	before, err := a.QueueDepths(ctx)
	require.NoError(t, err)
	require.NotNil(t, before)

	enqueueOrch(t, p, startItem("mgmt-queue"))

	after, err := a.QueueDepths(ctx)
	require.NoError(t, err)
	require.NotNil(t, after)
	assert.Greater(t, after.OrchestratorQueue, before.OrchestratorQueue, "orchestrator_queue should increase")
}

func testGetInstanceStatsNonexistent(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	s, err := p.InstanceStats(ctx, "no-such-instance")
	require.NoError(t, err)
	assert.Nil(t, s, "a nonexistent instance has no stats")
}

func testGetInstanceStatsHistory(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "stats-hist")
	s := mustInstanceStats(t, p, "stats-hist")
	assert.GreaterOrEqual(t, s.HistoryEventCount, uint64(1), "should have at least 1 event")
	assert.Positive(t, s.HistorySizeBytes, "history should have a non-zero size")
	assert.Zero(t, s.KVUserKeyCount, "no KV keys set")
	assert.Zero(t, s.KVTotalValueBytes, "no KV value bytes")
	assert.Zero(t, s.QueuePendingCount, "no carry-forward events")
}

func testGetInstanceStatsKv(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "stats-kv")
	admPokeAck(t, p, "stats-kv", 1, []duroxide.Event{
		kvSet("stats-kv", 1, 100, "k1", "aaa", 0),
		kvSet("stats-kv", 1, 101, "k2", "bbbbb", 0),
		orchestrationCompletedEvent("stats-kv", 1, 102, "done"),
	}, duroxide.ExecutionMetadata{Status: ptr(duroxide.StatusCompleted), Output: ptr("done")})

	s := mustInstanceStats(t, p, "stats-kv")
	assert.Equal(t, uint64(2), s.KVUserKeyCount, "should have 2 KV keys")
	assert.Equal(t, uint64(8), s.KVTotalValueBytes, "3 + 5 = 8 bytes")
}

func testGetInstanceStatsCarryForward(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	mgmtStartAndAck(t, p, "cf-stats", event("cf-stats", 1, 1, duroxide.OrchestrationStarted{
		Name: testOrchName, Version: testOrchVersion, Input: testInput,
		CarryForwardEvents: []duroxide.CarryForwardEvent{
			{Name: "raised-1", Data: `{"data":"a"}`},
			{Name: "raised-2", Data: `{"data":"b"}`},
			{Name: "raised-3", Data: `{"data":"c"}`},
		},
	}), runningMetadata())

	s := mustInstanceStats(t, p, "cf-stats")
	assert.Equal(t, uint64(3), s.QueuePendingCount, "should count 3 carry-forward events")
	assert.GreaterOrEqual(t, s.HistoryEventCount, uint64(1), "should have at least 1 event")
	assert.Positive(t, s.HistorySizeBytes, "history should have a non-zero size")
	assert.Zero(t, s.KVUserKeyCount, "no KV keys set")
}

func testGetInstanceStatsKvDeltaOnly(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	createInstance(t, p, "kv-delta-stats")
	admPokeAck(t, p, "kv-delta-stats", 1, []duroxide.Event{
		kvSet("kv-delta-stats", 1, 100, "dk1", "xxx", 0),
		kvSet("kv-delta-stats", 1, 101, "dk2", "yyyyyy", 0),
		activityScheduledEvent("kv-delta-stats", 1, 102, "Noop", "{}"),
	}, duroxide.ExecutionMetadata{})

	s := mustInstanceStats(t, p, "kv-delta-stats")
	assert.Equal(t, uint64(2), s.KVUserKeyCount, "should count 2 delta-only KV keys")
	assert.Equal(t, uint64(9), s.KVTotalValueBytes, "3 + 6 = 9 bytes from the delta")
	assert.Zero(t, s.QueuePendingCount, "no carry-forward events")
}

func testGetInstanceStatsKvMerged(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	const inst = "kv-merged-stats"
	createInstance(t, p, inst)

	enqueueOrch(t, p, externalRaised(inst, "poke1", "{}"))
	item := mustFetchInstance(t, p, testLock, inst)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, HistoryDelta: []duroxide.Event{
		kvSet(inst, 1, 100, "mk1", "aaa", 0),
		kvSet(inst, 1, 101, "mk2", "bb", 0),
		activityScheduledEvent(inst, 1, 102, "Noop", "{}"),
	}})

	s := mustInstanceStats(t, p, inst)
	assert.Equal(t, uint64(2), s.KVUserKeyCount, "delta phase: 2 keys")
	assert.Equal(t, uint64(5), s.KVTotalValueBytes, "delta phase: 3 + 2 = 5 bytes")

	enqueueOrch(t, p, externalRaised(inst, "poke2", "{}"))
	item = mustFetchInstance(t, p, testLock, inst)
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1,
		HistoryDelta: []duroxide.Event{
			kvSet(inst, 1, 200, "mk1", "zzzzz", 1),
			orchestrationCompletedEvent(inst, 1, 201, "done"),
		},
		Metadata: duroxide.ExecutionMetadata{Status: ptr(duroxide.StatusCompleted), Output: ptr("done")},
	})

	s = mustInstanceStats(t, p, inst)
	assert.Equal(t, uint64(2), s.KVUserKeyCount, "merged: still 2 keys (an overwrite, not a duplicate)")
	assert.Equal(t, uint64(7), s.KVTotalValueBytes, "merged: 5 + 2 = 7 bytes")
	assert.Zero(t, s.QueuePendingCount, "no carry-forward events")
}
