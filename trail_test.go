package cdb_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
)

// syncBuffer is a log sink the provider's goroutines may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines returns the logged lines that contain every one of parts.
func (s *syncBuffer) lines(parts ...string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range strings.Split(s.b.String(), "\n") {
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
	var debug, warn syncBuffer
	h := newHarness(t, cdb.Options{Logger: slog.New(slog.NewTextHandler(&debug, &slog.HandlerOptions{Level: slog.LevelDebug}))}, withoutLag())
	const inst = "trail"
	createHInstance(t, h.p, inst)
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, duroxide.QueueMessageItem{Instance: inst, Name: "q", Data: "traced"}, 0))

	item := mustFetchOrch(t, h.p, inst)
	require.NoError(t, h.p.AbandonOrchestrationItem(ctx, item.LockToken, 0, true))
	item = mustFetchOrch(t, h.p, inst)
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1, HistoryDelta: []duroxide.Event{hEvent(inst, 1, 2, duroxide.ExternalEventPersistent{Name: "q", Data: "traced"})}, Metadata: hRunning("HOrch")}))

	locked := debug.lines("orchestration messages locked", "traced")
	require.Len(t, locked, 2, "both fetches locked the message")
	id := strings.Fields(strings.SplitN(locked[0], `messages="`, 2)[1])[0]
	id = id[:strings.Index(id, "=")]
	require.Len(t, debug.lines("orchestration item abandoned", id), 1)
	require.Len(t, debug.lines("turn committed: messages consumed", id), 1)

	quiet := h.open(cdb.Options{Logger: slog.New(slog.NewTextHandler(&warn, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, quiet.EnqueueForOrchestrator(ctx, duroxide.QueueMessageItem{Instance: "never-started", Name: "q", Data: "orphan"}, 0))
	item, err := quiet.FetchOrchestrationItem(ctx, hLock, 0, nil)
	require.NoError(t, err)
	require.Nil(t, item, "a queue message for an instance that never started is deleted")
	require.Len(t, warn.lines("orphan rule", "never-started"), 1, "the deletion is reported")
	require.Empty(t, warn.lines("level=DEBUG"), "the trail is written at Debug only")
}
