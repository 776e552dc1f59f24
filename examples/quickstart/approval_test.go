package main

import (
	"context"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/memprovider"
)

// TestApprovalKeepsAnEarlyApproval: an approval sent before the
// orchestration waits for it is not lost. Start and approval are both
// enqueued before any runtime runs, so the first turn sees them together:
// the approval arrives before the orchestration has reached its wait.
func TestApprovalKeepsAnEarlyApproval(t *testing.T) {
	ctx := t.Context()
	p := memprovider.New()
	c := durable.NewClient(p)
	if err := c.StartOrchestration(ctx, "early-1", "Approval", "deploy v2"); err != nil {
		t.Fatal(err)
	}
	if err := sendApproval(ctx, c, "early-1", "alice"); err != nil {
		t.Fatal(err)
	}
	reg, err := register()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := durable.Start(ctx, p, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rt.Shutdown(sctx); err != nil {
			t.Error(err)
		}
	}()
	st, err := c.WaitForOrchestration(ctx, "early-1", durable.WaitOptions{Timeout: time.Minute})
	if err != nil {
		t.Fatalf("the early approval was lost: %v", err)
	}
	out, err := durable.DecodeOutput[string](st)
	if err != nil || out != "deploy v2 approved by alice" {
		t.Fatalf("output %q, %v; want %q", out, err, "deploy v2 approved by alice")
	}
}
