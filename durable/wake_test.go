package durable_test

import (
	"context"
	"sync"
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

// FetchOrchestrationInstance counts the by-name fetches that came back
// empty too (duroxide.InstanceFetcher).
func (c *emptyFetchCounter) FetchOrchestrationInstance(ctx context.Context, instance string, lock time.Duration, f *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	item, err := c.Provider.FetchOrchestrationInstance(ctx, instance, lock, f)
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

// A fan-out's completions wake one orchestration loop each at most, and
// none while a loop holds the instance (it looks again after its turn):
// with eight loops asleep, waking them all for every completion made
// about seven fetches come back empty per completion.
func TestAFanOutsCompletionsWakeOneLoop(t *testing.T) {
	const fanOut = 8
	p := &emptyFetchCounter{Provider: memprovider.New()}
	reg := durable.NewRegistry()
	require.NoError(t, durable.RegisterActivity(reg, "Echo", func(_ durable.ActivityContext, in string) (string, error) { return in, nil }))
	require.NoError(t, durable.RegisterOrchestration(reg, "FanOut", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		fs := make([]*durable.Future[string], fanOut)
		for i := range fs {
			fs[i] = durable.CallActivity[string](ctx, "Echo", in)
		}
		for _, f := range fs {
			if _, err := f.Await(); err != nil {
				return "", err
			}
		}
		return in, nil
	}))
	rt, err := durable.Start(t.Context(), p, reg, &durable.Options{OrchestrationConcurrency: 4, WorkerConcurrency: 4,
		MinPollInterval: time.Hour, MaxIdlePollInterval: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx))
	})
	require.Eventually(t, func() bool { return p.empty.Load() >= 8 }, 30*time.Second, time.Millisecond, "every loop's first fetch")
	time.Sleep(50 * time.Millisecond) // the loops are asleep now
	before := p.empty.Load()
	c := rt.Client()
	require.NoError(t, c.StartOrchestration(t.Context(), "fan", "FanOut", "x"))
	st, err := c.WaitForOrchestration(t.Context(), "fan", durable.WaitOptions{Timeout: 30 * time.Second})
	require.NoError(t, err)
	require.Equal(t, durable.StateCompleted, st.State)
	empty := p.empty.Load() - before
	t.Logf("%d empty orchestration fetches for %d completions", empty, fanOut)
	require.LessOrEqual(t, empty, int64(fanOut), "at most one empty fetch per completion")
}

// heldAck is a provider from which this process hears nothing (it is not
// a duroxide.EnqueueNotifier, as if every write came from another
// process) and whose acks of the orchestration Held wait until released.
type heldAck struct {
	duroxide.Provider // a *memprovider.Provider
	entered, release  chan struct{}
	once              sync.Once
}

func (h *heldAck) FetchOrchestrationInstance(ctx context.Context, instance string, lock time.Duration, f *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	return h.Provider.(duroxide.InstanceFetcher).FetchOrchestrationInstance(ctx, instance, lock, f)
}

func (h *heldAck) AckOrchestrationItem(ctx context.Context, token string, c duroxide.OrchestrationCommit) error {
	if n := c.Metadata.OrchestrationName; n != nil && *n == "Held" {
		h.once.Do(func() { close(h.entered) })
		<-h.release
	}
	return h.Provider.AckOrchestrationItem(ctx, token, c)
}

// Some loop keeps polling while the poller is busy: the loop that was
// polling found work and stepped down, so another must take its place,
// or work that other processes enqueue waits for a local wake-up. Here
// the poller's turn cannot end (its ack waits), and a second instance,
// which nothing in this process announces, must still be found by
// polling.
func TestPollingGoesOnWhileThePollerIsBusy(t *testing.T) {
	inner := memprovider.New()
	p := &heldAck{Provider: inner, entered: make(chan struct{}), release: make(chan struct{})}
	reg := durable.NewRegistry()
	for _, name := range []string{"Held", "Echo"} {
		require.NoError(t, durable.RegisterOrchestration(reg, name, func(_ *durable.OrchestrationContext, in string) (string, error) { return in, nil }))
	}
	rt, err := durable.Start(t.Context(), p, reg, &durable.Options{OrchestrationConcurrency: 2, WorkerConcurrency: 1,
		MinPollInterval: 5 * time.Millisecond, MaxIdlePollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx))
	})
	var once sync.Once
	release := func() { once.Do(func() { close(p.release) }) }
	t.Cleanup(release)
	time.Sleep(100 * time.Millisecond) // every loop has found the queue empty; one polls
	other := durable.NewClient(inner)
	require.NoError(t, other.StartOrchestration(t.Context(), "held-1", "Held", "x"))
	select {
	case <-p.entered: // the poller took held-1 and is busy
	case <-time.After(30 * time.Second):
		t.Fatal("held-1 was never fetched")
	}
	require.NoError(t, other.StartOrchestration(t.Context(), "echo-1", "Echo", "y"))
	st, err := other.WaitForOrchestration(t.Context(), "echo-1", durable.WaitOptions{Timeout: 10 * time.Second})
	require.NoError(t, err, "an instance no local wake-up announces is found while the poller is busy")
	require.Equal(t, durable.StateCompleted, st.State)
	release()
	st, err = other.WaitForOrchestration(t.Context(), "held-1", durable.WaitOptions{Timeout: 30 * time.Second})
	require.NoError(t, err)
	require.Equal(t, durable.StateCompleted, st.State)
}
