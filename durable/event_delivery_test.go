package durable

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestEarlyRaisedEventIsDroppedEarlyQueueMessageIsKept shows the
// difference the docs of WaitEvent and DequeueEvent describe. A raised
// event and a queue message, both sent before the orchestration runs at
// all, reach its first turn together: DequeueEvent gets the queued one,
// while the raised one came before the WaitEvent of its name and is
// dropped; the wait is satisfied only by an event raised after it.
func TestEarlyRaisedEventIsDroppedEarlyQueueMessageIsKept(t *testing.T) {
	reg := NewRegistry()
	require.NoError(t, RegisterOrchestration(reg, "Signals", func(ctx *OrchestrationContext, _ string) (string, error) {
		queued, err := DequeueEvent[string](ctx, "go").Await()
		if err != nil {
			return "", err
		}
		raised := WaitEvent[string](ctx, "go")
		ctx.SetCustomStatus("waiting")
		got, err := raised.Await()
		return queued + " then " + got, err
	}))
	p := newMemProvider()
	c := NewClient(p)
	ctx := t.Context()
	require.NoError(t, c.StartOrchestration(ctx, "signals-1", "Signals", ""))
	require.NoError(t, c.EnqueueEvent(ctx, "signals-1", "go", "early queued"))
	require.NoError(t, c.RaiseEvent(ctx, "signals-1", "go", "early raised"))

	startRuntime(t, p, reg, Options{})
	st, err := c.WaitForStatusChange(ctx, "signals-1", 0, WaitOptions{Timeout: testWait, PollInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, StateRunning, st.State, "the early raised event must not satisfy the wait")
	require.NoError(t, c.RaiseEvent(ctx, "signals-1", "go", "late raised"))
	st = waitDone(t, c, "signals-1")
	out, err := DecodeOutput[string](st)
	require.NoError(t, err)
	require.Equal(t, "early queued then late raised", out)
}
