package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"

	"github.com/duroxide-go/cdb/internal/cosmos"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// Error mapping at the one layer that talks to Cosmos (store.do): every
// failure becomes a *RequestError whose Retryable follows the status and
// substatus table, a rolled-back transactional batch becomes a
// *BatchError naming the failing operation, throttling is retried within
// the RetryOptions budget and the Hooks can stop a request or lose its
// response. Faults come from the cosmostest server, so the errors are the
// ones azcosmos really produces.

const (
	etDatabase  = "etdb"
	etContainer = "etcoll"
)

// etClientOptions turns the SDK's own retries off so that each fault is
// seen exactly once.
func etClientOptions() *azcosmos.ClientOptions {
	return &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}}
}

// etStore starts a server with a bootstrapped container and returns a
// store over it.
func etStore(t *testing.T, retry RetryOptions, hooks *testhooks.Hooks) (*cosmostest.Server, *cosmos.Store) {
	t.Helper()
	srv := cosmostest.New(t, nil)
	client, err := srv.NewClient(etClientOptions())
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
	return srv, cosmos.NewStore(c, retry, hooks)
}

// etProvider starts a server and a provider on it (bootstrapped).
func etProvider(t *testing.T, o Options) (*cosmostest.Server, *Provider) {
	t.Helper()
	return etProviderWith(t, testhooks.Seam{}, o)
}

// etProviderWith is etProvider for a provider with the test seam s, given
// to New in its context.
func etProviderWith(t *testing.T, s testhooks.Seam, o Options) (*cosmostest.Server, *Provider) {
	t.Helper()
	srv := cosmostest.New(t, nil)
	if o.MaintenanceInterval == 0 {
		o.MaintenanceInterval = -1
	}
	p, err := New(testhooks.With(t.Context(), &s), Config{Endpoint: srv.Endpoint(), Key: srv.Key(), Database: etDatabase, Container: etContainer,
		ClientOptions: etClientOptions()}, &o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return srv, p
}

func etDoc(inst, id string) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"instanceId":%q,"type":"test"}`, id, inst))
}

func etCount(srv *cosmostest.Server, op cosmostest.Op) int { return srv.Counts()[op] }

func etDocs(t *testing.T, srv *cosmostest.Server) int {
	t.Helper()
	d, err := srv.Documents(etDatabase, etContainer)
	require.NoError(t, err)
	return len(d)
}

// TestErrorsClassificationTable injects each status (and substatus) the
// table covers into a create and checks the *RequestError: status,
// substatus, the call it belongs to, the service message, and whether
// repeating the request can succeed.
func TestErrorsClassificationTable(t *testing.T) {
	t.Parallel()
	srv, s := etStore(t, RetryOptions{MaxThrottleRetries: -1}, nil)
	cases := []struct {
		name      string
		status    int
		sub       int
		retryable bool
	}{
		{"408 request timeout", http.StatusRequestTimeout, 0, true},
		{"409 conflict", http.StatusConflict, 0, false},
		{"410 gone", http.StatusGone, 0, true},
		{"412 precondition failed", http.StatusPreconditionFailed, 0, true},
		{"413 entity too large", http.StatusRequestEntityTooLarge, 0, false},
		{"429 throttled", http.StatusTooManyRequests, 3200, true},
		{"449 retry with", 449, 0, true},
		{"500 internal error", http.StatusInternalServerError, 0, true},
		{"502 bad gateway", http.StatusBadGateway, 0, true},
		{"503 unavailable", http.StatusServiceUnavailable, 0, true},
		{"504 gateway timeout", http.StatusGatewayTimeout, 0, true},
		{"403/5300 AAD control plane", http.StatusForbidden, 5300, false},
		{"403/5301 no role assignment", http.StatusForbidden, 5301, false},
		{"403 forbidden", http.StatusForbidden, 0, false},
		{"401 unauthorized", http.StatusUnauthorized, 0, false},
		{"404 not found", http.StatusNotFound, 0, false},
		{"400 bad request", http.StatusBadRequest, 0, false},
	}
	ctx := t.Context()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inst := fmt.Sprintf("cls-%d", i)
			remove := srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Status: c.status, SubStatus: c.sub, Times: 1})
			defer remove()
			before := etCount(srv, cosmostest.OpCreateItem)
			_, err := s.Create(ctx, inst, etDoc(inst, "d"))
			require.Error(t, err)
			require.Equal(t, 1, etCount(srv, cosmostest.OpCreateItem)-before, "the store must not retry %d itself", c.status)
			var ce *RequestError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, c.status, ce.StatusCode)
			require.Equal(t, c.sub, ce.SubStatus)
			require.Equal(t, OpCreate, ce.Call.Op)
			require.Equal(t, inst, ce.Call.PartitionKey)
			require.NotEmpty(t, ce.ActivityID)
			require.Contains(t, ce.Error(), fmt.Sprintf("status %d", c.status))
			require.Equal(t, c.retryable, ce.Retryable(), "%d/%d", c.status, c.sub)
			var re *azcore.ResponseError
			require.ErrorAs(t, err, &re, "the SDK's error stays reachable")
		})
	}

	t.Run("transport error", func(t *testing.T) {
		remove := srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Drop: cosmostest.DropBeforeApply, Times: 1})
		defer remove()
		_, err := s.Create(ctx, "cls-transport", etDoc("cls-transport", "d"))
		var ce *RequestError
		require.ErrorAs(t, err, &ce)
		require.Zero(t, ce.StatusCode)
		require.True(t, ce.Retryable(), "a reset connection is transient: %v", err)
	})
	t.Run("transport error after apply", func(t *testing.T) {
		remove := srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Drop: cosmostest.DropAfterApply, Times: 1})
		defer remove()
		_, err := s.Create(ctx, "cls-transport2", etDoc("cls-transport2", "d"))
		var ce *RequestError
		require.ErrorAs(t, err, &ce)
		require.Zero(t, ce.StatusCode)
		require.True(t, ce.Retryable())
		// The write happened: the retry the classification invites is a 409.
		_, err = s.Create(ctx, "cls-transport2", etDoc("cls-transport2", "d"))
		require.True(t, errors.Is(err, cosmos.ErrConflict), "%v", err)
	})
	t.Run("context canceled in flight", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		// The fault cancels the caller's context once the request reached
		// the server, then holds the request until the client gives up.
		remove := srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Delay: time.Minute, Times: 1,
			Match: func(*http.Request) bool { cancel(); return true }})
		defer remove()
		_, err := s.Create(cctx, "cls-cancel", etDoc("cls-cancel", "d"))
		var ce *RequestError
		require.ErrorAs(t, err, &ce)
		require.Zero(t, ce.StatusCode)
		require.ErrorIs(t, err, context.Canceled)
		require.False(t, ce.Retryable(), "a canceled call is not worth retrying")
	})
	t.Run("context canceled before sending", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := s.Create(cctx, "cls-cancel2", etDoc("cls-cancel2", "d"))
		var ce *RequestError
		require.ErrorAs(t, err, &ce)
		require.ErrorIs(t, err, context.Canceled)
		require.False(t, ce.Retryable())
	})
	require.Equal(t, 1, etDocs(t, srv), "only the create dropped after apply was stored")
}

// TestErrorsClassificationFailoverSubstatuses covers 403/3 (write
// forbidden) and 403/1008 (account not found), which occur during a
// regional failover. azcosmos itself retries them (up to 120 times, a
// second apart, refreshing the account topology), so a fault on the fake
// server would take minutes to reach the store; the classification is
// checked on the error azcore builds from such a response instead.
func TestErrorsClassificationFailoverSubstatuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sub       int
		retryable bool
	}{{3, true}, {1008, true}, {5300, false}, {5301, false}, {0, false}} {
		resp := &http.Response{StatusCode: http.StatusForbidden, Status: "403 Forbidden", Header: http.Header{},
			Body:    io.NopCloser(strings.NewReader(`{"code":"Forbidden","message":"refused"}`)),
			Request: &http.Request{Method: http.MethodPost, URL: &url.URL{Scheme: "https", Host: "acct.documents.azure.com", Path: "/dbs/d/colls/c/docs"}}}
		resp.Header.Set("x-ms-substatus", strconv.Itoa(c.sub))
		resp.Header.Set("x-ms-activity-id", "a1")
		err := cosmos.Classify(cosmos.Call{Op: OpCreate, PartitionKey: "p"}, runtime.NewResponseError(resp))
		var ce *RequestError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, http.StatusForbidden, ce.StatusCode)
		require.Equal(t, c.sub, ce.SubStatus)
		require.Equal(t, "a1", ce.ActivityID)
		require.Equal(t, "refused", ce.Message)
		require.Equal(t, c.retryable, ce.Retryable(), "403/%d", c.sub)
	}
}

// TestErrorsRetryAfterParsed: the throttling delay the service asks for is
// carried on the error.
func TestErrorsRetryAfterParsed(t *testing.T) {
	t.Parallel()
	srv, s := etStore(t, RetryOptions{MaxThrottleRetries: -1}, nil)
	srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpReadItem, Status: http.StatusTooManyRequests, SubStatus: 3200,
		Headers: map[string]string{"x-ms-retry-after-ms": "123.5"}, Times: 1})
	_, _, err := s.Read(t.Context(), "ra", "x")
	var ce *RequestError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, http.StatusTooManyRequests, ce.StatusCode)
	require.Equal(t, 3200, ce.SubStatus)
	require.Equal(t, 123500*time.Microsecond, ce.RetryAfter)
	require.Equal(t, OpRead, ce.Call.Op)
	require.Equal(t, "x", ce.Call.ID)
	require.True(t, ce.Retryable())
}

// TestErrorsBatchFailureIsBatchError: a transactional batch the service
// rolls back (HTTP 207) surfaces as *BatchError with the index, status and
// id of the operation that failed; nothing of the batch is applied. A
// batch that fails as a whole is a *RequestError instead.
func TestErrorsBatchFailureIsBatchError(t *testing.T) {
	t.Parallel()
	srv, s := etStore(t, RetryOptions{MaxThrottleRetries: -1}, nil)
	ctx := t.Context()
	const inst = "batch-1"
	etag, err := s.Create(ctx, inst, etDoc(inst, "exists"))
	require.NoError(t, err)

	cases := []struct {
		name   string
		build  func(b *cosmos.Batch)
		index  int
		status int
		id     string
	}{
		{"duplicate create", func(b *cosmos.Batch) {
			b.Create(etDoc(inst, "new-1"))
			b.Add(cosmos.BatchOp{Kind: cosmos.BatchCreate, ID: "exists", Doc: etDoc(inst, "exists")})
			b.Create(etDoc(inst, "new-2"))
		}, 1, http.StatusConflict, "exists"},
		{"replace of a missing document", func(b *cosmos.Batch) {
			b.Create(etDoc(inst, "new-1"))
			b.Upsert(etDoc(inst, "new-2"), nil)
			b.Replace("missing", etDoc(inst, "missing"), nil)
		}, 2, http.StatusNotFound, "missing"},
		{"stale etag", func(b *cosmos.Batch) {
			stale := azcore.ETag(`"stale"`)
			b.Replace("exists", etDoc(inst, "exists"), &stale)
			b.Create(etDoc(inst, "new-1"))
		}, 0, http.StatusPreconditionFailed, "exists"},
		{"delete of a missing document", func(b *cosmos.Batch) {
			b.Delete("exists", &etag)
			b.Delete("gone", nil)
		}, 1, http.StatusNotFound, "gone"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := etDocs(t, srv)
			b := cosmos.NewBatch(inst)
			c.build(b)
			_, err := s.Execute(ctx, b, false)
			var be *BatchError
			require.ErrorAs(t, err, &be, "%v", err)
			require.Equal(t, inst, be.Partition)
			require.Equal(t, c.index, be.Index)
			require.Equal(t, c.status, be.StatusCode)
			require.Equal(t, c.id, be.ID)
			require.Contains(t, be.Error(), fmt.Sprintf("operation %d", c.index))
			var ce *RequestError
			require.False(t, errors.As(err, &ce), "a rolled-back batch is not a request failure")
			require.Equal(t, before, etDocs(t, srv), "a rolled-back batch applied something")
		})
	}

	t.Run("tolerated failure is dropped and the rest commits", func(t *testing.T) {
		b := cosmos.NewBatch(inst)
		b.Delete("gone", nil, cosmos.ErrNotFound)
		b.Create(etDoc(inst, "tolerant-1"))
		_, err := s.ExecuteTolerant(ctx, b, false)
		require.NoError(t, err)
		_, _, err = s.Read(ctx, inst, "tolerant-1")
		require.NoError(t, err)
	})
	t.Run("whole-request failure is a RequestError", func(t *testing.T) {
		srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpBatch, Status: http.StatusServiceUnavailable, Times: 1})
		b := cosmos.NewBatch(inst)
		b.Create(etDoc(inst, "new-3"))
		_, err := s.Execute(ctx, b, false)
		var ce *RequestError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, OpBatch, ce.Call.Op)
		require.Equal(t, 1, ce.Call.Operations)
		require.True(t, ce.Retryable())
		var be *BatchError
		require.False(t, errors.As(err, &be))
	})
	t.Run("through the provider a duplicate history event is permanent", func(t *testing.T) {
		_, p := etProvider(t, Options{})
		ctx := t.Context()
		ev := duroxide.Event{EventID: 1, InstanceID: "dup", ExecutionID: 1, Kind: duroxide.OrchestrationStarted{Name: "O", Version: "1"}}
		require.NoError(t, p.AppendWithExecution(ctx, "dup", 1, []duroxide.Event{ev}))
		err := p.AppendWithExecution(ctx, "dup", 1, []duroxide.Event{ev})
		require.Error(t, err)
		require.False(t, duroxide.IsRetryable(err))
		require.Contains(t, err.Error(), "duplicate history event")
	})
}

// TestErrorsThrottleBudget: 429s are retried by the store, honouring
// x-ms-retry-after-ms, up to MaxThrottleRetries and MaxThrottleWait; a
// storm beyond the budget surfaces from the provider as a retryable
// ProviderError carrying the 429.
func TestErrorsThrottleBudget(t *testing.T) {
	ctx := t.Context()
	t.Run("retried within the budget then succeeds", func(t *testing.T) {
		srv, s := etStore(t, RetryOptions{MaxThrottleRetries: 3, MaxThrottleWait: 5 * time.Second}, nil)
		srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Status: http.StatusTooManyRequests,
			Headers: map[string]string{"x-ms-retry-after-ms": "5"}, Times: 3})
		_, err := s.Create(ctx, "t-1", etDoc("t-1", "d"))
		require.NoError(t, err)
		require.Equal(t, 4, etCount(srv, cosmostest.OpCreateItem))
		st := s.Stats()[OpCreate]
		require.Equal(t, int64(4), st.Requests)
		require.Equal(t, int64(3), st.Failures)
	})
	// azcore's pager is terminal after a failed fetch: retrying NextPage
	// would return the stored 429 without sending anything, so each page
	// must really be sent again, from its continuation.
	t.Run("a throttled query page is sent again", func(t *testing.T) {
		srv, s := etStore(t, RetryOptions{MaxThrottleRetries: 3, MaxThrottleWait: 5 * time.Second}, nil)
		for i := range 5 {
			_, err := s.Create(ctx, "q", etDoc("q", fmt.Sprintf("d%d", i)))
			require.NoError(t, err)
		}
		throttle := func(continued bool) {
			srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpQuery, Status: http.StatusTooManyRequests, Times: 1,
				Headers: map[string]string{"x-ms-retry-after-ms": "1"},
				Match:   func(r *http.Request) bool { return (r.Header.Get("x-ms-continuation") != "") == continued }})
		}
		part := "q"
		o := cosmos.QueryOptions{Partition: &part, PageSize: 2}
		q := "SELECT * FROM c WHERE c.instanceId = @i"
		params := cosmos.QueryParams{}.Add("@i", "q")

		throttle(false)
		throttle(true)
		n := 0
		more, err := s.Query(ctx, q, params, o, func([]byte) bool { n++; return true })
		require.NoError(t, err)
		require.False(t, more)
		require.Equal(t, 5, n, "every page was read")
		require.Equal(t, 3+2, etCount(srv, cosmostest.OpQuery), "3 pages, 2 of them sent twice")

		throttle(false)
		throttle(true)
		n = 0
		next, pages, err := s.QueryPages(ctx, q, params, o, nil, func(items [][]byte) bool { n += len(items); return true })
		require.NoError(t, err)
		require.Nil(t, next)
		require.Equal(t, 3, pages)
		require.Equal(t, 5, n)
		require.Equal(t, 2*(3+2), etCount(srv, cosmostest.OpQuery))
	})
	t.Run("retry count budget", func(t *testing.T) {
		srv, p := etProvider(t, Options{Retry: RetryOptions{MaxThrottleRetries: 3, MaxThrottleWait: 5 * time.Second}})
		srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Status: http.StatusTooManyRequests,
			Headers: map[string]string{"x-ms-retry-after-ms": "2"}})
		before := etDocs(t, srv)
		err := p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: "storm", Orchestration: "O", ExecutionID: 1}, 0)
		require.Error(t, err)
		var pe *duroxide.ProviderError
		require.ErrorAs(t, err, &pe)
		require.True(t, duroxide.IsRetryable(err), "a throttling storm is retryable: %v", err)
		require.ErrorIs(t, err, duroxide.ErrRetryable)
		var ce *RequestError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, http.StatusTooManyRequests, ce.StatusCode)
		require.Equal(t, 4, etCount(srv, cosmostest.OpCreateItem), "one request and MaxThrottleRetries retries")
		require.Equal(t, before, etDocs(t, srv))
	})
	t.Run("retry wait budget", func(t *testing.T) {
		srv, s := etStore(t, RetryOptions{MaxThrottleRetries: 100, MaxThrottleWait: 50 * time.Millisecond}, nil)
		srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Status: http.StatusTooManyRequests,
			Headers: map[string]string{"x-ms-retry-after-ms": "20"}})
		start := time.Now()
		_, err := s.Create(ctx, "t-2", etDoc("t-2", "d"))
		require.Equal(t, http.StatusTooManyRequests, cosmos.StatusOf(err))
		// Waits of 20 and 20 ms fit in 50 ms, a third would not.
		require.Equal(t, 3, etCount(srv, cosmostest.OpCreateItem))
		require.GreaterOrEqual(t, time.Since(start), 40*time.Millisecond, "retry-after was not honoured")
	})
	t.Run("negative disables", func(t *testing.T) {
		srv, s := etStore(t, RetryOptions{MaxThrottleRetries: -1}, nil)
		srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Status: http.StatusTooManyRequests})
		_, err := s.Create(ctx, "t-3", etDoc("t-3", "d"))
		require.Equal(t, http.StatusTooManyRequests, cosmos.StatusOf(err))
		require.Equal(t, 1, etCount(srv, cosmostest.OpCreateItem))
	})
	t.Run("other statuses are not retried", func(t *testing.T) {
		srv, s := etStore(t, RetryOptions{MaxThrottleRetries: 5}, nil)
		srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Status: http.StatusServiceUnavailable})
		_, err := s.Create(ctx, "t-4", etDoc("t-4", "d"))
		require.Equal(t, http.StatusServiceUnavailable, cosmos.StatusOf(err))
		require.Equal(t, 1, etCount(srv, cosmostest.OpCreateItem), "a 503 on a write has an unknown outcome; callers retry")
	})
	t.Run("cancel stops the wait", func(t *testing.T) {
		srv, s := etStore(t, RetryOptions{MaxThrottleRetries: 5, MaxThrottleWait: time.Minute}, nil)
		srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Status: http.StatusTooManyRequests,
			Headers: map[string]string{"x-ms-retry-after-ms": "60000"}})
		cctx, cancel := context.WithCancel(ctx)
		sleep := s.Sleep
		s.Sleep = func(ctx context.Context, d time.Duration) error {
			require.Equal(t, time.Minute, d)
			cancel()
			return sleep(ctx, d)
		}
		_, err := s.Create(cctx, "t-5", etDoc("t-5", "d"))
		require.Equal(t, http.StatusTooManyRequests, cosmos.StatusOf(err))
		require.Equal(t, 1, etCount(srv, cosmostest.OpCreateItem))
	})
}

// TestErrorsHooks: Hooks.Before failing a call stops the request (the
// server never sees it) and its error is classified like any other;
// Hooks.After replacing a result simulates a response lost after the
// write was applied, and the provider's idempotent paths recover from it.
func TestErrorsHooks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	errBoom := errors.New("injected: connection reset")
	t.Run("before prevents the request", func(t *testing.T) {
		var fail atomic.Bool
		var seen atomic.Int32
		hooks := &testhooks.Hooks{Before: func(_ context.Context, c testhooks.Call) error {
			if c.Op == OpCreate && fail.Load() {
				seen.Add(1)
				return errBoom
			}
			return nil
		}}
		srv, p := etProviderWith(t, testhooks.Seam{Cosmos: hooks}, Options{})
		fail.Store(true)
		srv.ResetCounts()
		before := etDocs(t, srv)
		err := p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: "hook-1", Orchestration: "O", ExecutionID: 1}, 0)
		require.ErrorIs(t, err, errBoom)
		require.True(t, duroxide.IsRetryable(err))
		var ce *RequestError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, OpCreate, ce.Call.Op)
		require.Equal(t, "hook-1", ce.Call.PartitionKey)
		require.Equal(t, int32(1), seen.Load())
		require.Zero(t, etCount(srv, cosmostest.OpCreateItem), "the request was sent although Before failed it")
		require.Equal(t, before, etDocs(t, srv))
		st := p.RequestStats()[OpCreate]
		require.Equal(t, int64(1), st.Requests)
		require.Equal(t, int64(1), st.Failures)

		fail.Store(false)
		require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: "hook-1", Orchestration: "O", ExecutionID: 1}, 0))
		require.Equal(t, 1, etCount(srv, cosmostest.OpCreateItem))
	})
	t.Run("after loses the response of an applied write", func(t *testing.T) {
		var lose atomic.Bool
		hooks := &testhooks.Hooks{After: func(_ context.Context, c testhooks.Call, err error) error {
			if c.Op == OpCreate && err == nil && lose.Load() {
				return errBoom
			}
			return err
		}}
		srv, p := etProviderWith(t, testhooks.Seam{Cosmos: hooks}, Options{})
		lose.Store(true)
		before := etDocs(t, srv)
		err := p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: "hook-2", Orchestration: "O", ExecutionID: 1}, 0)
		require.ErrorIs(t, err, errBoom)
		require.True(t, duroxide.IsRetryable(err))
		require.Equal(t, before+1, etDocs(t, srv), "the write was applied although its response was lost")
	})
	t.Run("after on an ack: the retried ack is recognised as done", func(t *testing.T) {
		var lose atomic.Int32
		hooks := &testhooks.Hooks{After: func(_ context.Context, c testhooks.Call, err error) error {
			if c.Op == OpBatch && c.PartitionKey == "hook-3" && err == nil && lose.Load() > 0 {
				lose.Add(-1)
				return errBoom
			}
			return err
		}}
		srv, p := etProviderWith(t, testhooks.Seam{Cosmos: hooks}, Options{})
		require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: "hook-3", Orchestration: "O", ExecutionID: 1}, 0))
		item, err := p.FetchOrchestrationItem(ctx, 30*time.Second, 0, nil)
		require.NoError(t, err)
		require.NotNil(t, item)
		commit := duroxide.OrchestrationCommit{ExecutionID: 1,
			HistoryDelta: []duroxide.Event{{EventID: 1, InstanceID: "hook-3", ExecutionID: 1, Kind: duroxide.OrchestrationStarted{Name: "O", Version: "1"}}},
			Metadata:     duroxide.ExecutionMetadata{OrchestrationName: ptr("O"), OrchestrationVersion: ptr("1")}}
		lose.Store(1)
		err = p.AckOrchestrationItem(ctx, item.LockToken, commit)
		require.ErrorIs(t, err, errBoom)
		require.True(t, duroxide.IsRetryable(err), "an ack with an unknown outcome is retryable")
		require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), "the retried ack must see its first attempt committed")
		hist, err := p.Read(ctx, "hook-3")
		require.NoError(t, err)
		require.Len(t, hist, 1)
		d, err := srv.Documents(etDatabase, etContainer)
		require.NoError(t, err)
		n := 0
		for _, doc := range d {
			if doc["type"] == docHistory {
				n++
			}
		}
		require.Equal(t, 1, n, "history duplicated")
	})
}

// TestErrorsServiceMessageDecoded: the service's message is decoded as
// JSON (escapes become characters, line breaks fold into "; "), bounded on
// a UTF-8 boundary, and keeps the ActivityId even when cut, which is also
// taken from the message when the header lacks it.
func TestErrorsServiceMessageDecoded(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 700) // 1400 bytes
	for _, c := range []struct {
		name, message, want, activity string
	}{
		{"401", "The input authorization token can't serve the request.\r\n\r\nServer used the following payload to sign: 'get\n\n\nmon, 23 nov 2026 09:40:00 gmt\n\n'\r\nActivityId: 7d1c, Microsoft.Azure.Documents.Common/2.14.0",
			"The input authorization token can't serve the request.; Server used the following payload to sign: 'get; mon, 23 nov 2026 09:40:00 gmt; '; ActivityId: 7d1c, Microsoft.Azure.Documents.Common/2.14.0", "7d1c"},
		{"quotes", `Message: {"Errors":["Resource Not Found"]}` + "\r\nActivityId: a-1, x", `Message: {"Errors":["Resource Not Found"]}; ActivityId: a-1, x`, "a-1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]string{"code": "X", "message": c.message})
			resp := &http.Response{StatusCode: 401, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(string(body))),
				Request: &http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: "https", Host: "a", Path: "/"}}}
			err := cosmos.Classify(cosmos.Call{Op: OpRead}, runtime.NewResponseError(resp))
			var ce *RequestError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, c.want, ce.Message)
			require.Equal(t, c.activity, ce.ActivityID)
		})
	}
	t.Run("long", func(t *testing.T) {
		body, _ := json.Marshal(map[string]string{"code": "X", "message": long + "\r\nActivityId: b-2, tail"})
		resp := &http.Response{StatusCode: 401, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(string(body))),
			Request: &http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: "https", Host: "a", Path: "/"}}}
		var ce *RequestError
		require.ErrorAs(t, cosmos.Classify(cosmos.Call{Op: OpRead}, runtime.NewResponseError(resp)), &ce)
		msg, id := ce.Message, ce.ActivityID
		require.Equal(t, "b-2", id)
		require.True(t, utf8.ValidString(msg))
		require.LessOrEqual(t, len(msg), cosmos.MaxMessageBytes+64)
		require.Contains(t, msg, "ActivityId: b-2")
	})
}
