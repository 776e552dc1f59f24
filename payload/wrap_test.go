package payload_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
	"github.com/duroxide-go/cdb/payload"
)

// deletions is an identity codec that records what Wrap asks it to
// delete, as a codec keeping payloads outside the store is asked.
type deletions struct {
	mu    sync.Mutex
	calls []string
}

func (*deletions) Name() string { return "rec" }
func (*deletions) Encode(_ context.Context, _ payload.Scope, b []byte) ([]byte, error) {
	return b, nil
}
func (*deletions) Decode(_ context.Context, _ payload.Scope, b []byte) ([]byte, error) {
	return b, nil
}
func (d *deletions) DeletePayloads(_ context.Context, instance string, execs []uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, instance+" "+fmtExecs(execs))
	return nil
}

func fmtExecs(execs []uint64) string {
	if execs == nil {
		return "all"
	}
	s := ""
	for _, e := range execs {
		s += strconv.FormatUint(e, 10)
	}
	return s
}

func TestWrapDeletesExternalPayloadsOnPruneAndDelete(t *testing.T) {
	ctx := context.Background()
	rec := &deletions{}
	p, err := payload.Wrap(memprovider.New(), payload.Gzip(), rec)
	if err != nil {
		t.Fatal(err)
	}
	reg := durable.NewRegistry()
	if err := durable.RegisterOrchestration(reg, "Loop", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		if n == 0 {
			return "done", nil
		}
		return "", durable.ContinueAsNew(ctx, strconv.Itoa(n-1))
	}); err != nil {
		t.Fatal(err)
	}
	rt, err := durable.Start(ctx, p, reg, &durable.Options{MinPollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c := durable.NewClient(p)
	if err := c.StartOrchestration(ctx, "loop", "Loop", "2"); err != nil {
		t.Fatal(err)
	}
	st, err := c.WaitForOrchestration(ctx, "loop", durable.WaitOptions{Timeout: time.Minute})
	if err != nil || st.Output != "done" {
		t.Fatalf("status %+v, %v", st, err)
	}
	if err := rt.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Admin().PruneExecutions(ctx, "loop", duroxide.PruneOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Admin().DeleteInstance(ctx, "loop", false); err != nil {
		t.Fatal(err)
	}
	if want := []string{"loop 12", "loop all"}; !slices.Equal(rec.calls, want) {
		t.Fatalf("deletions %q, want %q", rec.calls, want)
	}
}
