package cdb

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
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
	return thStoreWith(t, retry, nil)
}

func thStoreWith(t *testing.T, retry RetryOptions, opts *azcosmos.ClientOptions) (*cosmostest.Server, *cosmos.Store) {
	t.Helper()
	srv := cosmostest.New(t, nil)
	client, err := srv.NewClient(opts)
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

// lossyTransport loses the response of the first document create after
// the server applied it, with a transport error azcosmos' Cosmos policy
// does not recognise (so it leaves the decision to the layers above).
type lossyTransport struct {
	inner *http.Client
	lost  atomic.Bool
}

func (l *lossyTransport) Do(r *http.Request) (*http.Response, error) {
	resp, err := l.inner.Do(r)
	create := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/docs") &&
		r.Header.Get("x-ms-documentdb-isquery") == "" && r.Header.Get("x-ms-cosmos-is-batch-request") == "" &&
		r.Header.Get("x-ms-documentdb-is-upsert") == ""
	if err == nil && create && l.lost.CompareAndSwap(false, true) {
		_ = resp.Body.Close()
		return nil, errors.New("injected: response lost in transit")
	}
	return resp, err
}

// TestAWriteWhoseResponseWasLostIsNotResent: a create applied by the
// server whose response is lost must not be sent again underneath the
// store (azcore retried unknown transport errors, on writes too): the
// resend would be a second write, and its 409 would read as "someone
// else's document". The caller gets the ambiguous transport error.
func TestAWriteWhoseResponseWasLostIsNotResent(t *testing.T) {
	t.Parallel()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	srv, s := thStoreWith(t, RetryOptions{}, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: &lossyTransport{inner: &http.Client{Transport: tr}}}})
	_, err := s.Create(t.Context(), "th-4", etDoc("th-4", "d"))
	require.Error(t, err)
	require.NotErrorIs(t, err, cosmos.ErrConflict, "the write was sent a second time")
	require.True(t, cosmos.MayHaveApplied(err), "the outcome is unknown: %v", err)
	require.Equal(t, 1, etCount(srv, cosmostest.OpCreateItem))
}
