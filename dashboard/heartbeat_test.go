package dashboard_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/dashboard"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/demo"
	"github.com/duroxide-go/cdb/memprovider"
)

// TestPendingWorkShowsActivityHeartbeats: the pending panel gives a
// running activity its last heartbeat from the store (escaped like every
// value), on both providers.
func TestPendingWorkShowsActivityHeartbeats(t *testing.T) {
	for name, p := range map[string]duroxide.Provider{"memprovider": memprovider.New(), "cosmos": demo.CosmosProvider(t)} {
		t.Run(name, func(t *testing.T) {
			release := make(chan struct{})
			r := durable.NewRegistry()
			must(t, r.AddActivity("Copy", func(ctx durable.ActivityContext, _ string) (string, error) {
				if err := ctx.Heartbeat("<b>page</b> 7"); err != nil {
					return "", err
				}
				select {
				case <-release:
				case <-ctx.Done():
				}
				return "copied", nil
			}))
			must(t, r.AddOrchestration("Beat", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
				return durable.CallActivity[string](ctx, "Copy", "").Await()
			}))
			demo.StartRuntime(t, p, r, &durable.Options{WorkerLockTimeout: 2 * time.Second})
			done := sync.OnceFunc(func() { close(release) })
			t.Cleanup(done) // before the runtime's shutdown, should the test fail
			e := &env{t: t, c: durable.NewClient(p)}
			must(t, e.c.StartOrchestration(t.Context(), "hb-1", "Beat", ""))
			b := newDashboard(t, e, dashboard.Options{})
			deadline := time.Now().Add(time.Minute)
			for {
				_, body := b.get("/instances/hb-1")
				if strings.Contains(body, `class="heartbeat"`) {
					if !strings.Contains(body, "&lt;b&gt;page&lt;/b&gt; 7") || !strings.Contains(body, `class="work-activity"`) {
						t.Fatalf("the heartbeat is not shown escaped in the pending panel:\n%s", body)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the pending panel never showed the heartbeat:\n%s", body)
				}
				time.Sleep(50 * time.Millisecond)
			}
			done()
			e.waitFor("hb-1", (*durable.OrchestrationStatus).IsTerminal)
			if _, body := b.get("/instances/hb-1"); strings.Contains(body, `class="heartbeat"`) {
				t.Fatalf("completed, the page still shows the heartbeat:\n%s", body)
			}
		})
	}
}
