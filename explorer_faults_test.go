package cdb_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// Explorer scenarios for the faults of issue 19: a prune racing a
// deletion and re-creation of its instance, and the maintenance loop
// rolling a large turn forward on lagging replicas.

// pruneRecreateRace: a prune of an instance with three executions races
// a client that force-deletes the instance and starts it again (its new
// execution 1 has the old one's document ids). The prune acts on the
// incarnation it read only: the new incarnation keeps its history and its
// execution summary.
func pruneRecreateRace() scenario {
	const inst = "prn"
	return scenario{
		name: "prune-recreate",
		setup: func(w *world) {
			wmust(w, buildThreeExecutions(w.tb.Context(), w.admin, inst))
		},
		actors: []actor{
			{name: "pruner", run: func(ctx context.Context, w *world, p *cdb.Provider) error {
				_, err := p.PruneExecutions(ctx, inst, duroxide.PruneOptions{KeepLast: ptrU32(1)})
				if errors.Is(err, duroxide.ErrInstanceNotFound) {
					return nil // it began after the deletion
				}
				return err
			}},
			{name: "recreator", run: func(ctx context.Context, w *world, p *cdb.Provider) error {
				if _, err := p.DeleteInstance(ctx, inst, true); err != nil {
					return err
				}
				if err := p.EnqueueForOrchestrator(ctx, hStart(inst), 0); err != nil {
					return err
				}
				it, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
				if err != nil {
					return err
				}
				if it == nil {
					return errNothing
				}
				return p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
					HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch"), hEvent(inst, 1, 2, duroxide.ExternalEvent{Name: "n", Data: "new"})},
					Metadata:     hRunning("HOrch")})
			}},
		},
		check: func(w *world, results []error) []string {
			var v []string
			for i, r := range results {
				if r != nil {
					v = append(v, fmt.Sprintf("%s failed: %v", []string{"pruner", "recreator"}[i], r))
				}
			}
			if len(v) > 0 {
				return v
			}
			v = append(v, historyViolations(w, inst, 2)...)
			if info, err := w.admin.ExecutionInfo(w.tb.Context(), inst, 1); err != nil || info == nil {
				v = append(v, fmt.Sprintf("the new incarnation's execution 1 has no summary (%v)", err))
			}
			for _, d := range w.docs(inst) {
				if execs, _ := d["executions"].([]any); d["type"] == "instance" && len(execs) != 1 {
					v = append(v, fmt.Sprintf("the new incarnation's instance lists %d executions, want 1", len(execs)))
				}
			}
			return v
		},
	}
}

// laggingPendingTurnRace is pendingTurnRace on lagging replicas, without
// its reader (a process without a session token may legitimately read
// the past): the reconciler, a process without a token for the instance,
// rolls the committed turn forward while the next dispatcher rolls it
// forward and commits after it. The turn is never lost, whatever the
// replicas that serve the reconciler's reads have applied.
func laggingPendingTurnRace() scenario {
	const inst = "pend"
	sc := pendingTurnRace()
	check := sc.check
	return scenario{
		name:    "pending-turn-lagging",
		lagging: true,
		setup: func(w *world) {
			xPrepare(w, inst)
			w.replicate() // the setup's own fetch must find the event
			g := &gate{}
			p := w.openProvider(g.hooks())
			defer func() { _ = p.Close() }()
			ctx := w.tb.Context()
			it, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
			wmust(w, err)
			g.setFail(func(c testhooks.Call) error {
				if isJournalRead(c) {
					return errInjected
				}
				return nil
			})
			wmust(w, p.AckOrchestrationItem(ctx, it.LockToken, xTurn(inst)))
			wmust(w, p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "next", Data: "2"}, 0))
		},
		actors: sc.actors[:2], // reconciler, dispatcher
		check: func(w *world, results []error) []string {
			w.replicate()
			return check(w, results)
		},
	}
}
