package durabletest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// Helpers shared by the ported runtime test files (sessions, versioning,
// capability filtering, poison, lock timeouts, reliability, ...).

// countEvents counts the events of h whose kind satisfies match.
func countEvents(h []duroxide.Event, match func(duroxide.Event) bool) int {
	n := 0
	for _, e := range h {
		if match(e) {
			n++
		}
	}
	return n
}

// isKind reports whether e's kind is a T.
func isKind[T duroxide.EventKind](e duroxide.Event) bool {
	_, ok := e.Kind.(T)
	return ok
}

// anyKind reports whether h holds an event of kind T.
func anyKind[T duroxide.EventKind](h []duroxide.Event) bool {
	return countEvents(h, isKind[T]) > 0
}

// indexOfKind returns the index of h's first T event, or -1.
func indexOfKind[T duroxide.EventKind](h []duroxide.Event) int {
	for i, e := range h {
		if isKind[T](e) {
			return i
		}
	}
	return -1
}

// waitCompletedEvent waits until instance's history holds
// OrchestrationCompleted (Rust tests' wait_for_history on that event).
func (e *env) waitCompletedEvent(instance string) bool {
	return e.waitHistory(instance, anyKind[duroxide.OrchestrationCompleted])
}

// eventually polls cond until it holds or waitTimeout passes.
func eventually(cond func() bool) bool {
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

// read returns instance's current history, failing the test on error.
func (e *env) read(instance string) []duroxide.Event {
	e.t.Helper()
	h, err := e.p.Read(e.ctx, instance)
	require.NoError(e.t, err)
	return h
}

// executionHistory reads one execution of instance through the client.
func (e *env) executionHistory(instance string, execution uint64) []duroxide.Event {
	e.t.Helper()
	h, err := e.client().ReadExecutionHistory(e.ctx, instance, execution)
	require.NoError(e.t, err)
	return h
}

// startOn starts a runtime over p (not necessarily the env's provider),
// shut down at cleanup.
func (e *env) startOn(p duroxide.Provider, reg *durable.Registry, o *durable.Options) *durable.Runtime {
	e.t.Helper()
	rt, err := durable.Start(e.ctx, p, reg, testOptions(o))
	require.NoError(e.t, err)
	e.t.Cleanup(func() { shutdownRuntime(e, rt) })
	return rt
}

// shutdownRuntime shuts rt down now (a second Shutdown at cleanup is a
// no-op).
func shutdownRuntime(e *env, rt *durable.Runtime) {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	require.NoError(e.t, rt.Shutdown(ctx))
}

// poisonDetails requires st to be Failed with Poison details.
func poisonDetails(e *env, st *durable.OrchestrationStatus) duroxide.PoisonError {
	e.t.Helper()
	require.Equal(e.t, durable.StateFailed, st.State, "expected a poison failure, got output %q", st.Output)
	p, ok := st.Details.(duroxide.PoisonError)
	require.True(e.t, ok, "expected Poison details, got %#v", st.Details)
	return p
}

// seedPinnedInstance is Rust's seed_instance_with_pinned_version: one
// committed turn whose OrchestrationStarted (and metadata) pin the
// execution to duroxide version pinned, plus a pending ExternalRaised
// "ping" so that the instance has work for a dispatcher to fetch.
func (e *env) seedPinnedInstance(instance, orchestration string, pinned duroxide.SemVer) {
	e.t.Helper()
	ctx := e.ctx
	v := durable.DefaultVersion
	require.NoError(e.t, e.p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{
		Instance: instance, Orchestration: orchestration, Input: "{}", Version: &v, ExecutionID: 1,
	}, 0))
	var others []string
	var token string
	for token == "" {
		item, err := e.p.FetchOrchestrationItem(ctx, 30*time.Second, 0, nil)
		require.NoError(e.t, err)
		require.NotNil(e.t, item, "seeding %s: work should be available", instance)
		if item.Instance == instance {
			token = item.LockToken
		} else {
			others = append(others, item.LockToken)
		}
	}
	started := duroxide.Event{
		EventID: 1, InstanceID: instance, ExecutionID: 1, TimestampMs: uint64(time.Now().UnixMilli()),
		DuroxideVersion: pinned.String(),
		Kind:            duroxide.OrchestrationStarted{Name: orchestration, Version: v, Input: "{}"},
	}
	name := orchestration
	require.NoError(e.t, e.p.AckOrchestrationItem(ctx, token, duroxide.OrchestrationCommit{
		ExecutionID:       1,
		HistoryDelta:      []duroxide.Event{started},
		OrchestratorItems: []duroxide.WorkItem{duroxide.ExternalRaisedItem{Instance: instance, Name: "ping", Data: "{}"}},
		Metadata: duroxide.ExecutionMetadata{
			OrchestrationName: &name, OrchestrationVersion: &v, PinnedDuroxideVersion: &pinned,
		},
	}))
	for _, tok := range others {
		_ = e.p.AbandonOrchestrationItem(ctx, tok, 0, true)
	}
}

// semver builds a version from its parts.
func semver(major, minor, patch uint64) duroxide.SemVer {
	return duroxide.SemVer{Major: major, Minor: minor, Patch: patch}
}

// logCapture is a slog.Handler recording every record, for the tests that
// assert what the runtime logs (Rust's tracing capture).
type logCapture struct {
	mu      sync.Mutex
	records []capturedLog
}

// capturedLog is one record: level, message and attributes as text.
type capturedLog struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	cl := capturedLog{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		cl.attrs[a.Key] = a.Value.String()
		return true
	})
	c.mu.Lock()
	c.records = append(c.records, cl)
	c.mu.Unlock()
	return nil
}

func (c *logCapture) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *logCapture) WithGroup(string) slog.Handler      { return c }

// find returns the first record at level whose message or an attribute
// contains any of words.
func (c *logCapture) find(level slog.Level, words ...string) (capturedLog, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.records {
		if r.level != level {
			continue
		}
		for _, w := range words {
			if strings.Contains(r.msg, w) {
				return r, true
			}
			for _, v := range r.attrs {
				if strings.Contains(v, w) {
					return r, true
				}
			}
		}
	}
	return capturedLog{}, false
}
