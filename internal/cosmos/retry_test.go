package cosmos

import (
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/stretchr/testify/require"
)

// TestSDKRetryOptionsRetryNothing: whatever the caller configured, azcore
// retries nothing (the store retries 429 within its budget; other
// failures go to the callers); the per-try timeout the caller set is kept.
func TestSDKRetryOptionsRetryNothing(t *testing.T) {
	t.Parallel()
	require.EqualValues(t, -1, SDKRetryOptions(policy.RetryOptions{}).MaxRetries)
	o := SDKRetryOptions(policy.RetryOptions{MaxRetries: 7, TryTimeout: time.Second})
	require.EqualValues(t, -1, o.MaxRetries)
	require.Equal(t, time.Second, o.TryTimeout)
}
