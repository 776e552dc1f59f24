package cosmos

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Who retries what. azcosmos sends a request through two retry layers:
// azcore's generic retry policy (by default 3 more tries on 408, 429, 5xx
// and any transport error, for reads and writes alike) and its own Cosmos
// policy (region failover, a 404/1002 read retried at the write region,
// reads on 408 and 5xx, writes only when they provably never left; it
// never resends a write whose outcome is unknown, and the statuses it
// gives up on reach azcore marked not retriable). What azcore retries on
// top is therefore 429 and the transport errors the Cosmos policy does not
// recognise, on writes too: a resent write whose first attempt was applied
// is a second write (a create then fails with 409, a conditional write
// with 412, both misread as someone else's). So azcore retries nothing
// (SDKRetryOptions, applied per request through the context, so a client
// the caller built is covered too): a 429 is retried by Do alone, waiting
// the service's x-ms-retry-after-ms within RetryOptions and the caller's
// deadline, so the budget bounds every request the service sees; other
// failures reach the callers, classified (errors.go). The Cosmos policy's
// retries stay, and each attempt is counted (CountAttempts).

// SDKRetryOptions returns base, azcore's retry options for a request, with
// its retries turned off (MaxRetries -1); the rest (TryTimeout) is kept.
func SDKRetryOptions(base policy.RetryOptions) policy.RetryOptions {
	base.MaxRetries = -1
	return base
}

// UseClientRetry makes the store's requests run with the caller's azcore
// retry options (Config.ClientOptions.Retry), retries turned off.
func (s *Store) UseClientRetry(base policy.RetryOptions) {
	s.sdkRetry = SDKRetryOptions(base)
}

type attemptsKey struct{}

// CountAttempts is a per-try pipeline policy that counts, for the request
// Do is sending, every HTTP attempt the SDK makes (its own retries
// included). The client must be built with it in PerRetryPolicies;
// without it each request counts once. The SDK's reads of the account
// (GET /, its endpoint discovery) are not the request's and not counted.
func CountAttempts() policy.Policy { return attemptCounter{} }

type attemptCounter struct{}

func (attemptCounter) Do(req *policy.Request) (*http.Response, error) {
	if n, ok := req.Raw().Context().Value(attemptsKey{}).(*atomic.Int64); ok && req.Raw().URL.Path != "/" && req.Raw().URL.Path != "" {
		n.Add(1)
	}
	return req.Next()
}

// withAttempts prepares ctx for one request: azcore's retry options
// without retries, and a counter of its attempts.
func (s *Store) withAttempts(ctx context.Context) (context.Context, *atomic.Int64) {
	n := &atomic.Int64{}
	ctx = policy.WithRetryOptions(ctx, s.sdkRetry)
	return context.WithValue(ctx, attemptsKey{}, n), n
}

// throttleWait is how long Do waits before sending a throttled request
// again, or false when the budget is spent: MaxThrottleRetries retries,
// MaxThrottleWait in total, or a wait that would end past ctx's deadline
// (the caller could not use the answer).
func (s *Store) throttleWait(ctx context.Context, ce *Error, attempt int, waited time.Duration) (time.Duration, bool) {
	if attempt >= s.retry.MaxThrottleRetries {
		return 0, false
	}
	d := ce.RetryAfter
	if d <= 0 {
		d = time.Duration(100<<min(attempt, 6)) * time.Millisecond
	}
	if waited+d > s.retry.MaxThrottleWait {
		return 0, false
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return 0, false
	}
	return d, true
}
