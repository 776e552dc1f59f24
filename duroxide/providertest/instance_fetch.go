package providertest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// instance_fetch: not in duroxide. A provider that is a
// duroxide.InstanceFetcher locks a named instance exactly as a fetch
// that found it first would: every ready message, oldest first, and
// nothing of other instances; nothing when the instance has no ready
// message or is locked. The runtime fetches so the instances its own
// enqueues readied. A provider without the capability skips the module.
var instanceFetchTests = []Test{
	{Name: "fetch_by_name_takes_that_instance_and_all_its_ready_messages", Func: testFetchByNameTakesAllReady},
	{Name: "fetch_by_name_of_a_locked_or_idle_instance_is_nothing", Func: testFetchByNameOfLockedOrIdle},
	{Name: "fetch_by_name_refuses_a_malformed_id", Func: testFetchByNameRefusesMalformedID},
}

// byName returns p as an InstanceFetcher, or skips the test.
func byName(t *testing.T, p duroxide.Provider) duroxide.InstanceFetcher {
	t.Helper()
	f, ok := p.(duroxide.InstanceFetcher)
	if !ok {
		t.Skip("not applicable in Go: this provider does not implement the optional duroxide.InstanceFetcher, so the runtime only discovers work")
	}
	return f
}

func testFetchByNameTakesAllReady(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	fetcher := byName(t, p)
	createInstance(t, p, "by-name-a")
	createInstance(t, p, "by-name-b")
	enqueueOrch(t, p, externalRaised("by-name-b", "e", "b1")) // older than a's: discovery would take b first
	for _, d := range []string{"a1", "a2", "a3"} {
		enqueueOrch(t, p, externalRaised("by-name-a", "e", d))
	}
	item, err := fetcher.FetchOrchestrationInstance(ctx, "by-name-a", testLock, nil)
	require.NoError(t, err)
	require.NotNil(t, item, "a has ready messages")
	require.Equal(t, "by-name-a", item.Instance)
	var data []string
	for _, m := range item.Messages {
		data = append(data, m.(duroxide.ExternalRaisedItem).Data)
	}
	require.Equal(t, []string{"a1", "a2", "a3"}, data, "every ready message, oldest first")
	require.Len(t, item.History, 1, "the instance's history is loaded")
	other := mustFetch(t, p, testLock)
	require.Equal(t, "by-name-b", other.Instance, "b's message is left for discovery")
	mustAck(t, p, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: runningMetadata()})
	requireNoFetch(t, p, "a's messages were consumed by the turn")
}

func testFetchByNameOfLockedOrIdle(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	fetcher := byName(t, p)
	createInstance(t, p, "by-name-idle")
	item, err := fetcher.FetchOrchestrationInstance(ctx, "by-name-idle", testLock, nil)
	require.NoError(t, err)
	require.Nil(t, item, "no ready message: nothing")
	item, err = fetcher.FetchOrchestrationInstance(ctx, "by-name-never", testLock, nil)
	require.NoError(t, err)
	require.Nil(t, item, "an instance that does not exist has nothing ready")

	require.NoError(t, p.EnqueueForOrchestrator(ctx, externalRaised("by-name-idle", "later", "x"), time.Hour))
	item, err = fetcher.FetchOrchestrationInstance(ctx, "by-name-idle", testLock, nil)
	require.NoError(t, err)
	require.Nil(t, item, "a message not visible yet is not ready")

	poke(t, p, "by-name-idle")
	held := mustFetchInstance(t, p, testLock, "by-name-idle")
	poke(t, p, "by-name-idle")
	item, err = fetcher.FetchOrchestrationInstance(ctx, "by-name-idle", testLock, nil)
	require.NoError(t, err)
	require.Nil(t, item, "a locked instance is not fetched again")
	mustAck(t, p, held.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: runningMetadata()})
	item, err = fetcher.FetchOrchestrationInstance(ctx, "by-name-idle", testLock, nil)
	require.NoError(t, err)
	require.NotNil(t, item, "once the lock is released, the message that came meanwhile is ready")
	require.Len(t, item.Messages, 1)
}

func testFetchByNameRefusesMalformedID(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	fetcher := byName(t, p)
	_, err := fetcher.FetchOrchestrationInstance(ctx, "", testLock, nil)
	require.Error(t, err, "an empty id")
	require.True(t, errors.Is(err, duroxide.ErrInvalidInput), "an empty id is invalid input, got %v", err)
	require.False(t, duroxide.IsRetryable(err), "and not worth retrying")
}
