package cosmos

import (
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/stretchr/testify/require"
)

// TestSDKRetryOptionsTakeOut429: whatever the caller configured, azcore
// never retries a 429 (the store does, within its budget); everything
// else the caller set is kept.
func TestSDKRetryOptionsTakeOut429(t *testing.T) {
	t.Parallel()
	def := SDKRetryOptions(policy.RetryOptions{})
	require.NotContains(t, def.StatusCodes, http.StatusTooManyRequests)
	require.ElementsMatch(t, []int{408, 500, 502, 503, 504}, def.StatusCodes, "azcore's defaults otherwise")

	mine := []int{http.StatusTooManyRequests, http.StatusServiceUnavailable}
	o := SDKRetryOptions(policy.RetryOptions{MaxRetries: 7, RetryDelay: time.Second, StatusCodes: mine})
	require.Equal(t, []int{http.StatusServiceUnavailable}, o.StatusCodes)
	require.Equal(t, []int{http.StatusTooManyRequests, http.StatusServiceUnavailable}, mine, "the caller's slice is not changed")
	require.EqualValues(t, 7, o.MaxRetries)
	require.Equal(t, time.Second, o.RetryDelay)

	only429 := SDKRetryOptions(policy.RetryOptions{StatusCodes: []int{http.StatusTooManyRequests}})
	require.NotNil(t, only429.StatusCodes, "an empty list disables status retries; nil would restore the defaults")
	require.Empty(t, only429.StatusCodes)

	always := SDKRetryOptions(policy.RetryOptions{ShouldRetry: func(*http.Response, error) bool { return true }})
	require.False(t, always.ShouldRetry(&http.Response{StatusCode: http.StatusTooManyRequests}, nil))
	require.True(t, always.ShouldRetry(&http.Response{StatusCode: http.StatusServiceUnavailable}, nil))
}
