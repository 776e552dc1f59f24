package durable

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// A batch fetched without the ContinueAsNew item is held only while the
// successor is still to start: not for a finished instance, nor for one
// whose successor was poisoned (OrchestrationFailed after the
// continue-as-new), whose messages are drained as for any finished one.
func TestAwaitingSuccessor(t *testing.T) {
	started := xEv(1, nil, duroxide.OrchestrationStarted{Name: "o", Version: "1.0.0"})
	can := xEv(3, nil, duroxide.OrchestrationContinuedAsNew{Input: "next"})
	for _, tc := range []struct {
		name    string
		history []duroxide.Event
		want    bool
	}{
		{"empty", nil, false},
		{"running", []duroxide.Event{started}, false},
		{"continued as new", []duroxide.Event{started, can}, true},
		{"continued as new, activity cancelled after", []duroxide.Event{started, can,
			xEv(4, nil, duroxide.ActivityCancelRequested{Reason: "orchestration_terminal_continued_as_new"})}, true},
		{"successor poisoned", []duroxide.Event{started, can, xEv(4, nil, duroxide.OrchestrationFailed{Details: duroxide.PoisonError{}})}, false},
		{"completed", []duroxide.Event{started, xEv(2, nil, duroxide.OrchestrationCompleted{Output: "x"})}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, awaitingSuccessor(tc.history))
		})
	}
}

// A message sent to an instance that has ended is dropped, as Rust does,
// and the drop is logged at Warn: a message nobody will receive is worth
// an operator's attention.
func TestMessagesForAnEndedInstanceAreLoggedWhenDropped(t *testing.T) {
	var logs syncBuffer
	reg := NewRegistry()
	require.NoError(t, RegisterOrchestration(reg, "Quick", func(_ *OrchestrationContext, in string) (string, error) { return in, nil }))
	p := newMemProvider()
	rt := startRuntime(t, p, reg, Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, rt.Client().StartOrchestration(t.Context(), "ended-1", "Quick", "x"))
	require.Equal(t, StateCompleted, waitDone(t, rt.Client(), "ended-1").State)

	require.NoError(t, p.EnqueueForOrchestrator(t.Context(), duroxide.QueueMessageItem{Instance: "ended-1", Name: "q", Data: "late"}, 0))
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "messages for an instance that has ended; dropping them")
	}, 10*time.Second, 10*time.Millisecond, "the drop is logged:\n%s", logs.String())
	require.Contains(t, logs.String(), "instance_id=ended-1")
	require.Contains(t, logs.String(), "messages=[QueueMessage]")
}

// A timer that lost a Select fires after its instance completed: an
// expected leftover, not lost intent. Its drop is logged at Debug, not
// Warn, and draining it leaves the instance's updatedAt at its completion
// time (the drained ack writes no history, no metadata and no items).
func TestStaleTimerOfAnEndedInstanceIsDrainedQuietly(t *testing.T) {
	var logs syncBuffer
	reg := NewRegistry()
	require.NoError(t, RegisterActivity(reg, "Fast", func(_ ActivityContext, in string) (string, error) { return in, nil }))
	require.NoError(t, RegisterOrchestration(reg, "Race", func(ctx *OrchestrationContext, in string) (string, error) {
		act := CallActivity[string](ctx, "Fast", in)
		if ctx.Select(act, NewTimer(ctx, 300*time.Millisecond)) == 1 {
			return "", errors.New("the timer won")
		}
		return act.Await()
	}))
	p := newMemProvider()
	rt := startRuntime(t, p, reg, Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	c := rt.Client()
	require.NoError(t, c.StartOrchestration(t.Context(), "race-1", "Race", "x"))
	require.Equal(t, StateCompleted, waitDone(t, c, "race-1").State)

	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "messages=[TimerFired]")
	}, testWait, 10*time.Millisecond, "the stale timer is drained and its drop logged:\n%s", logs.String())
	for _, line := range strings.Split(logs.String(), "\n") {
		require.NotContains(t, line, "level=WARN", "nothing about the stale timer is a warning:\n%s", logs.String())
	}
	info, err := c.InstanceInfo(t.Context(), "race-1")
	require.NoError(t, err)
	ex, err := c.ExecutionInfo(t.Context(), "race-1", info.CurrentExecutionID)
	require.NoError(t, err)
	require.NotNil(t, ex.CompletedAt)
	require.Equal(t, *ex.CompletedAt, info.UpdatedAt, "the drained timer moved updatedAt past the completion")
}

// An instance whose activity no runtime has registered says so in its
// status (Waiting), as one whose orchestration is not registered does;
// once the activity has run, the note no longer shows.
func TestUnregisteredActivityIsNamedInWaiting(t *testing.T) {
	p := newMemProvider()
	orch := func(ctx *OrchestrationContext, in string) (string, error) {
		if _, err := CallActivity[string](ctx, "Missing", in).Await(); err != nil {
			return "", err
		}
		ctx.SetCustomStatus("past the activity")
		return WaitEvent[string](ctx, "go").Await()
	}
	without := NewRegistry()
	require.NoError(t, RegisterOrchestration(without, "NeedsMissing", orch))
	opts := Options{UnregisteredBackoff: Backoff{Base: 20 * time.Millisecond, Max: 50 * time.Millisecond}, MaxAttempts: 1000}
	rt, err := Start(t.Context(), p, without, fastOptions(opts))
	require.NoError(t, err)
	c := NewClient(p)
	require.NoError(t, c.StartOrchestration(t.Context(), "missing-1", "NeedsMissing", "x"))
	var st *OrchestrationStatus
	require.Eventually(t, func() bool {
		st, err = c.Status(t.Context(), "missing-1")
		require.NoError(t, err)
		return st.Waiting != ""
	}, testWait, 10*time.Millisecond, "no Waiting text for an unregistered activity")
	require.Equal(t, StateRunning, st.State)
	require.Contains(t, st.Waiting, `waiting for activity "Missing", which is not registered on any runtime`)
	require.NoError(t, rt.Shutdown(t.Context()))

	with := NewRegistry()
	require.NoError(t, RegisterOrchestration(with, "NeedsMissing", orch))
	require.NoError(t, RegisterActivity(with, "Missing", func(_ ActivityContext, in string) (string, error) { return in, nil }))
	startRuntime(t, p, with, opts)
	require.Eventually(t, func() bool {
		st, err = c.Status(t.Context(), "missing-1")
		require.NoError(t, err)
		return st.CustomStatus != nil
	}, testWait, 10*time.Millisecond)
	require.Equal(t, StateRunning, st.State)
	require.Empty(t, st.Waiting, "the note outlived the activity it was about")
}
