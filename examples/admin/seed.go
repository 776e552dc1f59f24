package main

import (
	"context"
	"fmt"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/examples/internal/walkthrough"
)

// Seeding plays the runtime's part, as the walkthrough example does: every instance
// is made by the same enqueue / fetch / ack calls a duroxide runtime makes,
// so the admin operations below see exactly what production leaves.

// seeded names the demo instances.
type seeded struct {
	Completed, Running, Parent, Chain string
	Children                          []string
}

func (s seeded) roots() []string { return []string{s.Completed, s.Running, s.Parent, s.Chain} }

func newSeeded(prefix string) seeded {
	s := seeded{
		Completed: prefix + "order-completed",
		Running:   prefix + "order-running",
		Parent:    prefix + "batch",
		Chain:     prefix + "ticker",
	}
	// duroxide names a sub-orchestration "<parent>::sub::<event id>".
	s.Children = []string{s.Parent + "::sub::2", s.Parent + "::sub::3"}
	return s
}

type seeder struct {
	p duroxide.Provider
}

// start enqueues StartOrchestration and runs the first turn with events
// after OrchestrationStarted, as execution 1.
func (sd seeder) start(ctx context.Context, instance, name, input string, delivered *duroxide.StartOrchestrationItem, turn func(started duroxide.Event) duroxide.OrchestrationCommit) error {
	start := duroxide.StartOrchestrationItem{Instance: instance, Orchestration: name, Input: input, Version: ptr(walkthrough.Version), ExecutionID: 1}
	if delivered == nil {
		if err := sd.p.EnqueueForOrchestrator(ctx, start, 0); err != nil {
			return fmt.Errorf("seeding %s: enqueue: %w", instance, err)
		}
	} else {
		start = *delivered // a sub-orchestration's start was sent by its parent's turn
	}
	item, err := walkthrough.FetchOrchestration(ctx, sd.p, instance)
	if err != nil {
		return fmt.Errorf("seeding %s: %w", instance, err)
	}
	started := walkthrough.NewEvent(instance, 1, 1, nil, duroxide.OrchestrationStarted{
		Name: name, Version: walkthrough.Version, Input: start.Input,
		ParentInstance: start.ParentInstance, ParentID: start.ParentID, ParentExecutionID: start.ParentExecutionID,
	})
	commit := turn(started)
	commit.ExecutionID = 1
	commit.Metadata.OrchestrationName = ptr(name)
	commit.Metadata.OrchestrationVersion = ptr(walkthrough.Version)
	commit.Metadata.ParentInstanceID = start.ParentInstance
	if err := sd.p.AckOrchestrationItem(ctx, item.LockToken, commit); err != nil {
		return fmt.Errorf("seeding %s: ack: %w", instance, err)
	}
	return nil
}

func completedCommit(output string, history ...duroxide.Event) duroxide.OrchestrationCommit {
	last := history[len(history)-1]
	history = append(history, walkthrough.NewEvent(last.InstanceID, last.ExecutionID, last.EventID+1, nil, duroxide.OrchestrationCompleted{Output: output}))
	return duroxide.OrchestrationCommit{
		HistoryDelta: history,
		Metadata:     duroxide.ExecutionMetadata{Status: ptr(duroxide.StatusCompleted), Output: ptr(output)},
	}
}

// seed creates the demo instances and returns one line per root.
func seed(ctx context.Context, p duroxide.Provider, s seeded) ([]string, error) {
	sd := seeder{p}

	// A completed order: one turn from start to OrchestrationCompleted.
	err := sd.start(ctx, s.Completed, "ProcessOrder", `{"order":41}`, nil, func(started duroxide.Event) duroxide.OrchestrationCommit {
		return completedCommit(`"shipped"`, started)
	})
	if err != nil {
		return nil, err
	}

	// A running order: waiting for its Charge activity (left on the worker
	// queue) with an "approve" event nobody has consumed yet (on the
	// orchestrator queue).
	err = sd.start(ctx, s.Running, "ProcessOrder", `{"order":42}`, nil, func(started duroxide.Event) duroxide.OrchestrationCommit {
		return duroxide.OrchestrationCommit{
			HistoryDelta: []duroxide.Event{started, walkthrough.NewEvent(s.Running, 1, 2, nil, duroxide.ActivityScheduled{Name: "Charge", Input: "42"})},
			WorkerItems:  []duroxide.WorkItem{duroxide.ActivityExecuteItem{Instance: s.Running, ExecutionID: 1, ID: 2, Name: "Charge", Input: "42"}},
		}
	})
	if err == nil {
		err = p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: s.Running, Name: "approve", Data: "true"}, 0)
	}
	if err != nil {
		return nil, err
	}

	// A batch that ran two sub-orchestrations and completed with them.
	if err := seedParent(ctx, sd, s); err != nil {
		return nil, err
	}

	// A ticker that continued as new twice: executions 1 and 2 are
	// ContinuedAsNew, execution 3 Completed.
	if err := seedChain(ctx, sd, s.Chain, 3); err != nil {
		return nil, err
	}

	return []string{
		fmt.Sprintf("%-26s Completed in one turn", s.Completed),
		fmt.Sprintf("%-26s Running: activity Charge on the worker queue, event \"approve\" on the orchestrator queue", s.Running),
		fmt.Sprintf("%-26s Completed after its sub-orchestrations %s and %s", s.Parent, s.Children[0], s.Children[1]),
		fmt.Sprintf("%-26s Completed in execution 3, after continuing as new twice", s.Chain),
	}, nil
}

func seedParent(ctx context.Context, sd seeder, s seeded) error {
	// Turn 1 schedules the children; their StartOrchestration items go
	// to other instances, so the provider delivers them through its outbox.
	starts := make([]duroxide.StartOrchestrationItem, len(s.Children))
	err := sd.start(ctx, s.Parent, "NightlyBatch", `"2026-01-01"`, nil, func(started duroxide.Event) duroxide.OrchestrationCommit {
		c := duroxide.OrchestrationCommit{HistoryDelta: []duroxide.Event{started}}
		for i, child := range s.Children {
			id := uint64(2 + i)
			input := fmt.Sprintf(`{"shard":%d}`, i)
			c.HistoryDelta = append(c.HistoryDelta, walkthrough.NewEvent(s.Parent, 1, id, nil, duroxide.SubOrchestrationScheduled{Name: "Shard", Instance: child, Input: input}))
			starts[i] = duroxide.StartOrchestrationItem{
				Instance: child, Orchestration: "Shard", Input: input, Version: ptr(walkthrough.Version),
				ParentInstance: ptr(s.Parent), ParentID: ptr(id), ParentExecutionID: ptr(uint64(1)), ExecutionID: 1,
			}
			c.OrchestratorItems = append(c.OrchestratorItems, starts[i])
		}
		return c
	})
	if err != nil {
		return err
	}

	// Each child completes in one turn and reports to its parent.
	for i, child := range s.Children {
		err := sd.start(ctx, child, "Shard", "", &starts[i], func(started duroxide.Event) duroxide.OrchestrationCommit {
			result := fmt.Sprintf(`{"shard":%d,"rows":%d}`, i, 100*(i+1))
			c := completedCommit(result, started)
			c.OrchestratorItems = []duroxide.WorkItem{duroxide.SubOrchCompletedItem{
				ParentInstance: s.Parent, ParentExecutionID: 1, ParentID: *starts[i].ParentID, Result: result,
			}}
			return c
		})
		if err != nil {
			return err
		}
	}

	// The parent's next turns record the completions and finish once both
	// are in (usually one turn: both messages arrive together).
	nextID, got := uint64(2+len(s.Children)), 0
	for got < len(s.Children) {
		item, err := walkthrough.FetchOrchestration(ctx, sd.p, s.Parent)
		if err != nil {
			return fmt.Errorf("seeding %s: %w", s.Parent, err)
		}
		var c duroxide.OrchestrationCommit
		for _, m := range item.Messages {
			if done, ok := m.(duroxide.SubOrchCompletedItem); ok {
				c.HistoryDelta = append(c.HistoryDelta, walkthrough.NewEvent(s.Parent, 1, nextID, ptr(done.ParentID), duroxide.SubOrchestrationCompleted{Result: done.Result}))
				nextID++
				got++
			}
		}
		if got == len(s.Children) {
			c.HistoryDelta = append(c.HistoryDelta, walkthrough.NewEvent(s.Parent, 1, nextID, nil, duroxide.OrchestrationCompleted{Output: `"2 shards"`}))
			c.Metadata = duroxide.ExecutionMetadata{Status: ptr(duroxide.StatusCompleted), Output: ptr(`"2 shards"`)}
		}
		c.ExecutionID = 1
		if err := sd.p.AckOrchestrationItem(ctx, item.LockToken, c); err != nil {
			return fmt.Errorf("seeding %s: ack: %w", s.Parent, err)
		}
	}
	return nil
}

func seedChain(ctx context.Context, sd seeder, instance string, executions uint64) error {
	input := "0"
	for exec := uint64(1); exec <= executions; exec++ {
		if exec == 1 {
			start := duroxide.StartOrchestrationItem{Instance: instance, Orchestration: "Ticker", Input: input, Version: ptr(walkthrough.Version), ExecutionID: 1}
			if err := sd.p.EnqueueForOrchestrator(ctx, start, 0); err != nil {
				return fmt.Errorf("seeding %s: enqueue: %w", instance, err)
			}
		}
		// Execution exec starts from the StartOrchestration (exec 1) or the
		// ContinueAsNew the previous execution's last turn enqueued.
		item, err := walkthrough.FetchOrchestration(ctx, sd.p, instance)
		if err != nil {
			return fmt.Errorf("seeding %s: %w", instance, err)
		}
		next := fmt.Sprint(exec)
		c := duroxide.OrchestrationCommit{
			ExecutionID: exec,
			HistoryDelta: []duroxide.Event{walkthrough.NewEvent(instance, exec, 1, nil, duroxide.OrchestrationStarted{
				Name: "Ticker", Version: walkthrough.Version, Input: input,
			})},
			Metadata: duroxide.ExecutionMetadata{OrchestrationName: ptr("Ticker"), OrchestrationVersion: ptr(walkthrough.Version)},
		}
		if exec < executions {
			c.HistoryDelta = append(c.HistoryDelta, walkthrough.NewEvent(instance, exec, 2, nil, duroxide.OrchestrationContinuedAsNew{Input: next}))
			c.Metadata.Status = ptr(duroxide.StatusContinuedAsNew)
			c.OrchestratorItems = []duroxide.WorkItem{duroxide.ContinueAsNewItem{
				Instance: instance, Orchestration: "Ticker", Input: next, Version: ptr(walkthrough.Version),
			}}
		} else {
			c.HistoryDelta = append(c.HistoryDelta, walkthrough.NewEvent(instance, exec, 2, nil, duroxide.OrchestrationCompleted{Output: next}))
			c.Metadata.Status = ptr(duroxide.StatusCompleted)
			c.Metadata.Output = ptr(next)
		}
		if err := sd.p.AckOrchestrationItem(ctx, item.LockToken, c); err != nil {
			return fmt.Errorf("seeding %s execution %d: ack: %w", instance, exec, err)
		}
		input = next
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
