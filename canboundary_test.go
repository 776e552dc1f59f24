package cdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// A continue-as-new committed by a process whose clock runs ahead writes
// the successor's ContinueAsNew item visible at its own "now": a process
// whose clock runs behind cannot see it yet, but sees a queue message the
// driver enqueued meanwhile, and fetches that message alone against the
// execution that already continued as new. The message must reach the
// successor (the chaos soak's canloop lost such messages, at every skew
// and, through a fetch that discovered the instance before the item was
// written, without skew too).
func TestContinueAsNewItemFromAheadClockKeepsMessages(t *testing.T) {
	const (
		inst = "can-ahead"
		skew = 3 * time.Second
	)
	ctx := t.Context()
	h := newHarness(t, cdb.Options{}, withoutLag())
	ahead := h.openWith(testhooks.Seam{Now: func() time.Time { return time.Now().Add(skew) }}, cdb.Options{MaxClockSkew: 2 * skew})
	behind := h.open(cdb.Options{MaxClockSkew: 2 * skew})
	c := durable.NewClient(behind)
	require.NoError(t, c.StartOrchestration(ctx, inst, "Loop", "first", durable.StartOptions{Version: "1.0.0"}))

	// Execution 1, on the process that runs ahead: continue as new.
	item := mustFetchOrch(t, ahead, inst)
	started := hEvent(inst, 1, 1, duroxide.OrchestrationStarted{Name: "Loop", Version: "1.0.0", Input: "first"})
	can := hEvent(inst, 1, 2, duroxide.OrchestrationContinuedAsNew{Input: "second"})
	started.DuroxideVersion, can.DuroxideVersion = durable.DuroxideVersion, durable.DuroxideVersion
	require.NoError(t, ahead.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{started, can},
		OrchestratorItems: []duroxide.WorkItem{duroxide.ContinueAsNewItem{Instance: inst, Orchestration: "Loop", Input: "second",
			Version: hptr("1.0.0"), CarryForwardEvents: []duroxide.CarryForwardEvent{}}},
		Metadata: hStatus("Loop", duroxide.StatusContinuedAsNew, "second"),
	}))
	require.NoError(t, c.EnqueueEvent(ctx, inst, "q", "late"))

	// The process that runs behind sees the message before the item.
	reg := durable.NewRegistry()
	require.NoError(t, reg.AddOrchestration("Loop", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if in != "second" {
			return "", durable.ContinueAsNew(ctx, "second")
		}
		v, err := durable.DequeueEvent[string](ctx, "q").Await()
		return "got:" + v, err
	}))
	rt, err := durable.Start(ctx, behind, reg, &durable.Options{MinPollInterval: 10 * time.Millisecond, MaxIdlePollInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = rt.Shutdown(sctx)
	})
	st, err := c.WaitForOrchestration(ctx, inst, durable.WaitOptions{Timeout: time.Minute})
	require.NoError(t, err, "the successor never received the message")
	require.Equal(t, durable.StateCompleted, st.State, st.FailureMessage())
	require.Equal(t, "got:late", st.Output)
	execs, err := behind.ListExecutions(ctx, inst)
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 2}, execs)
}

// Without any skew: a fetch discovers the instance by a message that
// arrived during the execution's last turn, that turn commits its
// continue-as-new (writing the ContinueAsNew item and unlocking the
// instance), and only then does the fetch lock the instance and the
// messages it discovered, which do not include the new item. The message
// must still reach the successor.
func TestContinueAsNewItemWrittenAfterDiscoveryKeepsMessages(t *testing.T) {
	const inst = "can-discovered"
	ctx := t.Context()
	h := newHarness(t, cdb.Options{}, withoutLag())
	c := durable.NewClient(h.p)
	require.NoError(t, c.StartOrchestration(ctx, inst, "Loop", "first", durable.StartOptions{Version: "1.0.0"}))
	item := mustFetchOrch(t, h.p, inst) // execution 1's last turn begins
	require.NoError(t, c.EnqueueEvent(ctx, inst, "q", "late"))

	g := newGate(t)
	lock := g.at(false, func(c testhooks.Call) bool { return c.Op == cdb.OpBatch && c.PartitionKey == inst })
	other := h.openWith(testhooks.Seam{Cosmos: g.hooks()}, cdb.Options{})
	reg := durable.NewRegistry()
	require.NoError(t, reg.AddOrchestration("Loop", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if in != "second" {
			return "", durable.ContinueAsNew(ctx, "second")
		}
		v, err := durable.DequeueEvent[string](ctx, "q").Await()
		return "got:" + v, err
	}))
	rt, err := durable.Start(ctx, other, reg, &durable.Options{MinPollInterval: 10 * time.Millisecond, MaxIdlePollInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = rt.Shutdown(sctx)
	})
	lock.wait(t) // the other process discovered the message and is about to lock

	started := hEvent(inst, 1, 1, duroxide.OrchestrationStarted{Name: "Loop", Version: "1.0.0", Input: "first"})
	can := hEvent(inst, 1, 2, duroxide.OrchestrationContinuedAsNew{Input: "second"})
	started.DuroxideVersion, can.DuroxideVersion = durable.DuroxideVersion, durable.DuroxideVersion
	require.NoError(t, h.p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:  1,
		HistoryDelta: []duroxide.Event{started, can},
		OrchestratorItems: []duroxide.WorkItem{duroxide.ContinueAsNewItem{Instance: inst, Orchestration: "Loop", Input: "second",
			Version: hptr("1.0.0"), CarryForwardEvents: []duroxide.CarryForwardEvent{}}},
		Metadata: hStatus("Loop", duroxide.StatusContinuedAsNew, "second"),
	}))
	lock.open()

	st, err := c.WaitForOrchestration(ctx, inst, durable.WaitOptions{Timeout: time.Minute})
	require.NoError(t, err, "the successor never received the message")
	require.Equal(t, durable.StateCompleted, st.State, st.FailureMessage())
	require.Equal(t, "got:late", st.Output)
}

// An abandon without delay gives the messages back as they were: a process
// whose clock runs ahead must not move them into its own future, where a
// process on time cannot see them while it sees later messages — which
// then overtook them (the chaos soak at ±60 s saw a queue's messages
// dequeued out of order, and an end marker dequeued before the message
// sent ahead of it).
func TestAbandonWithoutDelayKeepsMessageOrderAcrossClocks(t *testing.T) {
	const inst = "abandon-order"
	ctx := t.Context()
	h := newHarness(t, cdb.Options{}, withoutLag())
	ahead := h.openWith(testhooks.Seam{Now: func() time.Time { return time.Now().Add(30 * time.Second) }}, cdb.Options{MaxClockSkew: time.Minute})
	onTime := h.open(cdb.Options{MaxClockSkew: time.Minute})
	c := durable.NewClient(onTime)
	require.NoError(t, c.StartOrchestration(ctx, inst, "Loop", "x", durable.StartOptions{Version: "1.0.0"}))
	require.NoError(t, c.EnqueueEvent(ctx, inst, "q", "m0"))

	item := mustFetchOrch(t, ahead, inst)
	require.NoError(t, ahead.AbandonOrchestrationItem(ctx, item.LockToken, 0, true))
	require.NoError(t, c.EnqueueEvent(ctx, inst, "q", "m1"))

	item = mustFetchOrch(t, onTime, inst)
	var queued []string
	for _, m := range item.Messages {
		if q, ok := m.(duroxide.QueueMessageItem); ok {
			queued = append(queued, q.Data)
		}
	}
	require.Equal(t, []string{"m0", "m1"}, queued, "the abandoned message stays visible, ahead of the later one")
}
