package duroxide

import (
	"context"
	"testing"
)

// A hint is carried by the context, an inner one replaces an outer one,
// and LowPriorityUnlessSet leaves a caller's own hint alone.
func TestRequestPriorityHint(t *testing.T) {
	ctx := context.Background()
	if got := RequestPriorityOf(ctx); got != PriorityDefault {
		t.Fatalf("no hint: %d", got)
	}
	if got := RequestPriorityOf(LowPriorityUnlessSet(ctx)); got != PriorityLow {
		t.Fatalf("LowPriorityUnlessSet on no hint: %d", got)
	}
	high := WithRequestPriority(ctx, PriorityHigh)
	if got := RequestPriorityOf(LowPriorityUnlessSet(high)); got != PriorityHigh {
		t.Fatalf("LowPriorityUnlessSet on High: %d", got)
	}
	if got := RequestPriorityOf(WithRequestPriority(high, PriorityLow)); got != PriorityLow {
		t.Fatalf("inner Low on outer High: %d", got)
	}
}
