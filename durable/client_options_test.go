package durable

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// Without a Timeout a wait is bounded by its context alone: it ends with
// the context's error, not ErrTimeout.
func TestWaitOptionsWithoutTimeoutWaitUntilContextEnds(t *testing.T) {
	c := NewClient(newMemProvider())
	require.NoError(t, c.StartOrchestration(t.Context(), "queued", "O", ""))
	waits := map[string]func(context.Context) error{
		"WaitForOrchestration": func(ctx context.Context) error {
			_, err := c.WaitForOrchestration(ctx, "queued")
			return err
		},
		"WaitForStatusChange": func(ctx context.Context) error {
			_, err := c.WaitForStatusChange(ctx, "queued", 0, WaitOptions{PollInterval: time.Millisecond})
			return err
		},
		"WaitForKVValue": func(ctx context.Context) error {
			_, err := c.WaitForKVValue(ctx, "queued", "k")
			return err
		},
	}
	for name, wait := range waits {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
			defer cancel()
			err := wait(ctx)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.NotErrorIs(t, err, ErrTimeout)
		})
	}
}

// A negative Timeout or PollInterval is refused at once, before any read.
func TestWaitOptionsRefuseNegativeDurations(t *testing.T) {
	p := &statusReadCountingProvider{Provider: newMemProvider()}
	c := NewClient(p)
	for _, o := range []WaitOptions{{Timeout: -time.Second}, {PollInterval: -time.Millisecond}} {
		_, err := c.WaitForOrchestration(t.Context(), "i", o)
		require.ErrorIs(t, err, ErrInvalidInput)
		_, err = c.WaitForStatusChange(t.Context(), "i", 0, o)
		require.ErrorIs(t, err, ErrInvalidInput)
		_, err = c.WaitForKVValue(t.Context(), "i", "k", o)
		require.ErrorIs(t, err, ErrInvalidInput)
	}
	require.Zero(t, p.reads.Load())
	require.Zero(t, p.customStatus.Load())
}

// A PollInterval replaces the doubling schedule: with an interval longer
// than the timeout the wait reads once, sleeps to the deadline, reads a
// last time and times out.
func TestWaitOptionsPollIntervalSpacesReads(t *testing.T) {
	p := &statusReadCountingProvider{Provider: newMemProvider()}
	c := NewClient(p)
	require.NoError(t, c.StartOrchestration(t.Context(), "queued", "O", ""))
	_, err := c.WaitForOrchestration(t.Context(), "queued", WaitOptions{Timeout: 30 * time.Millisecond, PollInterval: time.Hour})
	require.ErrorIs(t, err, ErrTimeout)
	require.Equal(t, int64(2), p.reads.Load())

	p.reads.Store(0)
	_, err = c.WaitForStatusChange(t.Context(), "queued", 0, WaitOptions{Timeout: 30 * time.Millisecond, PollInterval: time.Hour})
	require.ErrorIs(t, err, ErrTimeout)
	require.Equal(t, int64(2), p.reads.Load())
}

// ListInstances lists every instance, or with ListOptions.Status only
// those in that status.
func TestListInstancesFiltersByStatus(t *testing.T) {
	p := newMemProvider()
	reg := NewRegistry()
	require.NoError(t, reg.AddOrchestration("Wait", func(ctx *OrchestrationContext, _ string) (string, error) {
		return WaitEvent[string](ctx, "go").Await()
	}))
	startRuntime(t, p, reg, Options{})
	c := NewClient(p)
	for _, id := range []string{"a", "b"} {
		require.NoError(t, c.StartOrchestration(t.Context(), id, "Wait", ""))
		requireEventually(t, func() bool {
			st, err := c.Status(t.Context(), id)
			return err == nil && st.State == StateRunning
		}, "never running")
	}
	require.NoError(t, c.RaiseEvent(t.Context(), "a", "go", "now"))
	waitDone(t, c, "a")

	all, err := c.ListInstances(t.Context())
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"a", "b"}, all)
	done, err := c.ListInstances(t.Context(), ListOptions{Status: duroxide.StatusCompleted})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, done)
	running, err := c.ListInstances(t.Context(), ListOptions{Status: duroxide.StatusRunning})
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, running)
}

// A start pinned by StartOptions.Version runs that version, and a version
// that is not semantic is refused before anything is written.
func TestStartOptionsVersion(t *testing.T) {
	p := newMemProvider()
	reg := NewRegistry()
	require.NoError(t, reg.AddOrchestrationVersion("O", "1.0.0", hImmediateOK("one")))
	require.NoError(t, reg.AddOrchestrationVersion("O", "2.0.0", hImmediateOK("two")))
	startRuntime(t, p, reg, Options{})
	c := NewClient(p)
	var ie *InputError
	require.ErrorAs(t, c.StartOrchestration(t.Context(), "bad", "O", "", StartOptions{Version: "v1"}), &ie)
	st, err := c.Status(t.Context(), "bad")
	require.NoError(t, err)
	require.Equal(t, StateNotFound, st.State)
	require.NoError(t, c.StartOrchestration(t.Context(), "pinned", "O", "", StartOptions{Version: "1.0.0"}))
	require.Equal(t, "one", waitDone(t, c, "pinned").Output)
	require.NoError(t, c.StartOrchestration(t.Context(), "latest", "O", ""))
	require.Equal(t, "two", waitDone(t, c, "latest").Output)
}
