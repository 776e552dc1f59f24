package durable

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// withoutSuspension hides every optional capability of a provider, as a
// third-party provider that implements only the contract would.
type withoutSuspension struct{ duroxide.Provider }

// A provider that is not a duroxide.SuspensionReader cannot hold an
// instance's messages back, so the Client refuses Suspend and Resume with
// ErrSuspensionNotSupported, and the instance runs on untouched (the
// contract suite's lifecycle module skips for such a provider; this is
// what its users get instead).
func TestSuspendOnAProviderWithoutSuspension(t *testing.T) {
	reg := NewRegistry()
	require.NoError(t, RegisterOrchestration(reg, "Waits", func(ctx *OrchestrationContext, _ string) (string, error) {
		return DequeueEvent[string](ctx, "go").Await()
	}))
	p := withoutSuspension{newMemProvider()}
	_, ok := duroxide.Provider(p).(duroxide.SuspensionReader)
	require.False(t, ok, "the wrapper hides the capability")
	rt := startRuntime(t, p, reg, Options{})
	c := rt.Client()
	require.NoError(t, c.StartOrchestration(t.Context(), "no-suspend", "Waits", ""))

	require.ErrorIs(t, c.Suspend(t.Context(), "no-suspend", "maintenance"), ErrSuspensionNotSupported)
	require.ErrorIs(t, c.Resume(t.Context(), "no-suspend", "done"), ErrSuspensionNotSupported)
	require.NoError(t, c.EnqueueEvent(t.Context(), "no-suspend", "go", "ran on"))
	st := waitDone(t, c, "no-suspend")
	require.Equal(t, StateCompleted, st.State)
	require.Equal(t, "ran on", st.Output)
}
