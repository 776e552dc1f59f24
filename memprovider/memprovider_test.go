package memprovider_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/duroxide/providertest"
	"github.com/duroxide-go/cdb/memprovider"
)

// factory runs the validation suite against fresh memory providers with
// a 1s lock timeout, like duroxide's SQLite factory.
type factory struct {
	opts []memprovider.Option
}

func (f factory) NewProvider(*testing.T) duroxide.Provider { return memprovider.New(f.opts...) }
func (factory) LockTimeout() time.Duration                 { return time.Second }
func (factory) ShortPollThreshold() time.Duration          { return 100 * time.Millisecond }

func (factory) CorruptInstanceHistory(t *testing.T, p duroxide.Provider, instance string) {
	p.(*memprovider.Provider).CorruptHistory(instance)
}

func (factory) MaxAttemptCount(t *testing.T, p duroxide.Provider, instance string) uint32 {
	return p.(*memprovider.Provider).MaxAttemptCount(instance)
}

// longPollFactory builds providers with WithLongPolling and declares it,
// so the long-poll-only behaviours run too.
type longPollFactory struct{ factory }

func (longPollFactory) SupportsLongPolling() bool { return true }

func TestProviderValidation(t *testing.T) {
	providertest.Run(t, factory{})
}

func TestProviderValidationLongPolling(t *testing.T) {
	providertest.RunModules(t, longPollFactory{factory{opts: []memprovider.Option{memprovider.WithLongPolling()}}}, "long_polling")
}

func TestLongPollingWakesOnEnqueue(t *testing.T) {
	p := memprovider.New(memprovider.WithLongPolling())
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = p.EnqueueForWorker(context.Background(), duroxide.ActivityExecuteItem{Instance: "i", ExecutionID: 1, ID: 1, Name: "A"})
	}()
	start := time.Now()
	w, err := p.FetchWorkItem(t.Context(), time.Second, 5*time.Second, nil, duroxide.DefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w, "the long poll returns the item enqueued while it waited")
	require.Less(t, time.Since(start), 2*time.Second)
}

func TestClockOption(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	p := memprovider.New(memprovider.WithClock(func() time.Time { return now }))
	ctx := t.Context()
	require.NoError(t, p.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: "i", ExecutionID: 1, ID: 1, Name: "A"}))
	w, err := p.FetchWorkItem(ctx, time.Minute, 0, nil, duroxide.DefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w)

	now = now.Add(2 * time.Minute) // the lock expires without sleeping
	again, err := p.FetchWorkItem(ctx, time.Minute, 0, nil, duroxide.DefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, again)
	require.Equal(t, uint32(2), again.AttemptCount)
	require.Error(t, p.AckWorkItem(ctx, w.LockToken, nil), "the stale token lost the item")
}

// firstFetchSlow delays a provider's first orchestration fetch before it
// reaches the provider, as CPU starvation on a loaded machine delays one
// goroutine among several started together.
type firstFetchSlow struct {
	*memprovider.Provider
	delay    time.Duration
	once     *sync.Once
	workOnce *sync.Once
}

// FetchWorkItem returns late the first time: the lock is taken, then the
// caller is descheduled before it sees the item.
func (s firstFetchSlow) FetchWorkItem(ctx context.Context, lock, poll time.Duration, session *duroxide.SessionFetchConfig, tags duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	w, err := s.Provider.FetchWorkItem(ctx, lock, poll, session, tags)
	if w != nil {
		s.workOnce.Do(func() { time.Sleep(s.delay * 2) })
	}
	return w, err
}

func (s firstFetchSlow) FetchOrchestrationItem(ctx context.Context, lock, poll time.Duration, f *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	s.once.Do(func() { time.Sleep(s.delay) })
	return s.Provider.FetchOrchestrationItem(ctx, lock, poll, f)
}

// slowFactory builds firstFetchSlow providers.
type slowFactory struct{ factory }

func (slowFactory) NewProvider(*testing.T) duroxide.Provider {
	return firstFetchSlow{Provider: memprovider.New(), delay: 300 * time.Millisecond, once: &sync.Once{}, workOnce: &sync.Once{}}
}

func (slowFactory) CorruptInstanceHistory(t *testing.T, p duroxide.Provider, instance string) {
	p.(firstFetchSlow).CorruptHistory(instance)
}

func (slowFactory) MaxAttemptCount(t *testing.T, p duroxide.Provider, instance string) uint32 {
	return p.(firstFetchSlow).MaxAttemptCount(instance)
}

// TestProviderValidationSlowFirstFetch runs the lock and session
// behaviours with the first fetch of each provider delayed (before an
// orchestration fetch, after a work-item fetch took its lock): timing-sensitive tests must wait
// from the event they depend on (the fetch that took the lock), not from
// a common start.
func TestProviderValidationSlowFirstFetch(t *testing.T) {
	providertest.RunModules(t, slowFactory{}, "instance_locking", "lock_expiration", "sessions")
}
