package ops_test

import (
	"context"
	"sync"
	"testing"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/ops"
	"github.com/duroxide-go/cdb/memprovider"
)

// hintLog records the request-priority hint of the admin calls an
// operator's reads reach the provider with.
type hintLog struct {
	mu    sync.Mutex
	hints map[string][]duroxide.RequestPriority
}

func (l *hintLog) note(ctx context.Context, call string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hints[call] = append(l.hints[call], duroxide.RequestPriorityOf(ctx))
}

func (l *hintLog) take(call string) []duroxide.RequestPriority {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hints[call]
	delete(l.hints, call)
	return h
}

// hinted is a memprovider whose admin notes the hints.
type hinted struct {
	*memprovider.Provider
	log *hintLog
}

func (p hinted) Admin() duroxide.ProviderAdmin { return hintedAdmin{p.Provider.Admin(), p.log} }

type hintedAdmin struct {
	duroxide.ProviderAdmin
	log *hintLog
}

func (a hintedAdmin) SearchInstances(ctx context.Context, q duroxide.InstanceQuery) (*duroxide.InstancePage, error) {
	a.log.note(ctx, "search")
	return a.ProviderAdmin.SearchInstances(ctx, q)
}

func (a hintedAdmin) InstanceInfo(ctx context.Context, instance string) (*duroxide.InstanceInfo, error) {
	a.log.note(ctx, "info")
	return a.ProviderAdmin.InstanceInfo(ctx, instance)
}

// TestReadsAreLowPriority: the dashboard's and the command line's reads
// (Search, Instance) reach the provider hinted PriorityLow, and a
// caller's own hint is kept. Seen failing before Search and Instance
// wrapped their context: the hint was PriorityDefault.
func TestReadsAreLowPriority(t *testing.T) {
	log := &hintLog{hints: map[string][]duroxide.RequestPriority{}}
	p := hinted{memprovider.New(), log}
	reg := durable.NewRegistry()
	must(t, reg.AddOrchestration("Echo", func(_ *durable.OrchestrationContext, in string) (string, error) { return in, nil }))
	rt, err := durable.Start(t.Context(), p, reg, nil)
	must(t, err)
	t.Cleanup(func() { must(t, rt.Shutdown(context.Background())) })
	c := durable.NewClient(p)
	begin(t, c, "prio-1", "Echo", "x")
	s := ops.New(c)

	_, err = s.Search(t.Context(), duroxide.InstanceQuery{})
	must(t, err)
	_, err = s.Instance(t.Context(), "prio-1")
	must(t, err)
	for _, call := range []string{"search", "info"} {
		got := log.take(call)
		if len(got) == 0 {
			t.Fatalf("%s: not called", call)
		}
		for _, h := range got {
			if h != duroxide.PriorityLow {
				t.Fatalf("%s: hint %d, want PriorityLow", call, h)
			}
		}
	}

	high := duroxide.WithRequestPriority(t.Context(), duroxide.PriorityHigh)
	_, err = s.Search(high, duroxide.InstanceQuery{})
	must(t, err)
	if got := log.take("search"); len(got) != 1 || got[0] != duroxide.PriorityHigh {
		t.Fatalf("search with the caller's High: hints %v", got)
	}
}
