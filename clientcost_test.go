package cdb_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// clientCall is one measured durable.Client call and the requests it may
// spend. Request counts are deterministic on cosmostest (no SDK retries,
// no maintenance loop), so the budget is exact: a call that spends one
// request more, or one of another kind, fails the test.
type clientCall struct {
	name    string
	ops     string // requests by kind, as cost.ops renders them
	wantErr error
	call    func() error
}

// TestClientRequestBudget pins the requests the client write path and the
// status read spend on Cosmos DB (docs/costs.md, "Client calls"); run it
// with -v for requests, RU, documents and bytes per call.
func TestClientRequestBudget(t *testing.T) {
	e := newHarness(t, cdb.Options{}, withoutLag())
	c := durable.NewClient(e.p)
	ctx := t.Context()
	const (
		running   = "cc-running"   // client-started, one turn run
		completed = "cc-completed" // client-started, completed in its first turn
		runtime   = "cc-runtime"   // started without a start record, as a runtime starts a sub-orchestration
		queued    = "cc-queued"    // client-started, no turn run yet
		missing   = "cc-missing"
	)
	e.clientStartTurn(t, c, running, false)
	e.clientStartTurn(t, c, completed, true)
	e.startInstance(t, runtime)

	start := func(inst, input string, key string) func() error {
		return func() error {
			return c.StartOrchestration(ctx, inst, costOrchName, input, durable.StartOptions{IdempotencyKey: key})
		}
	}
	raise := func(inst, key string) func() error {
		return func() error {
			return c.RaiseEvent(ctx, inst, pokeName, pokeData, durable.EventOptions{IdempotencyKey: key})
		}
	}
	status := func(inst string, want durable.State) func() error {
		return func() error {
			st, err := c.Status(ctx, inst)
			if err == nil && st.State != want {
				err = fmt.Errorf("state %s, want %s", st.State, want)
			}
			return err
		}
	}
	calls := []clientCall{
		{name: "start/new id", ops: "batch=2", call: start(queued, "{}", "")},
		{name: "start/identical retry, not run yet", ops: "batch=3", call: start(queued, "{}", "")},
		{name: "start/existing id, not run yet", ops: "batch=3", wantErr: durable.ErrInstanceExists, call: start(queued, `"other"`, "")},
		{name: "start/identical retry, running", ops: "batch=2", call: start(running, "{}", "")},
		{name: "start/existing id, running", ops: "batch=2", wantErr: durable.ErrInstanceExists, call: start(running, `"other"`, "")},
		{name: "raise/existing", ops: "batch=1 create=1", call: raise(running, "")},
		{name: "raise/existing, key", ops: "batch=1 create=1", call: raise(running, "k1")},
		{name: "raise/existing, key repeated", ops: "batch=1 create=1", call: raise(running, "k1")},
		{name: "raise/existing, no start record", ops: "batch=2 create=1", call: raise(runtime, "")},
		{name: "raise/missing", ops: "batch=3 query=2", wantErr: durable.ErrInstanceNotFound, call: raise(missing, "")},
		{name: "enqueue/existing", ops: "batch=1 create=1", call: func() error { return c.EnqueueEvent(ctx, running, "q", pokeData) }},
		{name: "enqueue/existing, key", ops: "batch=1 create=1", call: func() error {
			return c.EnqueueEvent(ctx, running, "q", pokeData, durable.EventOptions{IdempotencyKey: "k2"})
		}},
		{name: "cancel/existing", ops: "batch=1 create=1 read=1", call: func() error { return c.CancelInstance(ctx, completed, "stop") }},
		{name: "cancel/missing", ops: "batch=3 query=2 read=1", wantErr: durable.ErrInstanceNotFound, call: func() error {
			return c.CancelInstance(ctx, missing, "stop")
		}},
		// An update sends once and then polls: with a 1 ns timeout the
		// wait is exactly one poll, which the handler cannot answer (no
		// runtime runs), so the row is the send plus one poll.
		{name: "update/send and one poll", ops: "batch=1 create=1 query=2 read=1", wantErr: durable.ErrTimeout, call: func() error {
			_, err := durable.Update[string](ctx, c, running, "u", "x", durable.UpdateOptions{ID: "u1", Timeout: time.Nanosecond})
			return err
		}},
		{name: "status/running", ops: "query=1 read=1", call: status(running, durable.StateRunning)},
		{name: "status/completed", ops: "query=1 read=1", call: status(completed, durable.StateCompleted)},
		{name: "status/not run yet", ops: "query=1 read=2", call: status(queued, durable.StateNotFound)},
		{name: "status/never started", ops: "query=1 read=2", call: status(missing, durable.StateNotFound)},
	}
	for _, cc := range calls {
		var err error
		got := e.measure(func() { err = cc.call() })
		switch {
		case cc.wantErr == nil && err != nil:
			t.Errorf("%s: %v", cc.name, err)
		case cc.wantErr != nil && !errors.Is(err, cc.wantErr):
			t.Errorf("%s: error %v, want %v", cc.name, err, cc.wantErr)
		}
		t.Logf("%-40s req %d (%s)  RU %.1f  docs %d  bytes %d", cc.name, got.Requests, got.ops(), got.RU, got.Docs, got.Bytes)
		if got.ops() != cc.ops {
			t.Errorf("%s: requests %s, want %s", cc.name, got.ops(), cc.ops)
		}
	}
}

// clientStartTurn starts inst through the client and runs its first turn
// through the provider: Running, or Completed when complete is set. The
// queue must hold nothing else that is visible.
func (h *harness) clientStartTurn(tb testing.TB, c *durable.Client, inst string, complete bool) {
	tb.Helper()
	must(tb, c.StartOrchestration(h.ctx, inst, costOrchName, "{}"))
	item := h.fetchOrch(tb, inst)
	delta := []duroxide.Event{ev(inst, 1, 1, duroxide.OrchestrationStarted{Name: costOrchName, Version: costOrchVer, Input: "{}"})}
	meta := runningMeta()
	if complete {
		delta = append(delta, ev(inst, 1, 2, duroxide.OrchestrationCompleted{Output: `"done"`}))
		meta.Status, meta.Output = ptrTo(duroxide.StatusCompleted), ptrTo(`"done"`)
	}
	must(tb, h.p.AckOrchestrationItem(h.ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, HistoryDelta: delta, Metadata: meta}))
}
