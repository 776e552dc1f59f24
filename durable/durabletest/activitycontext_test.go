package durabletest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/durable/durabletest"
	"github.com/duroxide-go/cdb/memprovider"
)

// TestNewActivityContext: an activity function unit-tested outside a
// runtime sees the instance, name and client it was given, and the
// context's cancellation.
func TestNewActivityContext(t *testing.T) {
	client := durable.NewClient(memprovider.New())
	ctx, cancel := context.WithCancel(t.Context())
	a := durabletest.NewActivityContext(ctx, "inst-1", "Charge", client)
	require.Equal(t, "inst-1", a.InstanceID())
	require.Equal(t, "Charge", a.ActivityName())
	require.Same(t, client, a.Client())
	require.False(t, a.IsCancelled())
	cancel()
	require.True(t, a.IsCancelled())
	require.NotNil(t, a.Logger())

	noClient := durabletest.NewActivityContext(t.Context(), "inst-2", "Ship", nil)
	require.Nil(t, noClient.Client())
}
