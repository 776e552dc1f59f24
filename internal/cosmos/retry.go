package cosmos

import (
	"context"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Who retries what. azcosmos sends a request through two retry layers:
// azcore's retry policy (by default 3 more tries on 408, 429 and 5xx,
// honouring Retry-After) and its own Cosmos policy (region failover, a
// 404/1002 read retried at the write region, reads on 408 and 5xx; it
// never resends a write whose outcome is unknown). A 429 is retried here
// only: Do waits the service's x-ms-retry-after-ms within RetryOptions
// and the caller's deadline, so the budget bounds every request the
// service sees. For that, every request runs with azcore's retry options
// minus 429 (SDKRetryOptions, applied per request through the context, so
// a client built by the caller is covered too). The Cosmos policy's
// retries stay: they are write-safe, and each attempt is counted
// (CountAttempts).

// azcoreStatusCodes are azcore's default retry statuses without 429.
var azcoreStatusCodes = []int{
	http.StatusRequestTimeout,
	http.StatusInternalServerError,
	http.StatusBadGateway,
	http.StatusServiceUnavailable,
	http.StatusGatewayTimeout,
}

// SDKRetryOptions returns base, azcore's retry options for a request,
// with 429 taken out: neither retried for its status nor by base's own
// ShouldRetry.
func SDKRetryOptions(base policy.RetryOptions) policy.RetryOptions {
	if base.StatusCodes == nil {
		base.StatusCodes = azcoreStatusCodes
	} else {
		base.StatusCodes = slices.DeleteFunc(slices.Clone(base.StatusCodes), func(c int) bool { return c == http.StatusTooManyRequests })
	}
	if should := base.ShouldRetry; should != nil {
		base.ShouldRetry = func(r *http.Response, err error) bool {
			if r != nil && r.StatusCode == http.StatusTooManyRequests {
				return false
			}
			return should(r, err)
		}
	}
	return base
}

// UseClientRetry makes the store's requests run with the caller's azcore
// retry options (Config.ClientOptions.Retry), minus 429; the default is
// azcore's.
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
// without 429, and a counter of its attempts.
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
