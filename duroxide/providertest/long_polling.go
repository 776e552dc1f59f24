package providertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// long_polling.rs: short-polling providers return at once; long-polling
// providers wait for work up to poll_timeout, and never much longer.
//
// test_short_poll_returns_immediately and
// test_short_poll_work_item_returns_immediately run only for short-polling
// providers, test_long_poll_waits_for_timeout and
// test_long_poll_work_item_waits_for_timeout only for long-polling ones
// (see LongPoller); test_fetch_respects_timeout_upper_bound runs for both.
var longPollingTests = []Test{
	{Name: "test_short_poll_returns_immediately", Func: testShortPollReturnsImmediately, Applies: shortPollingOnly,
		LeftOut: "defined for short-polling providers only; this provider long-polls"},
	{Name: "test_long_poll_waits_for_timeout", Func: testLongPollWaitsForTimeout, Applies: supportsLongPolling,
		LeftOut: "defined for long-polling providers only; this provider short-polls (Rust does not register it for such providers)"},
	{Name: "test_fetch_respects_timeout_upper_bound", Func: testFetchRespectsTimeoutUpperBound},
	{Name: "test_short_poll_work_item_returns_immediately", Func: testShortPollWorkItemReturnsImmediately, Applies: shortPollingOnly,
		LeftOut: "defined for short-polling providers only; this provider long-polls"},
	{Name: "test_long_poll_work_item_waits_for_timeout", Func: testLongPollWorkItemWaitsForTimeout, Applies: supportsLongPolling,
		LeftOut: "defined for long-polling providers only; this provider short-polls (Rust does not register it for such providers)"},
}

// timedFetch fetches an orchestration item from p with pollTimeout and
// reports how long it took.
func timedFetch(t *testing.T, p duroxide.Provider, pollTimeout time.Duration) (*duroxide.OrchestrationItem, time.Duration) {
	t.Helper()
	start := time.Now()
	item, err := p.FetchOrchestrationItem(t.Context(), testLock, pollTimeout, nil)
	elapsed := time.Since(start)
	require.NoError(t, err)
	return item, elapsed
}

// timedFetchWork is timedFetch for the worker queue.
func timedFetchWork(t *testing.T, p duroxide.Provider, pollTimeout time.Duration) (*duroxide.LockedWorkItem, time.Duration) {
	t.Helper()
	start := time.Now()
	w, err := p.FetchWorkItem(t.Context(), testLock, pollTimeout, nil, duroxide.DefaultOnly())
	elapsed := time.Since(start)
	require.NoError(t, err)
	return w, elapsed
}

func testShortPollReturnsImmediately(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	item, elapsed := timedFetch(t, p, 500*time.Millisecond)
	require.Nil(t, item)
	require.Less(t, elapsed, f.ShortPollThreshold(), "a short-polling provider must ignore poll_timeout")
}

func testLongPollWaitsForTimeout(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	item, elapsed := timedFetch(t, p, 500*time.Millisecond)
	require.Nil(t, item)
	require.GreaterOrEqual(t, elapsed, 500*time.Millisecond, "a long-polling provider waits for poll_timeout")
}

func testFetchRespectsTimeoutUpperBound(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	item, elapsed := timedFetch(t, p, 300*time.Millisecond)
	require.Nil(t, item)
	require.Less(t, elapsed, 500*time.Millisecond, "a fetch must not wait much longer than poll_timeout")
}

func testShortPollWorkItemReturnsImmediately(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	w, elapsed := timedFetchWork(t, p, 500*time.Millisecond)
	require.Nil(t, w)
	require.Less(t, elapsed, f.ShortPollThreshold(), "a short-polling provider must ignore poll_timeout")
}

func testLongPollWorkItemWaitsForTimeout(t *testing.T, f Factory) {
	t.Parallel()
	_, p := newProvider(t, f)
	w, elapsed := timedFetchWork(t, p, 500*time.Millisecond)
	require.Nil(t, w)
	require.GreaterOrEqual(t, elapsed, 500*time.Millisecond, "a long-polling provider waits for poll_timeout")
}
