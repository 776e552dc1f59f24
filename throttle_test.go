package cdb

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// The throttling budget (issue 19, 3): the store is the only one to retry
// a 429, so RetryOptions bound every request the service sees, the
// context's deadline included, and RequestStats counts each of them.

// thStore is etStore with the SDK's default client options: its own retry
// policies are left as a caller who sets none gets them.
func thStore(t *testing.T, retry RetryOptions) (*cosmostest.Server, *cosmos.Store) {
	t.Helper()
	srv := cosmostest.NewTestServer(t, nil)
	client, err := srv.NewClient(nil)
	require.NoError(t, err)
	t.Cleanup(client.Close)
	ctx := t.Context()
	_, err = client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: etDatabase}, nil)
	require.NoError(t, err)
	db, err := client.NewDatabase(etDatabase)
	require.NoError(t, err)
	_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: etContainer,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{PartitionKeyPath}, Kind: azcosmos.PartitionKeyKindHash, Version: 2}}, nil)
	require.NoError(t, err)
	c, err := client.NewContainer(etDatabase, etContainer)
	require.NoError(t, err)
	return srv, cosmos.NewStore(c, retry, nil)
}

// TestThrottleBudgetCountsEveryRequest: a throttling storm answered with
// x-ms-retry-after-ms 100 against a 300 ms budget is sent four times (the
// request and three waits of 100 ms), not four times per attempt with the
// SDK's own three retries underneath; the store gives up with the 429,
// and its statistics count what the server saw.
func TestThrottleBudgetCountsEveryRequest(t *testing.T) {
	t.Parallel()
	srv, s := thStore(t, RetryOptions{MaxThrottleRetries: 100, MaxThrottleWait: 300 * time.Millisecond})
	srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Status: http.StatusTooManyRequests,
		Headers: map[string]string{"x-ms-retry-after-ms": "100"}})
	var waits []time.Duration
	s.Sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	_, err := s.Create(t.Context(), "th-1", etDoc("th-1", "d"))
	require.ErrorIs(t, err, cosmos.ErrThrottled)
	require.Equal(t, 4, etCount(srv, cosmostest.OpCreateItem), "the request and 3 retries fit in the budget; nothing else may retry")
	require.Equal(t, []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}, waits)
	st := s.Counters()[OpCreate]
	require.EqualValues(t, 4, st.Requests, "every request the server saw is counted")
	require.EqualValues(t, 4, st.Failures)
	require.EqualValues(t, 4, st.Throttles)
	require.EqualValues(t, 3, st.Retries)
}

// TestThrottleHonoursTheContextDeadline: a throttled request whose
// retry-after would end past the caller's deadline is not waited for:
// the store gives up at once with the 429 (not with the deadline's error
// after sleeping until it).
func TestThrottleHonoursTheContextDeadline(t *testing.T) {
	t.Parallel()
	srv, s := thStore(t, RetryOptions{MaxThrottleRetries: 5, MaxThrottleWait: time.Minute})
	srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Status: http.StatusTooManyRequests,
		Headers: map[string]string{"x-ms-retry-after-ms": "60000"}})
	slept := false
	s.Sleep = func(context.Context, time.Duration) error { slept = true; return nil }
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := s.Create(ctx, "th-2", etDoc("th-2", "d"))
	require.ErrorIs(t, err, cosmos.ErrThrottled)
	require.False(t, slept, "a wait past the deadline was started")
	require.Equal(t, 1, etCount(srv, cosmostest.OpCreateItem))
}

// TestRequestStatsCountTheSDKsOwnAttempts: a read answered 404/1002
// (read session not available) is sent again by azcosmos' own policy;
// the provider's statistics count both requests.
func TestRequestStatsCountTheSDKsOwnAttempts(t *testing.T) {
	t.Parallel()
	srv, p := etProvider(t, Options{})
	ctx := t.Context()
	_, err := p.st.Create(ctx, "th-3", etDoc("th-3", "d"))
	require.NoError(t, err)
	p.st.ResetStats()
	before := etCount(srv, cosmostest.OpReadItem)
	srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpReadItem, Status: http.StatusNotFound, SubStatus: 1002, Times: 1})
	_, _, err = p.st.Read(ctx, "th-3", "d")
	require.NoError(t, err)
	sent := etCount(srv, cosmostest.OpReadItem) - before
	require.Equal(t, 2, sent, "azcosmos retries a 404/1002 once")
	st := p.RequestStats()[OpRead]
	require.EqualValues(t, sent, st.Requests, "every attempt is counted")
	require.EqualValues(t, 1, st.Failures)
}
