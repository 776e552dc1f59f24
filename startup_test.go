package cdb_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
)

// Startup tried as a new user would: bad endpoints, dead endpoints,
// deadlines, wrong keys and accounts whose consistency cannot work.

func startupConfig(endpoint, key string) cdb.Config {
	return cdb.Config{Endpoint: endpoint, Key: key, Database: hDatabase, Container: hContainer, ClientOptions: hClientOptions()}
}

// startupOptions turn the maintenance loop off.
var startupOptions = &cdb.Options{MaintenanceInterval: -1}

func TestStartupEndpointWithoutSchemeIsAConfigError(t *testing.T) {
	for _, ep := range []string{"myacct.documents.azure.com:443", "myacct.documents.azure.com", "ftp://x/", "https://"} {
		_, err := cdb.New(t.Context(), startupConfig(ep, testKey), startupOptions)
		require.ErrorIs(t, err, cdb.ErrConfig, ep)
		require.False(t, duroxide.IsRetryable(err), ep)
		require.Contains(t, err.Error(), "scheme", ep)
	}
}

const testKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// TestStartupRefusedConnectionIsRetryable: nothing listens at the
// endpoint. The error says so and is retryable, like any transport error.
func TestStartupRefusedConnectionIsRetryable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = cdb.New(t.Context(), startupConfig("http://"+addr+"/", testKey), startupOptions)
	require.Error(t, err)
	require.True(t, duroxide.IsRetryable(err), "%v", err)
	var ce *cdb.RequestError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, 0, ce.StatusCode)
	require.Contains(t, err.Error(), "refused")
}

// TestStartupHonoursContextDeadline: the endpoint accepts connections and
// never answers. New must give up when ctx does, with a retryable error
// that wraps context.DeadlineExceeded (it used to run its own retries
// past the deadline).
func TestStartupHonoursContextDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never answered
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err = cdb.New(ctx, startupConfig("http://"+ln.Addr().String()+"/", testKey), startupOptions)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.True(t, duroxide.IsRetryable(err), "%v", err)
}

// TestStartupExpiredContext: a context that is already done sends nothing.
func TestStartupExpiredContext(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := cdb.New(ctx, startupConfig(srv.Endpoint(), srv.Key()), startupOptions)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, duroxide.IsRetryable(err))
	require.Zero(t, srv.Counts()[cosmostest.OpReadAccount])
}

// TestStartupWrongKeyIsPermanentWithTheServiceMessage: a 401 is
// permanent, and its message is the service's, decoded (no "rn" left of
// the \r\n, no backslashes), with the ActivityId.
func TestStartupWrongKeyIsPermanentWithTheServiceMessage(t *testing.T) {
	t.Parallel()
	srv := cosmostest.New(t, nil)
	wrong := "dGhpcyBpcyBub3QgdGhlIGtleSB0aGlzIGlzIG5vdCB0aGUga2V5IDAxMjM0NTY3ODk="
	_, err := cdb.New(t.Context(), startupConfig(srv.Endpoint(), wrong), startupOptions)
	require.Error(t, err)
	require.False(t, duroxide.IsRetryable(err), "%v", err)
	var ce *cdb.RequestError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, 401, ce.StatusCode)
	require.NotEmpty(t, ce.ActivityID)
	require.Contains(t, ce.Message, "ActivityId: "+ce.ActivityID)
	require.NotContains(t, ce.Message, `\`)
	require.NotContains(t, ce.Message, "rnActivityId")
	require.Contains(t, ce.Message, "authorization")
}

// TestStartupConsistency: Eventual and Consistent Prefix accounts are
// refused unless the risk is accepted; Session, Bounded Staleness and
// Strong start.
func TestStartupConsistency(t *testing.T) {
	for _, c := range []struct {
		level string
		ok    bool
	}{{"Session", true}, {"BoundedStaleness", true}, {"Strong", true}, {"ConsistentPrefix", false}, {"Eventual", false}} {
		t.Run(c.level, func(t *testing.T) {
			srv := cosmostest.New(t, &cosmostest.Options{ConsistencyLevel: c.level})
			p, err := cdb.New(t.Context(), startupConfig(srv.Endpoint(), srv.Key()), startupOptions)
			if c.ok {
				require.NoError(t, err)
				require.NoError(t, p.Close())
				return
			}
			require.ErrorIs(t, err, cdb.ErrWeakConsistency)
			require.ErrorIs(t, err, cdb.ErrConfig)
			require.False(t, duroxide.IsRetryable(err))
			require.Contains(t, err.Error(), c.level)
			require.Contains(t, err.Error(), "AcceptWeakConsistency")
			require.Zero(t, srv.Counts()[cosmostest.OpReadContainer], "nothing else is sent")

			cfg := startupConfig(srv.Endpoint(), srv.Key())
			cfg.AcceptWeakConsistency = true
			p, err = cdb.New(t.Context(), cfg, startupOptions)
			require.NoError(t, err)
			require.NoError(t, p.Close())
		})
	}
}

// TestStartupErrorsAreProviderErrors: every startup failure is a
// *duroxide.ProviderError, like the provider's other errors.
func TestStartupErrorsAreProviderErrors(t *testing.T) {
	for _, cfg := range []cdb.Config{
		{},
		startupConfig("nohost", testKey),
		{Endpoint: "https://x/", Key: "not base64!"},
	} {
		_, err := cdb.New(t.Context(), cfg, startupOptions)
		var pe *duroxide.ProviderError
		require.True(t, errors.As(err, &pe), "%v", err)
		require.True(t, strings.HasPrefix(err.Error(), "new: "), "%v", err)
	}
}
