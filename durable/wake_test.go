package durable_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/durable/durabletest"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

// emptyFetchCounter counts the orchestration fetches that came back
// empty. Embedding the concrete *memprovider.Provider promotes its
// NotifyEnqueues.
type emptyFetchCounter struct {
	*memprovider.Provider
	empty atomic.Int64
}

func (c *emptyFetchCounter) FetchOrchestrationItem(ctx context.Context, lock, poll time.Duration, f *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	item, err := c.Provider.FetchOrchestrationItem(ctx, lock, poll, f)
	if item == nil && err == nil {
		c.empty.Add(1)
	}
	return item, err
}

// asleepRuntime starts a runtime over p whose idle dispatchers would next
// poll in an hour, and returns once its orchestration slot has found the
// queue empty: from then on, only a wake-up makes it fetch again.
func asleepRuntime(t *testing.T, p duroxide.Provider, c *emptyFetchCounter) {
	t.Helper()
	reg := durable.NewRegistry()
	require.NoError(t, durable.RegisterOrchestration(reg, "Echo", func(_ *durable.OrchestrationContext, in string) (string, error) { return in, nil }))
	rt, err := durable.Start(t.Context(), p, reg, &durable.Options{OrchestrationConcurrency: 1, WorkerConcurrency: 1,
		MinPollInterval: time.Hour, MaxIdlePollInterval: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx))
	})
	require.Eventually(t, func() bool { return c.empty.Load() > 0 }, 30*time.Second, time.Millisecond, "the runtime's first fetch")
}

// startAndWait starts an Echo through a Client of its own over p (not the
// runtime's) and waits for it. The wait is far shorter than the
// dispatchers' hour of idle backoff, so the instance completes only if
// the enqueue woke them.
func startAndWait(t *testing.T, p duroxide.Provider) {
	t.Helper()
	c := durable.NewClient(p)
	require.NoError(t, c.StartOrchestration(t.Context(), "woken-1", "Echo", "x"))
	st, err := c.WaitForOrchestration(t.Context(), "woken-1", durable.WaitOptions{Timeout: 30 * time.Second})
	require.NoError(t, err, "an idle runtime is woken by another client's enqueue on its provider")
	require.Equal(t, durable.StateCompleted, st.State)
}

// A Client that is not the runtime's own enqueues on a provider that is a
// duroxide.EnqueueNotifier: the provider tells the idle runtime, which
// fetches at once instead of after its backoff.
func TestAClientEnqueueWakesAnIdleRuntime(t *testing.T) {
	p := &emptyFetchCounter{Provider: memprovider.New()}
	asleepRuntime(t, p, p)
	startAndWait(t, p)
}

// A wrapping provider (durabletest.FaultyProvider) forwards
// NotifyEnqueues to the provider it wraps: a runtime over the wrapper is
// still woken by an enqueue made through the wrapped provider.
func TestAWrapperForwardsEnqueueNotifications(t *testing.T) {
	inner := &emptyFetchCounter{Provider: memprovider.New()}
	asleepRuntime(t, durabletest.NewFaultyProvider(inner), inner)
	startAndWait(t, inner)
}
