package memprovider_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

// WorkState follows a turn through the queues: ready, locked while
// fetched, then idle with the timer's fire time as Next, ready again when
// the clock reaches it; an activity is ready, then locked.
func TestWorkStateFollowsTheQueues(t *testing.T) {
	ctx := t.Context()
	now := time.UnixMilli(1_000_000_000).UTC()
	p := memprovider.New(memprovider.WithClock(func() time.Time { return now }))
	require.Equal(t, memprovider.WorkState{}, p.WorkState())
	require.True(t, p.WorkState().Idle())

	require.NoError(t, p.StartInstance(ctx, duroxide.StartOrchestrationItem{Instance: "i", Orchestration: "O", ExecutionID: 1}, ""))
	require.Equal(t, memprovider.WorkState{Ready: 1}, p.WorkState())

	item, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item)
	require.Equal(t, memprovider.WorkState{Locked: 1}, p.WorkState(), "a turn in flight")

	fireAt := now.Add(time.Hour)
	started := duroxide.Event{EventID: 1, InstanceID: "i", ExecutionID: 1, Kind: duroxide.OrchestrationStarted{Name: "O", Version: "1.0.0"}}
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:       1,
		HistoryDelta:      []duroxide.Event{started},
		OrchestratorItems: []duroxide.WorkItem{duroxide.TimerFiredItem{Instance: "i", ExecutionID: 1, ID: 2, FireAtMs: uint64(fireAt.UnixMilli())}},
		Metadata:          duroxide.ExecutionMetadata{Status: ptr(duroxide.StatusRunning), OrchestrationName: ptr("O"), OrchestrationVersion: ptr("1.0.0")},
	}))
	st := p.WorkState()
	require.True(t, st.Idle(), "nothing to do until the timer fires: %+v", st)
	require.True(t, st.Next.Equal(fireAt), "Next = %v, want the fire time %v", st.Next, fireAt)

	now = fireAt
	require.Equal(t, memprovider.WorkState{Ready: 1}, p.WorkState(), "the timer is due")

	require.NoError(t, p.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: "i", ExecutionID: 1, ID: 3, Name: "A"}))
	require.Equal(t, memprovider.WorkState{Ready: 2}, p.WorkState())
	w, err := p.FetchWorkItem(ctx, time.Minute, 0, nil, duroxide.DefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w)
	require.Equal(t, memprovider.WorkState{Ready: 1, Locked: 1}, p.WorkState(), "an activity in flight")
}

// An event for an instance that was never started is not work a fetch
// can take: it waits for the start, and is due (to be dropped) at the end
// of the orphan lifetime.
func TestWorkStateOrphanEventIsDueAtItsLifetime(t *testing.T) {
	now := time.UnixMilli(1_000_000_000).UTC()
	p := memprovider.New(memprovider.WithClock(func() time.Time { return now }), memprovider.WithOrphanLifetime(time.Minute))
	require.NoError(t, p.EnqueueForOrchestrator(t.Context(), duroxide.ExternalRaisedItem{Instance: "ghost", Name: "E"}, 0))
	st := p.WorkState()
	require.True(t, st.Idle(), "%+v", st)
	require.True(t, st.Next.Equal(now.Add(time.Minute)), "Next = %v", st.Next)
}

func ptr[T any](v T) *T { return &v }
