package durable_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

// handOffCounter counts the activities acks handed to the runtime and the
// ones its workers fetched.
type handOffCounter struct {
	*memprovider.Provider
	handed, fetched atomic.Int64
}

func (c *handOffCounter) AckOrchestrationItemAndLock(ctx context.Context, token string, oc duroxide.OrchestrationCommit, want duroxide.LocalWork) ([]*duroxide.LockedWorkItem, error) {
	locked, err := c.Provider.AckOrchestrationItemAndLock(ctx, token, oc, want)
	c.handed.Add(int64(len(locked)))
	return locked, err
}

func (c *handOffCounter) FetchWorkItem(ctx context.Context, lock, poll time.Duration, s *duroxide.SessionFetchConfig, tags duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	w, err := c.Provider.FetchWorkItem(ctx, lock, poll, s, tags)
	if w != nil {
		c.fetched.Add(1)
	}
	return w, err
}

// runHandOffFanOut runs a fan-out of n activities under opts and reports
// the counter and the most activities that ran at once.
func runHandOffFanOut(t *testing.T, n int, opts durable.Options) (*handOffCounter, int64) {
	t.Helper()
	p := &handOffCounter{Provider: memprovider.New()}
	var running, most atomic.Int64
	reg := durable.NewRegistry()
	require.NoError(t, durable.RegisterActivity(reg, "Work", func(_ durable.ActivityContext, in string) (string, error) {
		now := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
		}
		time.Sleep(5 * time.Millisecond) // long enough for the others to pile up
		return in, nil
	}))
	require.NoError(t, durable.RegisterOrchestration(reg, "FanOut", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		fs := make([]*durable.Future[string], n)
		for i := range fs {
			fs[i] = durable.CallActivity[string](ctx, "Work", in)
		}
		for _, f := range fs {
			if _, err := f.Await(); err != nil {
				return "", err
			}
		}
		return in, nil
	}))
	opts.MinPollInterval, opts.MaxIdlePollInterval = time.Hour, time.Hour // only wake-ups and hand-offs
	rt, err := durable.Start(t.Context(), p, reg, &opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx))
	})
	c := rt.Client()
	require.NoError(t, c.StartOrchestration(t.Context(), "fan", "FanOut", "x"))
	st, err := c.WaitForOrchestration(t.Context(), "fan", durable.WaitOptions{Timeout: 30 * time.Second})
	require.NoError(t, err)
	require.Equal(t, durable.StateCompleted, st.State)
	return p, most.Load()
}

// A turn's activities are handed to its runtime's workers (up to
// WorkerHandOff): none is fetched, and the worker slots still bound how
// many run at once.
func TestATurnHandsItsActivitiesToItsWorkers(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		p, most := runHandOffFanOut(t, 6, durable.Options{WorkerConcurrency: 2})
		require.Equal(t, int64(6), p.handed.Load(), "room for 64")
		require.Zero(t, p.fetched.Load(), "no activity fetched")
		require.LessOrEqual(t, most, int64(2), "the slots bound the handed activities")
	})
	t.Run("bounded", func(t *testing.T) {
		p, most := runHandOffFanOut(t, 6, durable.Options{WorkerConcurrency: 2, WorkerHandOff: 2})
		require.Equal(t, int64(2), p.handed.Load(), "at most WorkerHandOff")
		require.Equal(t, int64(4), p.fetched.Load(), "the rest fetched")
		require.LessOrEqual(t, most, int64(2))
	})
	t.Run("off", func(t *testing.T) {
		p, _ := runHandOffFanOut(t, 6, durable.Options{WorkerConcurrency: 2, WorkerHandOff: durable.NoSlots})
		require.Zero(t, p.handed.Load())
		require.Equal(t, int64(6), p.fetched.Load())
	})
}
