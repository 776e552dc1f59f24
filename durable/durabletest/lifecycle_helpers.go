package durabletest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// Helpers the lifecycle modules share (lifecycle_tests.go,
// lifecycle_rewind_cancel_tests.go, restart_messages_tests.go and the
// API edge and deletion modules): waiting for and requiring executions,
// and seeding histories as a runtime would have written them.

// waitExecutions waits until instance has n executions.
func (e *env) waitExecutions(instance string, n int) {
	e.t.Helper()
	e.waitFor("execution count", func() bool {
		x, err := e.client().ListExecutions(e.ctx, instance)
		return err == nil && len(x) >= n
	})
}

// requireExecutions requires instance's executions to be want.
func (e *env) requireExecutions(instance string, want []uint64, msgAndArgs ...any) {
	e.t.Helper()
	x, err := e.client().ListExecutions(e.ctx, instance)
	require.NoError(e.t, err)
	require.Equal(e.t, want, x, msgAndArgs...)
}

// requireEndedBeforeTheNext requires every execution of instance but
// the last to end in its own history (completed, failed or continued
// as new): an execution started on top of a running one never gets its
// terminal event, and its summary says Running for ever.
func (e *env) requireEndedBeforeTheNext(instance string) {
	e.t.Helper()
	x, err := e.client().ListExecutions(e.ctx, instance)
	require.NoError(e.t, err)
	for _, exec := range x[:max(len(x)-1, 0)] {
		h := e.executionHistory(instance, exec)
		require.True(e.t, endsExecution(h), "execution %d of %s ran on when execution %d started: %s", exec, instance, exec+1, kinds(h))
	}
}

// endsExecution reports whether history's last event ends its execution.
func endsExecution(history []duroxide.Event) bool {
	if len(history) == 0 {
		return false
	}
	switch history[len(history)-1].Kind.(type) {
	case duroxide.OrchestrationCompleted, duroxide.OrchestrationFailed, duroxide.OrchestrationContinuedAsNew:
		return true
	}
	return false
}

// restart restarts instance with o and waits for execution, the one the
// restart starts.
func (e *env) restart(instance string, o durable.RestartOptions, execution int) {
	e.t.Helper()
	require.NoError(e.t, e.client().Restart(e.ctx, instance, o))
	e.waitExecutions(instance, execution)
}

// seedEvent is an event of instance's execution exec, as a seed writes
// it.
func seedEvent(instance string, exec, id uint64, source *uint64, k duroxide.EventKind) duroxide.Event {
	return duroxide.Event{EventID: id, SourceEventID: source, InstanceID: instance, ExecutionID: exec,
		TimestampMs: uint64(time.Now().UnixMilli()), DuroxideVersion: durable.DuroxideVersion, Kind: k}
}

// seedHistory commits events as execution 1 of a new instance (before
// any runtime runs), with status.
func (e *env) seedHistory(instance string, events []duroxide.Event, status string) {
	e.t.Helper()
	s := events[0].Kind.(duroxide.OrchestrationStarted)
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.StartOrchestrationItem{Instance: instance,
		Orchestration: s.Name, Input: s.Input, Version: &s.Version, ParentInstance: s.ParentInstance, ParentID: s.ParentID, ExecutionID: 1}, 0))
	item, err := e.p.FetchOrchestrationItem(e.ctx, 30*time.Second, 0, nil)
	require.NoError(e.t, err)
	require.NotNil(e.t, item)
	require.Equal(e.t, instance, item.Instance)
	md := duroxide.ExecutionMetadata{Status: &status, OrchestrationName: &s.Name, OrchestrationVersion: &s.Version, ParentInstanceID: s.ParentInstance}
	if k, ok := events[len(events)-1].Kind.(duroxide.OrchestrationCompleted); ok {
		md.Output = &k.Output
	}
	require.NoError(e.t, e.p.AckOrchestrationItem(e.ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, HistoryDelta: events, Metadata: md}))
}

func ptrTo[T any](v T) *T { return &v }

// seedNextExecution commits events as the next execution of a seeded
// instance (before any runtime runs), with status, as a rewind does:
// the turn of a message enqueued for the purpose.
func (e *env) seedNextExecution(instance string, events []duroxide.Event, status string) {
	e.t.Helper()
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.ExternalRaisedItem{Instance: instance, Name: "seed"}, 0))
	item, err := e.p.FetchOrchestrationItem(e.ctx, 30*time.Second, 0, nil)
	require.NoError(e.t, err)
	require.NotNil(e.t, item)
	require.Equal(e.t, instance, item.Instance)
	s := events[0].Kind.(duroxide.OrchestrationStarted)
	md := duroxide.ExecutionMetadata{Status: &status, OrchestrationName: &s.Name, OrchestrationVersion: &s.Version, ParentInstanceID: s.ParentInstance}
	require.NoError(e.t, e.p.AckOrchestrationItem(e.ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: events[0].ExecutionID,
		HistoryDelta: events, Metadata: md}))
}
