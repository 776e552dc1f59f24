// Package limitstest holds the inputs Cosmos DB refuses, as calls on any
// duroxide.Provider, so that the Cosmos provider and memprovider are shown
// to refuse the same inputs the same way (and memprovider's relaxed mode
// to accept them).
//
// Start with [Cases] and [RefusedIDs].
package limitstest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// Case is one input a store limit refuses. Call sets up what it needs on
// p (instances named after the case) and returns the error of the one
// call the limit refuses; a setup failure is returned wrapped in
// ErrSetup.
type Case struct {
	Name string
	Call func(ctx context.Context, p duroxide.Provider) error
}

// ErrSetup marks a failure before the call under test.
var ErrSetup = fmt.Errorf("limitstest: setup failed")

var (
	// ID2049 is one byte longer than a partition key value may be.
	ID2049 = strings.Repeat("x", 2049)
	// Big3MB is larger than any Cosmos DB document may be.
	Big3MB = strings.Repeat("x", 3*1024*1024)
)

// Cases returns every case. Ids Cosmos refuses are used both as the
// instance of an enqueue and as the target of a turn's message.
func Cases() []Case {
	cases := []Case{
		{"start_input_3MB", func(ctx context.Context, p duroxide.Provider) error {
			return p.EnqueueForOrchestrator(ctx, start("lim-start-input", Big3MB), 0)
		}},
		{"raise_event_data_3MB", func(ctx context.Context, p duroxide.Provider) error {
			return p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: "lim-event", Name: "e", Data: Big3MB}, 0)
		}},
		{"queue_message_3MB", func(ctx context.Context, p duroxide.Provider) error {
			return p.EnqueueForOrchestrator(ctx, duroxide.QueueMessageItem{Instance: "lim-queue", Name: "q", Data: Big3MB}, 0)
		}},
		{"activity_input_3MB", func(ctx context.Context, p duroxide.Provider) error {
			return p.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: "lim-act", ExecutionID: 1, ID: 1, Name: "A", Input: Big3MB})
		}},
		{"activity_session_invalid_utf8", func(ctx context.Context, p duroxide.Provider) error {
			return p.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: "lim-session", ExecutionID: 1, ID: 1, Name: "A", SessionID: ptr("s\xff")})
		}},
		{"read_id_2049_bytes", func(ctx context.Context, p duroxide.Provider) error {
			_, err := p.Read(ctx, ID2049)
			return err
		}},
		{"kv_read_id_2049_bytes", func(ctx context.Context, p duroxide.Provider) error {
			_, _, err := p.KVValue(ctx, ID2049, "k")
			return err
		}},
		{"append_event_3MB", func(ctx context.Context, p duroxide.Provider) error {
			return p.AppendWithExecution(ctx, "lim-append", 1, []duroxide.Event{event("lim-append", 1, duroxide.OrchestrationStarted{Name: "O", Version: "1.0.0", Input: Big3MB})})
		}},
		{"ack_output_3MB", ack("lim-output", func(inst string, c *duroxide.OrchestrationCommit) {
			c.HistoryDelta = append(c.HistoryDelta, event(inst, 2, duroxide.OrchestrationCompleted{Output: "o"}))
			c.Metadata.Status, c.Metadata.Output = ptr(duroxide.StatusCompleted), ptr(Big3MB)
		})},
		{"ack_custom_status_3MB", ack("lim-status", func(inst string, c *duroxide.OrchestrationCommit) {
			c.HistoryDelta = append(c.HistoryDelta, event(inst, 2, duroxide.CustomStatusUpdated{Status: ptr(Big3MB)}))
		})},
		{"ack_kv_value_3MB", ack("lim-kv-value", func(inst string, c *duroxide.OrchestrationCommit) {
			c.HistoryDelta = append(c.HistoryDelta, event(inst, 2, duroxide.KeyValueSet{Key: "k", Value: Big3MB, LastUpdatedAtMs: 1}))
		})},
		{"ack_kv_key_invalid_utf8", ack("lim-kv-key", func(inst string, c *duroxide.OrchestrationCommit) {
			c.HistoryDelta = append(c.HistoryDelta, event(inst, 2, duroxide.KeyValueSet{Key: "k\xff", Value: "v", LastUpdatedAtMs: 1}))
		})},
		{"ack_activity_input_3MB", ack("lim-ack-act", func(inst string, c *duroxide.OrchestrationCommit) {
			c.WorkerItems = []duroxide.WorkItem{duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: "A", Input: Big3MB}}
		})},
		{"ack_child_input_3MB", ack("lim-ack-child", func(inst string, c *duroxide.OrchestrationCommit) {
			c.OrchestratorItems = []duroxide.WorkItem{childStart(inst, inst+"-child", Big3MB)}
		})},
		{"ack_work_item_result_3MB", func(ctx context.Context, p duroxide.Provider) error {
			const inst = "lim-result"
			if err := p.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 1, Name: "A"}); err != nil {
				return fmt.Errorf("%w: %w", ErrSetup, err)
			}
			w, err := p.FetchWorkItem(ctx, time.Minute, 0, nil, duroxide.DefaultOnly())
			if err != nil || w == nil || w.Item.InstanceID() != inst {
				return fmt.Errorf("%w: fetch work item of %s: %v, %v", ErrSetup, inst, err, w != nil)
			}
			return p.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 1, Result: Big3MB})
		}},
	}
	cases = append(cases,
		Case{"client_start_input_3MB", clientWrite(func(ctx context.Context, cw duroxide.ClientWriter) error {
			return cw.StartInstance(ctx, start("lim-client-input", Big3MB), "")
		})},
		Case{"client_enqueue_event_3MB", clientWrite(func(ctx context.Context, cw duroxide.ClientWriter) error {
			// Started and its first turn taken, so that nothing of it is
			// left for the other cases' fetches.
			const inst = "lim-client-event"
			if err := ack(inst, func(string, *duroxide.OrchestrationCommit) {})(ctx, cw.(duroxide.Provider)); err != nil {
				return fmt.Errorf("%w: %w", ErrSetup, err)
			}
			return cw.EnqueueForInstance(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "e", Data: Big3MB}, "")
		})},
	)
	for _, id := range RefusedIDs() {
		if id.ID != "" { // an empty id is refused by every provider, relaxed or not
			cases = append(cases, Case{"client_start_id_" + id.Name, clientWrite(func(ctx context.Context, cw duroxide.ClientWriter) error {
				return cw.StartInstance(ctx, start(id.ID, "{}"), "")
			})})
		}
		cases = append(cases,
			Case{"start_id_" + id.Name, func(ctx context.Context, p duroxide.Provider) error {
				return p.EnqueueForOrchestrator(ctx, start(id.ID, "{}"), 0)
			}},
			Case{"ack_child_id_" + id.Name, ack("lim-child-"+id.Name, func(inst string, c *duroxide.OrchestrationCommit) {
				c.OrchestratorItems = []duroxide.WorkItem{childStart(inst, id.ID, "{}")}
			})},
		)
	}
	return cases
}

// clientWrite runs call on p's duroxide.ClientWriter (the Client's start
// and enqueue path); a provider without one fails the setup.
func clientWrite(call func(context.Context, duroxide.ClientWriter) error) func(context.Context, duroxide.Provider) error {
	return func(ctx context.Context, p duroxide.Provider) error {
		cw, ok := p.(duroxide.ClientWriter)
		if !ok {
			return fmt.Errorf("%w: %T is not a duroxide.ClientWriter", ErrSetup, p)
		}
		return call(ctx, cw)
	}
}

// NamedID is an instance id with a name for subtests.
type NamedID struct{ Name, ID string }

// RefusedIDs are instance ids Cosmos DB (or azcosmos, which sends the
// partition key in a header) cannot take.
func RefusedIDs() []NamedID {
	return []NamedID{
		{"2049_bytes", ID2049},
		{"2049_bytes_unicode", strings.Repeat("日", 683)},
		{"empty", ""},
		{"reserved", "_cdb_dispatch_leases"},
		{"invalid_utf8", "bad\xff\xfe"},
		{"emoji", "party-🎉"},
		{"nul", "nul\x00byte"},
		{"del", "del\x7f"},
	}
}

// ack locks a fresh start of inst and acks its first turn, changed by edit.
func ack(inst string, edit func(inst string, c *duroxide.OrchestrationCommit)) func(context.Context, duroxide.Provider) error {
	return func(ctx context.Context, p duroxide.Provider) error {
		if err := p.EnqueueForOrchestrator(ctx, start(inst, "{}"), 0); err != nil {
			return fmt.Errorf("%w: %w", ErrSetup, err)
		}
		item, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
		if err != nil || item == nil || item.Instance != inst {
			return fmt.Errorf("%w: fetch %s: %v, %v", ErrSetup, inst, err, item != nil)
		}
		c := duroxide.OrchestrationCommit{
			ExecutionID:  1,
			HistoryDelta: []duroxide.Event{event(inst, 1, duroxide.OrchestrationStarted{Name: "O", Version: "1.0.0", Input: "{}"})},
			Metadata:     duroxide.ExecutionMetadata{OrchestrationName: ptr("O"), OrchestrationVersion: ptr("1.0.0")},
		}
		edit(inst, &c)
		return p.AckOrchestrationItem(ctx, item.LockToken, c)
	}
}

func start(inst, input string) duroxide.StartOrchestrationItem {
	return duroxide.StartOrchestrationItem{Instance: inst, Orchestration: "O", Input: input, Version: ptr("1.0.0"), ExecutionID: 1}
}

func childStart(parent, child, input string) duroxide.StartOrchestrationItem {
	s := start(child, input)
	s.ParentInstance, s.ParentID, s.ParentExecutionID = ptr(parent), ptr(uint64(2)), ptr(uint64(1))
	return s
}

func event(inst string, id uint64, kind duroxide.EventKind) duroxide.Event {
	return duroxide.Event{EventID: id, InstanceID: inst, ExecutionID: 1, TimestampMs: 1, DuroxideVersion: "0.1.31", Kind: kind}
}

func ptr[T any](v T) *T { return &v }
