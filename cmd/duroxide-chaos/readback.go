package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// The driver's last phase: every instance read back and judged.

// check reads every instance back and fills the report.
func (d *driver) check(ctx context.Context) (*Report, error) {
	d.mu.Lock()
	r := &Report{Processes: d.cfg.Processes, Expected: d.cfg.Orchestrations, Kills: d.kills, Faults: d.faults, FaultedRequests: d.faulted,
		FaultedCalls: d.calls, AmbiguousClientWrites: d.ambiguous, ClientCalls: d.clientCalls, ClientRetries: d.clientRetries, ClockSkews: map[string]string{}}
	for id, s := range d.workers.skews {
		r.ClockSkews[id] = s.String()
	}
	intents := d.intents
	d.mu.Unlock()
	var problems []string
	ksOutcomes := map[int]outcome{}
	ksHistories := map[string][][]duroxide.Event{}
	for i := range d.cfg.Orchestrations {
		o := outcome{Instance: instanceName(i), Index: i, State: "NotFound"}
		st, err := d.client.Status(ctx, o.Instance)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", o.Instance, err)
		}
		if st != nil {
			o.State = st.State.String()
			switch st.State {
			case durable.StateCompleted:
				if o.Output, err = durable.DecodeOutput[string](st); err != nil {
					o.Output = st.Output
				}
			case durable.StateFailed:
				o.Output = st.FailureMessage()
			}
		}
		if kindOf(i) == kitchenSink {
			ksOutcomes[i] = o // judged against the model below
			continue
		}
		if p := checkOutcome(o, r); p != "" {
			problems = append(problems, p)
		} else if kindOf(i) == "kv" {
			// The store itself, not only the orchestration's view of it.
			v, found, err := d.client.KVValue(ctx, o.Instance, "k")
			if err != nil {
				return nil, fmt.Errorf("reading the KV store of %s: %w", o.Instance, err)
			}
			if want := fmt.Sprintf("v%d", i); !found || v != want { // typed strings are stored as raw text
				r.WrongOutput++
				problems = append(problems, fmt.Sprintf("%s: KV k = %q (found %v), want %q", o.Instance, v, found, want))
			}
		}
	}
	ids, err := d.admin.ListInstances(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		execs, err := d.admin.ListExecutions(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("executions of %s: %w", id, err)
		}
		r.InstancesChecked++
		if d.large != nil {
			problems = append(problems, d.checkOffloadedKV(ctx, r, id)...)
		}
		histories := make([][]duroxide.Event, 0, len(execs))
		for x, e := range execs {
			events, err := d.admin.ReadHistoryWithExecutionID(ctx, id, e)
			if err != nil {
				return nil, fmt.Errorf("history of %s#%d: %w", id, e, err)
			}
			histories = append(histories, events)
			if d.cfg.Codec {
				problems = append(problems, d.checkEncoded(ctx, r, id, e)...)
			}
			if d.large != nil {
				problems = append(problems, d.checkOffloaded(ctx, r, id, e)...)
			}
			c := checkExecution(id, e, events)
			r.ExecutionsChecked++
			r.EventsChecked += len(events)
			r.HistoryGaps += c.Gaps
			r.DuplicatedCompletions += c.DuplicatedCompletions
			r.MissingCompletions += c.MissingCompletions
			problems = append(problems, c.Problems...)
			if x == len(execs)-1 && c.Terminal == "" && len(c.Unanswered) > 0 {
				r.UnansweredActivities += len(c.Unanswered)
				problems = append(problems, fmt.Sprintf("%s#%d: not finished, waiting for activities %v which have no result", id, e, c.Unanswered))
			}
			if x == len(execs)-1 && c.Terminal != duroxide.TypeOrchestrationCompleted && !strings.HasPrefix(id, ksPrefix) {
				problems = append(problems, fmt.Sprintf("%s: last execution %d of %d ends with %s", id, e, len(execs), tail(events, 4)))
			}
		}
		if strings.HasPrefix(id, ksPrefix) {
			ksHistories[id] = histories
		}
		if in, ok := intents[id]; ok {
			c := checkDeliveries(id, in, histories)
			r.IntendedDeliveries += len(in)
			r.DuplicatedDeliveries += c.Duplicated
			r.LostDeliveries += c.Lost
			r.UnintendedDeliveries += c.Unintended
			problems = append(problems, c.Problems...)
		}
	}
	found, err := d.checkSchedules(ctx, r, ids)
	if err != nil {
		return nil, err
	}
	problems = append(problems, found...)
	// Last of the read-backs: it deletes instances.
	if found, err = d.checkPayloadDeletes(ctx, r); err != nil {
		return nil, err
	}
	problems = append(problems, found...)
	if d.large != nil && slices.Contains(mix, bigPayloadKind) && r.OffloadedPayloads == 0 {
		r.NoOffloads = true
		problems = append(problems, "bigpayload ran with -large-payloads, yet the store holds no reference")
	}
	if len(d.ks) > 0 {
		found, err := d.checkKitchenSink(ctx, r, ksOutcomes, ksHistories)
		if err != nil {
			return nil, err
		}
		problems = append(problems, found...)
	}
	if r.ActivityExecutions, r.ActivityReexecutions, err = countActivityLogs(d.dir); err != nil {
		return nil, err
	}
	if err := d.countLeftovers(ctx, r); err != nil {
		return nil, err
	}
	for i, p := range problems {
		if i == 50 {
			d.logf("... and %d more problems (all in %s)", len(problems)-50, problemsPath(d.dir))
			break
		}
		d.logf("problem: %s", p)
	}
	if len(problems) > 0 {
		// Kept with the logs: a run with violations keeps its directory.
		if err := os.WriteFile(problemsPath(d.dir), []byte(strings.Join(problems, "\n")+"\n"), 0o600); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// problemsPath is the file listing every problem a run found.
func problemsPath(dir string) string { return filepath.Join(dir, "problems.txt") }

// tail names the types of the last n events, for a stuck instance's
// problem line.
func tail(events []duroxide.Event, n int) string {
	var names []string
	for _, e := range events[max(0, len(events)-n):] {
		names = append(names, fmt.Sprintf("%d:%s", e.EventID, e.Kind.EventType()))
	}
	return "[" + strings.Join(names, " ") + "]"
}
