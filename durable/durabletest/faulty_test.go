package durabletest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable/durabletest"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

func startItem(instance string) duroxide.WorkItem {
	v := "1.0.0"
	return duroxide.StartOrchestrationItem{Instance: instance, Orchestration: "O", Input: "", Version: &v, ExecutionID: 1}
}

func fetchOrch(t *testing.T, p duroxide.Provider, filter *duroxide.DispatcherCapabilityFilter) *duroxide.OrchestrationItem {
	t.Helper()
	item, err := p.FetchOrchestrationItem(t.Context(), time.Minute, 0, filter)
	require.NoError(t, err)
	return item
}

func TestFaultyProviderOrchestrationAttemptInjection(t *testing.T) {
	fp := durabletest.NewFaultyProvider(memprovider.New())
	ctx := t.Context()
	require.NoError(t, fp.EnqueueForOrchestrator(ctx, startItem("a"), 0))

	// Without injection the real count passes through.
	item := fetchOrch(t, fp, nil)
	require.Equal(t, uint32(1), item.AttemptCount)
	require.NoError(t, fp.AbandonOrchestrationItem(ctx, item.LockToken, 0, false))

	// One-shot: the next fetch only.
	fp.InjectOrchestrationAttempts(11)
	item = fetchOrch(t, fp, nil)
	require.Equal(t, uint32(11), item.AttemptCount)
	require.NoError(t, fp.AbandonOrchestrationItem(ctx, item.LockToken, 0, false))
	item = fetchOrch(t, fp, nil)
	require.Equal(t, uint32(3), item.AttemptCount)
	require.NoError(t, fp.AbandonOrchestrationItem(ctx, item.LockToken, 0, false))

	// After skip: one untouched fetch, then the injected one.
	fp.InjectOrchestrationAttemptsAfterSkip(1, 7)
	item = fetchOrch(t, fp, nil)
	require.Equal(t, uint32(4), item.AttemptCount)
	require.NoError(t, fp.AbandonOrchestrationItem(ctx, item.LockToken, 0, false))
	item = fetchOrch(t, fp, nil)
	require.Equal(t, uint32(7), item.AttemptCount)
	require.NoError(t, fp.AbandonOrchestrationItem(ctx, item.LockToken, 0, false))

	// Persistent until cleared.
	fp.InjectOrchestrationAttemptsPersistent(9)
	for range 2 {
		item = fetchOrch(t, fp, nil)
		require.Equal(t, uint32(9), item.AttemptCount)
		require.NoError(t, fp.AbandonOrchestrationItem(ctx, item.LockToken, 0, false))
	}
	fp.ClearInjections()
	item = fetchOrch(t, fp, nil)
	require.Equal(t, uint32(8), item.AttemptCount)
}

func TestFaultyProviderActivityAttemptInjection(t *testing.T) {
	fp := durabletest.NewFaultyProvider(memprovider.New())
	ctx := t.Context()
	require.NoError(t, fp.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: "a", ExecutionID: 1, ID: 2, Name: "A"}))
	fetch := func() *duroxide.LockedWorkItem {
		it, err := fp.FetchWorkItem(ctx, time.Minute, 0, nil, duroxide.TagFilter{})
		require.NoError(t, err)
		require.NotNil(t, it)
		return it
	}
	fp.InjectActivityAttempts(5)
	it := fetch()
	require.Equal(t, uint32(5), it.AttemptCount)
	require.NoError(t, fp.AbandonWorkItem(ctx, it.LockToken, 0, false))
	it = fetch()
	require.Equal(t, uint32(2), it.AttemptCount)
	require.NoError(t, fp.AbandonWorkItem(ctx, it.LockToken, 0, false))
	fp.InjectActivityAttemptsPersistent(6)
	for range 2 {
		it = fetch()
		require.Equal(t, uint32(6), it.AttemptCount)
		require.NoError(t, fp.AbandonWorkItem(ctx, it.LockToken, 0, false))
	}
}

func TestFaultyProviderFailNext(t *testing.T) {
	inner := memprovider.New()
	fp := durabletest.NewFaultyProvider(inner)
	ctx := t.Context()
	require.NoError(t, fp.EnqueueForOrchestrator(ctx, startItem("a"), 0))

	fp.FailNext(durabletest.FetchOrchestrationItem)
	_, err := fp.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.True(t, duroxide.IsRetryable(err), "fetch failure should be retryable: %v", err)
	item := fetchOrch(t, fp, nil)
	require.NotNil(t, item, "the failure is one-shot")

	fp.FailNext(durabletest.AckOrchestrationItem)
	commit := duroxide.OrchestrationCommit{ExecutionID: 1, HistoryDelta: []duroxide.Event{{
		EventID: 1, InstanceID: "a", ExecutionID: 1, DuroxideVersion: "0.1.29",
		Kind: duroxide.OrchestrationStarted{Name: "O", Version: "1.0.0"},
	}}}
	err = fp.AckOrchestrationItem(ctx, item.LockToken, commit)
	require.ErrorIs(t, err, duroxide.ErrPermanent)
	h, err := inner.Read(ctx, "a")
	require.NoError(t, err)
	require.Empty(t, h, "a failed ack commits nothing")
	require.NoError(t, fp.AckOrchestrationItem(ctx, item.LockToken, commit))

	// Failure commits pass when allowed.
	require.NoError(t, fp.EnqueueForOrchestrator(ctx, startItem("b"), 0))
	item = fetchOrch(t, fp, nil)
	fp.SetAllowFailureCommits(true)
	fp.FailNext(durabletest.AckOrchestrationItem)
	failed := duroxide.OrchestrationCommit{ExecutionID: 1, HistoryDelta: []duroxide.Event{
		{EventID: 1, InstanceID: "b", ExecutionID: 1, DuroxideVersion: "0.1.29", Kind: duroxide.OrchestrationStarted{Name: "O", Version: "1.0.0"}},
		{EventID: 2, InstanceID: "b", ExecutionID: 1, DuroxideVersion: "0.1.29",
			Kind: duroxide.OrchestrationFailed{Details: duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppOrchestrationFailed}, Message: "x"}}},
	}}
	require.NoError(t, fp.AckOrchestrationItem(ctx, item.LockToken, failed))

	// Work items: fetch failure, then ack-then-fail.
	require.NoError(t, fp.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: "a", ExecutionID: 1, ID: 2, Name: "A"}))
	fp.FailNext(durabletest.FetchWorkItem)
	_, err = fp.FetchWorkItem(ctx, time.Minute, 0, nil, duroxide.TagFilter{})
	require.True(t, duroxide.IsRetryable(err))
	w, err := fp.FetchWorkItem(ctx, time.Minute, 0, nil, duroxide.TagFilter{})
	require.NoError(t, err)
	require.NotNil(t, w)
	fp.SetAckThenFail(true)
	fp.FailNext(durabletest.AckWorkItem)
	err = fp.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: "a", ExecutionID: 1, ID: 2, Result: "r"})
	require.ErrorIs(t, err, duroxide.ErrPermanent)
	require.Error(t, fp.AckWorkItem(ctx, w.LockToken, nil), "the ack happened: the token is gone")
	d, err := fp.Admin().QueueDepths(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, d.OrchestratorQueue, "the completion was enqueued by the real ack")
}

func TestFaultyProviderBypassesCapabilityFilter(t *testing.T) {
	inner := memprovider.New()
	fp := durabletest.NewFaultyProvider(inner)
	ctx := t.Context()
	require.NoError(t, fp.EnqueueForOrchestrator(ctx, startItem("a"), 0))
	item := fetchOrch(t, fp, nil)
	pinned := duroxide.SemVer{Major: 99}
	require.NoError(t, fp.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1,
		HistoryDelta: []duroxide.Event{{EventID: 1, InstanceID: "a", ExecutionID: 1, DuroxideVersion: "99.0.0",
			Kind: duroxide.OrchestrationStarted{Name: "O", Version: "1.0.0"}}},
		OrchestratorItems: []duroxide.WorkItem{duroxide.ExternalRaisedItem{Instance: "a", Name: "ping"}},
		Metadata:          duroxide.ExecutionMetadata{PinnedDuroxideVersion: &pinned},
	}))
	filter := &duroxide.DispatcherCapabilityFilter{SupportedDuroxideVersions: []duroxide.SemVerRange{{Max: duroxide.SemVer{Minor: 1, Patch: 29}}}}
	require.Nil(t, fetchOrch(t, fp, filter), "the wrapped provider filters")
	fp.SetBypassCapabilityFilter(true)
	require.NotNil(t, fetchOrch(t, fp, filter), "bypass ignores the filter")
}
