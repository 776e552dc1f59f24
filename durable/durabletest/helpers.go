package durabletest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// Helpers shared by the ported runtime test files (samples, sessions,
// versioning, capability filtering, poison, lock timeouts, reliability,
// ...): history predicates, waits, and env shortcuts.

// fastOptions is Rust's dispatcher_min_poll_interval: 10ms plus overrides.
func fastOptions(mod func(o *durable.Options)) *durable.Options {
	o := &durable.Options{MinPollInterval: 10 * time.Millisecond}
	if mod != nil {
		mod(o)
	}
	return o
}

// appDetails returns d as an ApplicationError.
func appDetails(d duroxide.ErrorDetails) (duroxide.ApplicationError, bool) {
	switch v := d.(type) {
	case duroxide.ApplicationError:
		return v, true
	case *duroxide.ApplicationError:
		return *v, true
	}
	return duroxide.ApplicationError{}, false
}

// isCancelled reports whether d is Application{Cancelled{reason}}; an empty
// want accepts any reason.
func isCancelled(d duroxide.ErrorDetails, want string) bool {
	a, ok := appDetails(d)
	return ok && a.Kind.Type == duroxide.AppCancelled && (want == "" || a.Kind.Reason == want)
}

// failedCancelled reports whether h ends in OrchestrationFailed(Cancelled{reason}).
func failedCancelled(h []duroxide.Event, reason string) bool {
	for _, ev := range h {
		if k, ok := ev.Kind.(duroxide.OrchestrationFailed); ok && isCancelled(k.Details, reason) {
			return true
		}
	}
	return false
}

// countKind counts events of kind K.
func countKind[K duroxide.EventKind](h []duroxide.Event) int {
	n := 0
	for _, ev := range h {
		if _, ok := ev.Kind.(K); ok {
			n++
		}
	}
	return n
}

// findKind returns the first event of kind K.
func findKind[K duroxide.EventKind](h []duroxide.Event) (duroxide.Event, K, bool) {
	for _, ev := range h {
		if k, ok := ev.Kind.(K); ok {
			return ev, k, true
		}
	}
	var zero K
	return duroxide.Event{}, zero, false
}

// kinds lists h's event types (for failure messages).
func kinds(h []duroxide.Event) string {
	var b []string
	for _, ev := range h {
		b = append(b, ev.Kind.EventType())
	}
	return strings.Join(b, ",")
}

// history reads instance's latest execution.
func (e *env) history(instance string) []duroxide.Event {
	e.t.Helper()
	h, err := e.p.Read(e.ctx, instance)
	require.NoError(e.t, err)
	return h
}

// waitFor polls cond until it holds or the suite's timeout passes.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitHist waits until instance's history satisfies pred and returns it.
func (e *env) waitHist(instance, what string, pred func([]duroxide.Event) bool) []duroxide.Event {
	e.t.Helper()
	var h []duroxide.Event
	e.waitFor(what+" in "+instance, func() bool {
		var err error
		h, err = e.p.Read(e.ctx, instance)
		return err == nil && pred(h)
	})
	return h
}

// waitFlag waits until f is set.
func (e *env) waitFlag(what string, f *atomic.Bool) {
	e.t.Helper()
	e.waitFor(what, f.Load)
}

// children lists instances whose id starts with prefix.
func (e *env) instancesWithPrefix(prefix string) []string {
	e.t.Helper()
	all, err := e.admin().ListInstances(e.ctx)
	require.NoError(e.t, err)
	var out []string
	for _, i := range all {
		if strings.HasPrefix(i, prefix) {
			out = append(out, i)
		}
	}
	return out
}

// cancel cancels instance.
func (e *env) cancel(instance, reason string) {
	e.t.Helper()
	require.NoError(e.t, e.client().CancelInstance(e.ctx, instance, reason))
}

// raise raises an external event.
func (e *env) raise(instance, name, data string) {
	e.t.Helper()
	require.NoError(e.t, e.client().RaiseEvent(e.ctx, instance, name, data))
}

// enqueue enqueues a queue message.
func (e *env) enqueue(instance, queue, data string) {
	e.t.Helper()
	require.NoError(e.t, e.client().EnqueueEvent(e.ctx, instance, queue, data))
}

// failedDetails waits for instance to fail and returns its details.
func (e *env) failedDetails(instance string) duroxide.ErrorDetails {
	e.t.Helper()
	st := e.wait(instance)
	require.Equal(e.t, durable.StateFailed, st.State, "expected %s to fail, got output %q", instance, st.Output)
	return st.Details
}

// u64p returns &v.
func u64p(v uint64) *uint64 { return &v }

// blockUntilCancelled is an activity body that waits for its cancellation
// (or 30 s), setting started and then saw.
func blockUntilCancelled(started, saw *atomic.Bool) func(durable.ActivityContext, string) (string, error) {
	return func(ctx durable.ActivityContext, _ string) (string, error) {
		if started != nil {
			started.Store(true)
		}
		select {
		case <-ctx.Done():
			saw.Store(true)
			return "cancelled", nil
		case <-time.After(30 * time.Second):
			return "timeout", nil
		}
	}
}

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
	return countKind[T](h) > 0
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

// executionHistory reads one execution of instance through the client.
func (e *env) executionHistory(instance string, execution uint64) []duroxide.Event {
	e.t.Helper()
	h, err := e.client().ExecutionHistory(e.ctx, instance, execution)
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

// count returns how many records at level contain word in their message.
func (c *logCapture) count(level slog.Level, word string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.records {
		if r.level == level && strings.Contains(r.msg, word) {
			n++
		}
	}
	return n
}
