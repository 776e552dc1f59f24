package durable

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

// Helpers of the host tests (runtime, registry, client, execution). Names
// start with "ht" so they never collide with the engine tests' helpers.

const htWait = 60 * time.Second // generous: the machine may be loaded

// htQuiet is a logger that drops everything.
var htQuiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// htCounting counts fetches of a provider.
type htCounting struct {
	duroxide.Provider
	orchFetches, workFetches atomic.Int64
}

func (c *htCounting) FetchOrchestrationItem(ctx context.Context, lock, poll time.Duration, f *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	c.orchFetches.Add(1)
	return c.Provider.FetchOrchestrationItem(ctx, lock, poll, f)
}

func (c *htCounting) FetchWorkItem(ctx context.Context, lock, poll time.Duration, s *duroxide.SessionFetchConfig, tags duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	c.workFetches.Add(1)
	return c.Provider.FetchWorkItem(ctx, lock, poll, s, tags)
}

// htOptions are fast test options on top of o.
func htOptions(o Options) *Options {
	if o.MinPollInterval == 0 {
		o.MinPollInterval = 5 * time.Millisecond
	}
	if o.MaxIdlePollInterval == 0 {
		o.MaxIdlePollInterval = 50 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = htQuiet
	}
	return &o
}

// htStart starts a runtime that is shut down (and checked for leaks) at
// cleanup.
func htStart(t *testing.T, p duroxide.Provider, reg *Registry, o Options) *Runtime {
	t.Helper()
	rt, err := Start(t.Context(), p, reg, htOptions(o))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), htWait)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx))
	})
	return rt
}

func htWaitDone(t *testing.T, c *Client, instance string) *OrchestrationStatus {
	t.Helper()
	st, err := c.WaitForOrchestration(t.Context(), instance, WaitOptions{Timeout: htWait})
	require.NoError(t, err)
	return st
}

func htMem() *memprovider.Provider { return memprovider.New() }

// htRuntimeGoroutines counts goroutines running the runtime's code.
func htRuntimeGoroutines() int {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	count := 0
	for _, g := range strings.Split(string(buf[:n]), "\n\n") {
		if strings.Contains(g, "durable.(*Runtime)") {
			count++
		}
	}
	return count
}

// htEventually polls cond until it holds or htWait passes.
func htEventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(htWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
