package providertest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// tag_filtering.rs: fetch_work_item returns only activities whose tag
// the TagFilter matches, in FIFO order, and tags survive every path.
var tagFilteringTests = []Test{
	{Name: "test_default_only_fetches_untagged", Func: testDefaultOnlyFetchesUntagged},
	{Name: "test_tags_fetches_only_matching", Func: testTagsFetchesOnlyMatching},
	{Name: "test_default_and_fetches_untagged_and_matching", Func: testDefaultAndFetchesUntaggedAndMatching},
	{Name: "test_none_filter_returns_nothing", Func: testNoneFilterReturnsNothing},
	{Name: "test_multi_tag_filter", Func: testMultiTagFilter},
	{Name: "test_tag_round_trip_preservation", Func: testTagRoundTripPreservation},
	{Name: "test_any_filter_fetches_everything", Func: testAnyFilterFetchesEverything},
	{Name: "test_tag_survives_abandon_and_refetch", Func: testTagSurvivesAbandonAndRefetch},
	{Name: "test_multi_runtime_tag_isolation", Func: testMultiRuntimeTagIsolation},
	{Name: "test_tag_preserved_through_ack_orchestration_item", Func: testTagPreservedThroughAckOrchestrationItem},
}

// mustTags builds a Tags filter.
func mustTags(t *testing.T, tags ...string) duroxide.TagFilter {
	t.Helper()
	f, err := duroxide.Tags(tags...)
	require.NoError(t, err)
	return f
}

// enqueueTagged enqueues activity id of "tag-inst" with tag ("" = untagged).
func enqueueTagged(t *testing.T, p duroxide.Provider, id uint64, tag string) {
	t.Helper()
	var tp *string
	if tag != "" {
		tp = ptr(tag)
	}
	enqueueWork(t, p, taggedActivity("tag-inst", 1, id, "Act", tp))
}

// fetchIDs fetches with filter until nothing is left and returns the ids
// in fetch order (each fetched item stays locked).
func fetchIDs(t *testing.T, p duroxide.Provider, filter duroxide.TagFilter) []uint64 {
	t.Helper()
	var ids []uint64
	for {
		w := tryFetchWork(t, p, testLock, filter)
		if w == nil {
			return ids
		}
		ids = append(ids, activityOf(t, w).ID)
		require.LessOrEqual(t, len(ids), 100, "fetch loop does not end")
	}
}

func testDefaultOnlyFetchesUntagged(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueTagged(t, p, 1, "")
	enqueueTagged(t, p, 2, "gpu")
	enqueueTagged(t, p, 3, "")
	require.Equal(t, []uint64{1, 3}, fetchIDs(t, p, duroxide.DefaultOnly()))
}

func testTagsFetchesOnlyMatching(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueTagged(t, p, 1, "")
	enqueueTagged(t, p, 2, "gpu")
	enqueueTagged(t, p, 3, "cpu")
	enqueueTagged(t, p, 4, "gpu")
	require.Equal(t, []uint64{2, 4}, fetchIDs(t, p, mustTags(t, "gpu")))
}

func testDefaultAndFetchesUntaggedAndMatching(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueTagged(t, p, 1, "")
	enqueueTagged(t, p, 2, "gpu")
	enqueueTagged(t, p, 3, "cpu")
	filter, err := duroxide.DefaultAnd("gpu")
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 2}, fetchIDs(t, p, filter))
}

func testNoneFilterReturnsNothing(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueTagged(t, p, 1, "")
	enqueueTagged(t, p, 2, "gpu")
	require.Nil(t, tryFetchWork(t, p, testLock, duroxide.NoTags()))
	require.Equal(t, []uint64{1, 2}, fetchIDs(t, p, duroxide.AnyTag()), "the None filter locked nothing")
}

func testMultiTagFilter(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueTagged(t, p, 1, "")
	enqueueTagged(t, p, 2, "gpu")
	enqueueTagged(t, p, 3, "cpu")
	enqueueTagged(t, p, 4, "tpu")
	require.Equal(t, []uint64{2, 4}, fetchIDs(t, p, mustTags(t, "gpu", "tpu")))
}

func testTagRoundTripPreservation(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueWork(t, p, taggedActivity("tag-inst", 1, 1, "GpuActivity", ptr("gpu")))
	a := activityOf(t, tryFetchWork(t, p, testLock, mustTags(t, "gpu")))
	require.Equal(t, "GpuActivity", a.Name)
	require.NotNil(t, a.Tag)
	require.Equal(t, "gpu", *a.Tag)
}

func testAnyFilterFetchesEverything(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueTagged(t, p, 1, "")
	enqueueTagged(t, p, 2, "gpu")
	enqueueTagged(t, p, 3, "cpu")
	require.Equal(t, []uint64{1, 2, 3}, fetchIDs(t, p, duroxide.AnyTag()))
}

func testTagSurvivesAbandonAndRefetch(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueTagged(t, p, 1, "gpu")
	enqueueTagged(t, p, 2, "")
	gpu := mustTags(t, "gpu")

	first := tryFetchWork(t, p, testLock, gpu)
	require.NotNil(t, first)
	require.NoError(t, p.AbandonWorkItem(t.Context(), first.LockToken, 0, false))
	again := tryFetchWork(t, p, testLock, gpu)
	require.NotNil(t, again, "the abandoned item still matches its tag")
	a := activityOf(t, again)
	require.Equal(t, uint64(1), a.ID)
	require.NotNil(t, a.Tag)
	require.Equal(t, "gpu", *a.Tag)
	require.GreaterOrEqual(t, again.AttemptCount, uint32(2))
	require.NotEqual(t, first.LockToken, again.LockToken)

	require.NoError(t, p.AbandonWorkItem(t.Context(), again.LockToken, 0, false))
	require.Equal(t, []uint64{2}, fetchIDs(t, p, duroxide.DefaultOnly()), "the abandoned item did not lose its tag")
}

func testMultiRuntimeTagIsolation(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	enqueueTagged(t, p, 1, "")
	enqueueTagged(t, p, 2, "gpu")
	enqueueTagged(t, p, 3, "cpu")
	enqueueTagged(t, p, 4, "fpga")
	enqueueTagged(t, p, 5, "gpu")
	require.Equal(t, []uint64{1}, fetchIDs(t, p, duroxide.DefaultOnly()))
	gpuCPU := mustTags(t, "gpu", "cpu")
	require.Equal(t, uint64(2), activityOf(t, tryFetchWork(t, p, testLock, gpuCPU)).ID)
	require.Equal(t, uint64(3), activityOf(t, tryFetchWork(t, p, testLock, gpuCPU)).ID)
	require.Equal(t, []uint64{4}, fetchIDs(t, p, mustTags(t, "cpu", "fpga")))
	require.Equal(t, []uint64{5}, fetchIDs(t, p, duroxide.AnyTag()))
}

func testTagPreservedThroughAckOrchestrationItem(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	cpu := taggedActivity("tag-inst", 1, 2, "CpuWork", nil)
	gpu := taggedActivity("tag-inst", 1, 3, "GpuWork", ptr("gpu"))
	createInstanceWithActivities(t, p, "tag-inst", cpu, gpu)

	w := tryFetchWork(t, p, testLock, duroxide.DefaultOnly())
	require.Equal(t, "CpuWork", activityOf(t, w).Name)
	require.Nil(t, tryFetchWork(t, p, testLock, duroxide.DefaultOnly()), "the tagged item is not untagged")

	w = tryFetchWork(t, p, testLock, mustTags(t, "gpu"))
	a := activityOf(t, w)
	require.Equal(t, "GpuWork", a.Name)
	require.NotNil(t, a.Tag)
	require.Equal(t, "gpu", *a.Tag)
}
