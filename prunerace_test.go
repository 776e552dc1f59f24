package cdb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// threeExecutions gives inst executions 1 and 2 (continued as new) and a
// running execution 3.
func threeExecutions(t *testing.T, p *cdb.Provider, inst string) {
	t.Helper()
	require.NoError(t, buildThreeExecutions(t.Context(), p, inst))
}

func buildThreeExecutions(ctx context.Context, p *cdb.Provider, inst string) error {
	if err := p.EnqueueForOrchestrator(ctx, hStart(inst), 0); err != nil {
		return err
	}
	for exec := uint64(1); exec <= 3; exec++ {
		if exec > 1 {
			if err := p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "n", Data: "1"}, 0); err != nil {
				return err
			}
		}
		it, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
		if err != nil {
			return err
		}
		if it == nil || it.Instance != inst {
			return fmt.Errorf("no orchestration item for %q", inst)
		}
		md := hStatus("HOrch", duroxide.StatusContinuedAsNew, `"x"`)
		if exec == 3 {
			md = hRunning("HOrch")
		}
		if err := p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: exec,
			HistoryDelta: []duroxide.Event{hEvent(inst, exec, 1, duroxide.OrchestrationStarted{Name: "HOrch", Version: "1.0.0", Input: "{}"})}, Metadata: md}); err != nil {
			return err
		}
	}
	return nil
}

// TestPruneActsOnlyOnTheIncarnationItRead (issue 19, 9): PruneExecutions
// reads an instance with executions 1–3 and decides to prune 1 and 2;
// before it writes, the instance is deleted and started again, and the
// new incarnation commits its execution 1 (same document ids as the old
// one's). The prune must leave the new incarnation alone: its history and
// its execution summary stay. Paused after reading which executions exist,
// and paused before its first delete batch.
func TestPruneActsOnlyOnTheIncarnationItRead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		after bool
		match func(testhooks.Call) bool
	}{
		{"after listing the executions", true, nth(1, func(c testhooks.Call) bool { return c.Op == cdb.OpQuery })},
		{"before the first delete batch", false, nth(1, isBatch)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
			ctx := t.Context()
			const inst = "inc"
			other := e.actor(nil)
			threeExecutions(t, other, inst)

			g := newGate(t)
			pruner := e.actor(g)
			stall := g.at(tc.after, tc.match)
			done := async(func() error {
				_, err := pruner.PruneExecutions(ctx, inst, duroxide.PruneOptions{KeepLast: ptrU32(1)})
				return err
			})
			stall.wait(t)

			_, err := other.DeleteInstance(ctx, inst, true)
			require.NoError(t, err)
			require.NoError(t, other.EnqueueForOrchestrator(ctx, hStart(inst), 0))
			it := mustFetchOrch(t, other, inst)
			require.NoError(t, other.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
				HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch"), hEvent(inst, 1, 2, duroxide.ExternalEvent{Name: "n", Data: "new"})},
				Metadata:     hRunning("HOrch")}))

			stall.open()
			require.NoError(t, recv(t, done))

			reader := e.actor(nil)
			hist, err := reader.Read(ctx, inst)
			require.NoError(t, err)
			require.Len(t, hist, 2, "the new incarnation's history was pruned by a prune of the old one")
			info, err := reader.ExecutionInfo(ctx, inst, 1)
			require.NoError(t, err)
			require.NotNil(t, info, "the new incarnation's execution 1 lost its summary")
			for _, d := range e.docsWhere("", inst) {
				if d["type"] == "instance" {
					execs, _ := d["executions"].([]any)
					require.Len(t, execs, 1, "the new incarnation has execution 1 only: %v", execs)
				}
			}
		})
	}
}
