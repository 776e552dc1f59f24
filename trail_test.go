package cdb_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
)

// logLines returns the lines of log that contain every one of parts.
func logLines(log *lockedBuffer, parts ...string) []string {
	var out []string
	for _, l := range strings.Split(log.String(), "\n") {
		all := l != ""
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			out = append(out, l)
		}
	}
	return out
}

// At Debug the provider logs each step of a message — locked, given back,
// consumed — under its document id, so one message can be followed in the
// logs; the orphan rule's deletions are logged at Warn.
func TestMessageTrail(t *testing.T) {
	ctx := t.Context()
	var debug, warn lockedBuffer
	h := newHarness(t, cdb.Options{Logger: slog.New(slog.NewTextHandler(&debug, &slog.HandlerOptions{Level: slog.LevelDebug}))}, withoutLag())
	const inst = "trail"
	createHInstance(t, h.p, inst)
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, duroxide.QueueMessageItem{Instance: inst, Name: "q", Data: "traced"}, 0))

	item := mustFetchOrch(t, h.p, inst)
	require.NoError(t, h.p.AbandonOrchestrationItem(ctx, item.LockToken, 0, true))
	item = mustFetchOrch(t, h.p, inst)
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1, HistoryDelta: []duroxide.Event{hEvent(inst, 1, 2, duroxide.ExternalEventPersistent{Name: "q", Data: "traced"})}, Metadata: hRunning("HOrch")}))

	locked := logLines(&debug, "orchestration messages locked", "traced")
	require.Len(t, locked, 2, "both fetches locked the message")
	id := strings.Fields(strings.SplitN(locked[0], `messages="`, 2)[1])[0]
	id = id[:strings.Index(id, "=")]
	require.Len(t, logLines(&debug, "orchestration item abandoned", id), 1)
	require.Len(t, logLines(&debug, "turn committed: messages consumed", id), 1)

	quiet := h.open(cdb.Options{Logger: slog.New(slog.NewTextHandler(&warn, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, quiet.EnqueueForOrchestrator(ctx, duroxide.QueueMessageItem{Instance: "never-started", Name: "q", Data: "orphan"}, 0))
	item, err := quiet.FetchOrchestrationItem(ctx, hLock, 0, nil)
	require.NoError(t, err)
	require.Nil(t, item, "a queue message for an instance that never started is deleted")
	require.Len(t, logLines(&warn, "orphan rule", "never-started"), 1, "the deletion is reported")
	require.Empty(t, logLines(&warn, "level=DEBUG"), "the trail is written at Debug only")
}
