package cdb_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
)

// Errors as the Provider API hands them to the runtime. The store's own
// classification table is in errors_test.go (package cdb); this file holds
// what can only be checked from outside, through the harness.

// TestProviderErrorFollowsClassification: a Cosmos failure that
// reaches the caller as a ProviderError keeps the classification of the
// *RequestError it wraps (RequestError.Retryable): 400, 401, 403/5300, 404
// and 413 are permanent, 408, 410, 429, 449, 500 and 503 retryable.
func TestProviderErrorFollowsClassification(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{Retry: cdb.RetryOptions{MaxThrottleRetries: -1}})
	ctx := t.Context()
	cases := []struct {
		status, sub int
		retryable   bool
	}{
		{400, 0, false}, {401, 0, false}, {403, 5300, false}, {404, 0, false}, {413, 0, false},
		{408, 0, true}, {410, 0, true}, {429, 0, true}, {449, 0, true}, {500, 0, true}, {503, 0, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d/%d", c.status, c.sub), func(t *testing.T) {
			h.srv.InjectFault(cosmostest.Fault{Op: cosmostest.OpCreateItem, Status: c.status, SubStatus: c.sub, Times: 1})
			err := h.p.EnqueueForOrchestrator(ctx, hStart(fmt.Sprintf("cls-%d-%d", c.status, c.sub)), 0)
			require.Error(t, err)
			var ce *cdb.RequestError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, c.retryable, ce.Retryable())
			require.Equal(t, c.retryable, duroxide.IsRetryable(err), "ProviderError retryability disagrees with the RequestError it wraps: %v", err)
		})
	}
}
