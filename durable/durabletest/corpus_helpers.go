package durabletest

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

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
