package durable

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

// hourPoll is a poll interval no test outlasts: a wait that returns
// under it was woken, not polled.
const hourPoll = time.Hour

// readSignalling is a memprovider as a Client sees it with no
// management (so every check of a wait reads the history) that reports
// each history read, so a test acts only once a wait has read at least
// once and is asleep or about to be. Its other capabilities, the
// InstanceEndNotifier among them, are the memprovider's.
type readSignalling struct {
	*memprovider.Provider
	reads chan struct{}
}

func (r *readSignalling) Admin() duroxide.ProviderAdmin { return nil }

func (r *readSignalling) Read(ctx context.Context, instance string) ([]duroxide.Event, error) {
	h, err := r.Provider.Read(ctx, instance)
	select {
	case r.reads <- struct{}{}:
	default:
	}
	return h, err
}

// silentEnds is a provider whose InstanceEndNotifier never fires, as for
// an instance another process ends.
type silentEnds struct{ duroxide.Provider }

func (silentEnds) NotifyInstanceEnd(string, func()) (cancel func()) { return func() {} }

// eventOrchestration registers "O", which returns the "go" event's data.
func eventOrchestration(t *testing.T) *Registry {
	t.Helper()
	reg := NewRegistry()
	require.NoError(t, reg.AddOrchestration("O", func(ctx *OrchestrationContext, _ string) (string, error) {
		return WaitEvent[string](ctx, "go").Await()
	}))
	return reg
}

// startWaiting starts instance on a runtime over mp and returns once its
// first turn (which subscribes to "go") has committed, so a raised "go"
// reaches it.
func startWaiting(t *testing.T, mp *memprovider.Provider, instance string) *Client {
	t.Helper()
	startRuntime(t, mp, eventOrchestration(t), Options{})
	c := NewClient(mp)
	require.NoError(t, c.StartOrchestration(t.Context(), instance, "O", ""))
	for {
		st, err := c.Status(t.Context(), instance)
		require.NoError(t, err)
		if st.State == StateRunning {
			return c
		}
		require.NoError(t, sleepCtx(t.Context(), time.Millisecond, nil))
	}
}

// waitResult runs c.WaitForOrchestration(instance) in the background.
func waitResult(ctx context.Context, c *Client, instance string, o WaitOptions) <-chan error {
	done := make(chan error, 1)
	go func() {
		st, err := c.WaitForOrchestration(ctx, instance, o)
		if err == nil && st.State != StateCompleted {
			err = fmt.Errorf("the wait returned state %v", st.State)
		}
		done <- err
	}()
	return done
}

func TestWaitForOrchestrationWakesOnTheCommitThatEndsIt(t *testing.T) {
	mp := newMemProvider()
	starter := startWaiting(t, mp, "woken")
	w := &readSignalling{Provider: mp, reads: make(chan struct{}, 1)}
	// The bound only stops a wait that was not woken; the hour-long poll
	// interval means a return before it came from the notification.
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	done := waitResult(ctx, NewClient(w), "woken", WaitOptions{PollInterval: hourPoll})
	<-w.reads // the wait saw it running and sleeps for an hour
	require.NoError(t, starter.RaiseEvent(t.Context(), "woken", "go", "x"))
	require.NoError(t, <-done, "the wait was not woken by the commit that completed the instance")
}

func TestWaitForOrchestrationPollsForAnEndItIsNotToldOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(*memprovider.Provider) duroxide.Provider
	}{
		{"no capability", func(mp *memprovider.Provider) duroxide.Provider { return struct{ duroxide.Provider }{mp} }},
		{"never notified", func(mp *memprovider.Provider) duroxide.Provider { return silentEnds{mp} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mp := newMemProvider()
			starter := startWaiting(t, mp, "polled")
			ctx, cancel := context.WithTimeout(t.Context(), testWait)
			defer cancel()
			done := waitResult(ctx, NewClient(tc.wrap(mp)), "polled", WaitOptions{PollInterval: time.Millisecond})
			require.NoError(t, starter.RaiseEvent(t.Context(), "polled", "go", "x"))
			require.NoError(t, <-done)
		})
	}
}
