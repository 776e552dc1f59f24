package cdb_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// Ping answers nil from a working container for one request, a retryable
// error while the network fails, and a permanent one once the container is
// gone, so a readiness probe can tell "wait" from "misconfigured".
func TestPing(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	errReset := errors.New("injected: connection reset")
	hooks := &testhooks.Hooks{Before: func(_ context.Context, c testhooks.Call) error {
		if fail.Load() {
			return errReset
		}
		return nil
	}}
	h := newHarness(t, cdb.Options{}, withSeam(testhooks.Seam{Cosmos: hooks}))
	ctx := t.Context()

	h.p.ResetRequestStats()
	require.NoError(t, h.p.Ping(ctx))
	require.Equal(t, int64(1), h.p.RequestStats().Total(), "a ping is one point read")

	fail.Store(true)
	err := h.p.Ping(ctx)
	require.ErrorIs(t, err, errReset)
	require.ErrorIs(t, err, duroxide.ErrRetryable)
	fail.Store(false)

	client, err := azcosmos.NewClientFromConnectionString("AccountEndpoint="+h.srv.Endpoint()+";AccountKey="+h.srv.Key()+";", hClientOptions())
	require.NoError(t, err)
	c, err := client.NewContainer(hDatabase, hContainer)
	require.NoError(t, err)
	_, err = c.Delete(ctx, nil)
	require.NoError(t, err)
	err = h.p.Ping(ctx)
	require.Error(t, err, "a deleted container is not healthy")
	require.ErrorIs(t, err, duroxide.ErrPermanent)
}
