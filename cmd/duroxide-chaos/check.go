package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// Report is the outcome of a run: the figures the checks are made on, as
// one JSON object with -json.
type Report struct {
	Processes             int `json:"processes"`
	Completed             int `json:"completed"`
	Expected              int `json:"expected"`
	WrongOutput           int `json:"wrong_output"`
	Lost                  int `json:"lost"`
	Stuck                 int `json:"stuck"`
	DuplicatedCompletions int `json:"duplicated_completions"`
	MissingCompletions    int `json:"missing_completions"`
	UnansweredActivities  int `json:"unanswered_activities"`
	HistoryGaps           int `json:"history_gaps"`
	IntendedDeliveries    int `json:"intended_deliveries"`
	DuplicatedDeliveries  int `json:"duplicated_deliveries"`
	LostDeliveries        int `json:"lost_deliveries"`
	UnintendedDeliveries  int `json:"unintended_deliveries"`
	ClientCalls           int `json:"client_calls"`
	ClientRetries         int `json:"client_retries"`
	// AmbiguousClientWrites counts the client's writes answered with an
	// error although the server applied them.
	AmbiguousClientWrites int `json:"ambiguous_client_writes"`
	InstancesChecked      int `json:"instances_checked"`
	ExecutionsChecked     int `json:"executions_checked"`
	EventsChecked         int `json:"events_checked"`
	// EncodedPayloads counts the stored payloads (inputs, results,
	// outputs) found in their codec's envelope with -codec; PlainPayloads
	// those stored without it, each a problem.
	EncodedPayloads int `json:"encoded_payloads,omitempty"`
	PlainPayloads   int `json:"plain_payloads,omitempty"`
	// With -large-payloads: OffloadedPayloads counts the stored payloads
	// that are claim-check references; InlineLargePayloads those over the
	// threshold stored inline, each a problem. PayloadDeletes counts the
	// bigpayload instances deleted at the end; LeftoverPayloads their
	// payloads (references or files) still there after it,
	// MissingPayloads references of instances not deleted that no longer
	// resolve; PayloadFiles the file store's files at the end. NoOffloads:
	// bigpayload ran and nothing was offloaded.
	OffloadedPayloads    int  `json:"offloaded_payloads,omitempty"`
	InlineLargePayloads  int  `json:"inline_large_payloads,omitempty"`
	PayloadDeletes       int  `json:"payload_deletes,omitempty"`
	LeftoverPayloads     int  `json:"leftover_payloads,omitempty"`
	MissingPayloads      int  `json:"missing_payloads,omitempty"`
	PayloadFiles         int  `json:"payload_files,omitempty"`
	NoOffloads           bool `json:"no_offloads,omitempty"`
	ActivityExecutions   int  `json:"activity_executions"`
	ActivityReexecutions int  `json:"activity_reexecutions"`
	OutboxLeft           int  `json:"outbox_left"`
	LocksLeft            int  `json:"locks_left"`
	// ScheduleRuns are the runs of the schedule kind checked; the others
	// count its runs missing for a due time, run for no due time, or
	// started more than once.
	ScheduleRuns        int               `json:"schedule_runs"`
	ScheduleMissedRuns  int               `json:"schedule_missed_runs"`
	ScheduleExtraRuns   int               `json:"schedule_extra_runs"`
	ScheduleDoubledRuns int               `json:"schedule_doubled_runs"`
	QueueLeft           int               `json:"queue_left"`
	Kills               int               `json:"kills"`
	Faults              map[string]int    `json:"faults"`
	FaultedRequests     map[string]int    `json:"faulted_requests"`
	FaultedCalls        map[string]int    `json:"faulted_calls"`
	ClockSkews          map[string]string `json:"clock_skews"`
	Elapsed             string            `json:"elapsed"`
	ElapsedSeconds      float64           `json:"elapsed_seconds"`
	// KitchenSink is the kitchen sink's operator and model figures (nil
	// when the run has no kitchen-sink instance).
	KitchenSink *ksReport `json:"kitchensink,omitempty"`
	Violations  []string  `json:"violations"`
	OK          bool      `json:"ok"`

	// outcomes counts the instances checkOutcome classified.
	outcomes int
}

// historyCheck is what checkExecution found in one execution's history.
type historyCheck struct {
	// Gaps counts places where event ids are not 1, 2, 3, ... in order.
	Gaps int
	// DuplicatedCompletions counts completions recorded more than once:
	// a second result for one scheduled activity, timer or
	// sub-orchestration, or a second terminal event.
	DuplicatedCompletions int
	// MissingCompletions counts, in an execution that completed or
	// continued as new, scheduled work that never got its result, and (in
	// any execution) results of work never scheduled. Every future of the
	// workload is awaited, so an execution can only succeed once all of
	// them completed; a failed one leaves the rest behind by design (its
	// failure is reported as a wrong output).
	MissingCompletions int
	// Unanswered lists the activities of an execution that did not end
	// which are scheduled but have no result: what a stuck instance waits
	// for.
	Unanswered []uint64
	// Terminal is the execution's terminal event type ("" if none).
	Terminal string
	// Problems describes each finding, for the log.
	Problems []string
}

// kindValue returns k as a value: histories read back hold values, but
// a kind may also be given as a pointer (tests).
func kindValue(k duroxide.EventKind) duroxide.EventKind {
	if v := reflect.ValueOf(k); v.Kind() == reflect.Pointer && !v.IsNil() {
		if e, ok := v.Elem().Interface().(duroxide.EventKind); ok {
			return e
		}
	}
	return k
}

// checkExecution checks one execution's history as read back (in event id
// order): ids contiguous from 1, every completion recorded once and
// matching a schedule, and, once the execution ended, every schedule
// completed.
func checkExecution(instance string, execution uint64, events []duroxide.Event) historyCheck {
	var c historyCheck
	scheduled := map[uint64]string{} // schedule event id → its type
	seen := map[uint64]string{}      // source event id → first completion's type
	terminals := 0
	for k, e := range events {
		if want := uint64(k + 1); e.EventID != want {
			c.Gaps++
			c.Problems = append(c.Problems, fmt.Sprintf("%s#%d: event %d has id %d, want %d", instance, execution, k, e.EventID, want))
		}
		switch kindValue(e.Kind).(type) {
		case duroxide.OrchestrationCompleted, duroxide.OrchestrationFailed, duroxide.OrchestrationContinuedAsNew:
			terminals++
			c.Terminal = e.Kind.EventType()
			if terminals > 1 {
				c.DuplicatedCompletions++
				c.Problems = append(c.Problems, fmt.Sprintf("%s#%d: terminal event %s at id %d after another", instance, execution, e.Kind.EventType(), e.EventID))
			}
		case duroxide.ActivityScheduled, duroxide.TimerCreated, duroxide.SubOrchestrationScheduled:
			scheduled[e.EventID] = e.Kind.EventType()
		case duroxide.ActivityCompleted, duroxide.ActivityFailed, duroxide.TimerFired,
			duroxide.SubOrchestrationCompleted, duroxide.SubOrchestrationFailed:
			if e.SourceEventID == nil {
				continue
			}
			src := *e.SourceEventID
			if first, dup := seen[src]; dup {
				c.DuplicatedCompletions++
				c.Problems = append(c.Problems, fmt.Sprintf("%s#%d: %s at id %d completes event %d again (first: %s)", instance, execution, e.Kind.EventType(), e.EventID, src, first))
				continue
			}
			seen[src] = e.Kind.EventType()
			if _, ok := scheduled[src]; !ok {
				c.MissingCompletions++
				c.Problems = append(c.Problems, fmt.Sprintf("%s#%d: %s at id %d completes event %d, which scheduled nothing", instance, execution, e.Kind.EventType(), e.EventID, src))
			}
		}
	}
	for _, id := range sortedKeys(scheduled) {
		if _, ok := seen[id]; ok {
			continue
		}
		switch {
		case c.Terminal == duroxide.TypeOrchestrationCompleted || c.Terminal == duroxide.TypeOrchestrationContinuedAsNew:
			c.MissingCompletions++
			c.Problems = append(c.Problems, fmt.Sprintf("%s#%d: %s %d has no completion, yet the execution ended (%s)", instance, execution, scheduled[id], id, c.Terminal))
		case c.Terminal == "" && scheduled[id] == duroxide.TypeActivityScheduled:
			c.Unanswered = append(c.Unanswered, id)
		}
	}
	return c
}

func sortedKeys[V any](m map[uint64]V) []uint64 {
	out := make([]uint64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// intent is one message the driver meant to deliver to an instance: an
// event raised or a message enqueued, with a payload unique in the run.
type intent struct {
	// Queue is true for EnqueueEvent, false for RaiseEvent.
	Queue bool
	Name  string
	Data  string
}

// deliveryCheck is what checkDeliveries found for one instance.
type deliveryCheck struct {
	Duplicated, Lost, Unintended int
	Problems                     []string
}

// checkDeliveries compares what the driver meant to send to instance with
// what its history received: each intended message exactly once. Raised
// events are counted over all executions; queue messages in the last
// execution only, which holds every message still pending when an
// execution continued as new (carried forward) and all later ones. Every
// instance the driver sends to completes only after its last send, so
// nothing it sent may be missing.
func checkDeliveries(instance string, intents []intent, executions [][]duroxide.Event) deliveryCheck {
	var c deliveryCheck
	got := map[intent]int{}
	seenIn := map[intent][]int{} // queue messages: the executions (1-based) that recorded them
	for x, events := range executions {
		last := x == len(executions)-1
		for _, e := range events {
			switch k := kindValue(e.Kind).(type) {
			case duroxide.ExternalEvent:
				got[intent{Name: k.Name, Data: k.Data}]++
			case duroxide.ExternalEventPersistent:
				in := intent{Queue: true, Name: k.Name, Data: k.Data}
				seenIn[in] = append(seenIn[in], x+1)
				if last {
					got[in]++
				}
			}
		}
	}
	want := map[intent]bool{}
	for _, in := range intents {
		want[in] = true
	}
	for in := range want {
		switch n := got[in]; {
		case n == 0 && len(seenIn[in]) > 0:
			c.Lost++
			c.Problems = append(c.Problems, fmt.Sprintf("%s: %s not in the last execution (%d), recorded in executions %v only", instance, in, len(executions), seenIn[in]))
		case n == 0:
			c.Lost++
			c.Problems = append(c.Problems, fmt.Sprintf("%s: %s never delivered", instance, in))
		case n > 1:
			c.Duplicated += n - 1
			c.Problems = append(c.Problems, fmt.Sprintf("%s: %s delivered %d times", instance, in, n))
		}
	}
	for in, n := range got {
		if !want[in] {
			c.Unintended += n
			c.Problems = append(c.Problems, fmt.Sprintf("%s: %s delivered %d times, never sent", instance, in, n))
		}
	}
	sort.Strings(c.Problems)
	return c
}

// String names the intent in problems.
func (in intent) String() string {
	if in.Queue {
		return fmt.Sprintf("message %q on queue %q", clip(in.Data), in.Name)
	}
	return fmt.Sprintf("event %q = %q", in.Name, clip(in.Data))
}

// clip shortens a payload for a problem line: the bigpayload kind's
// are megabytes.
func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	return fmt.Sprintf("%s...(%d bytes, sha256 %s)", s[:40], len(s), shaHex(s)[:16])
}

// outcome is a top-level instance's final state as the driver read it.
type outcome struct {
	Instance string
	Index    int
	// State is "Completed", "Failed", "Running", "NotFound", ...
	State  string
	Output string
}

// checkOutcome classifies one instance: completed with the expected output,
// wrong (completed with another output, or failed), lost (never started:
// no history) or stuck (started, never finished).
func checkOutcome(o outcome, r *Report) (problem string) {
	r.outcomes++
	switch o.State {
	case "Completed":
		r.Completed++
		if want := expectedOutput(o.Index); o.Output != want {
			r.WrongOutput++
			return fmt.Sprintf("%s: output %q, want %q", o.Instance, clip(o.Output), clip(want))
		}
		return ""
	case "Failed":
		r.WrongOutput++
		return fmt.Sprintf("%s: failed: %s", o.Instance, o.Output)
	case "NotFound":
		r.Lost++
		return fmt.Sprintf("%s: lost (never started)", o.Instance)
	default:
		r.Stuck++
		return fmt.Sprintf("%s: stuck (%s)", o.Instance, o.State)
	}
}

// activityKey names one scheduled activity: instance, execution, id.
type activityKey struct {
	instance  string
	execution string
	id        string
}

// countActivityLogs reads the workers' activity logs: every line is one
// execution; a key seen again is a re-execution (at-least-once delivery).
func countActivityLogs(dir string) (executions, reexecutions int, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "activities-*.log"))
	if err != nil {
		return 0, 0, err
	}
	seen := map[activityKey]int{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return 0, 0, err
		}
		err = countLines(f, seen, &executions)
		f.Close()
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", name, err)
		}
	}
	for _, n := range seen {
		reexecutions += n - 1
	}
	return executions, reexecutions, nil
}

func countLines(r io.Reader, seen map[activityKey]int, executions *int) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 {
			return fmt.Errorf("malformed line %q", sc.Text())
		}
		seen[activityKey{f[0], f[1], f[2]}]++
		*executions++
	}
	return sc.Err()
}

// finish computes the violations and OK.
func (r *Report) finish(elapsed time.Duration) {
	r.Elapsed = elapsed.Round(time.Millisecond).String()
	r.ElapsedSeconds = elapsed.Round(time.Millisecond).Seconds()
	r.Violations = nil
	add := func(n int, what string) {
		if n != 0 {
			r.Violations = append(r.Violations, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(r.Lost, "lost")
	add(r.Stuck, "stuck")
	add(r.WrongOutput, "wrong outputs")
	add(r.DuplicatedCompletions, "duplicated completions")
	add(r.MissingCompletions, "missing completions")
	add(r.HistoryGaps, "history gaps")
	add(r.DuplicatedDeliveries, "duplicated deliveries")
	add(r.LostDeliveries, "lost deliveries")
	add(r.UnintendedDeliveries, "unintended deliveries")
	add(r.OutboxLeft, "outbox intents left")
	add(r.LocksLeft, "locks left")
	add(r.ScheduleMissedRuns, "schedule due times without a run")
	add(r.ScheduleExtraRuns, "schedule runs of no due time")
	add(r.ScheduleDoubledRuns, "schedule runs started twice")
	add(r.InlineLargePayloads, "large payloads stored inline")
	add(r.LeftoverPayloads, "payloads left after deletes")
	add(r.MissingPayloads, "referenced payloads missing")
	if r.NoOffloads {
		r.Violations = append(r.Violations, "no payload offloaded")
	}
	if ks := r.KitchenSink; ks != nil {
		for _, cat := range sortedStrings(ks.Violations) {
			add(ks.Violations[cat], "kitchensink "+cat)
		}
	}
	if r.outcomes != r.Expected || r.Expected == 0 {
		r.Violations = append(r.Violations, fmt.Sprintf("checked %d instances of %d expected", r.outcomes, r.Expected))
	}
	if r.Violations == nil {
		r.Violations = []string{}
	}
	r.OK = len(r.Violations) == 0
}

// print writes the report as a table, or as one JSON object.
func (r *Report) print(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		return enc.Encode(r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	row("processes", r.Processes)
	row("completed", r.Completed)
	row("expected", r.Expected)
	row("wrong_output", r.WrongOutput)
	row("lost", r.Lost)
	row("stuck", r.Stuck)
	row("duplicated_completions", r.DuplicatedCompletions)
	row("missing_completions", r.MissingCompletions)
	row("unanswered_activities", r.UnansweredActivities)
	row("history_gaps", r.HistoryGaps)
	row("intended_deliveries", r.IntendedDeliveries)
	row("duplicated_deliveries", r.DuplicatedDeliveries)
	row("lost_deliveries", r.LostDeliveries)
	row("unintended_deliveries", r.UnintendedDeliveries)
	row("client_calls", r.ClientCalls)
	row("client_retries", r.ClientRetries)
	row("ambiguous_client_writes", r.AmbiguousClientWrites)
	row("instances_checked", r.InstancesChecked)
	row("executions_checked", r.ExecutionsChecked)
	row("events_checked", r.EventsChecked)
	if r.EncodedPayloads+r.PlainPayloads > 0 {
		row("encoded_payloads", r.EncodedPayloads)
		row("plain_payloads", r.PlainPayloads)
	}
	if r.OffloadedPayloads+r.InlineLargePayloads+r.PayloadDeletes > 0 {
		row("offloaded_payloads", r.OffloadedPayloads)
		row("inline_large_payloads", r.InlineLargePayloads)
		row("payload_deletes", r.PayloadDeletes)
		row("leftover_payloads", r.LeftoverPayloads)
		row("missing_payloads", r.MissingPayloads)
		row("payload_files", r.PayloadFiles)
	}
	row("activity_executions", r.ActivityExecutions)
	row("activity_reexecutions", r.ActivityReexecutions)
	row("outbox_left", r.OutboxLeft)
	if r.ScheduleRuns > 0 || r.ScheduleMissedRuns > 0 {
		row("schedule_runs", r.ScheduleRuns)
		row("schedule_missed_runs", r.ScheduleMissedRuns)
		row("schedule_extra_runs", r.ScheduleExtraRuns)
		row("schedule_doubled_runs", r.ScheduleDoubledRuns)
	}
	row("locks_left", r.LocksLeft)
	row("queue_left", r.QueueLeft)
	if ks := r.KitchenSink; ks != nil {
		row("kitchensink.instances", ks.Instances)
		row("kitchensink.matched_model", ks.MatchedModel)
		row("kitchensink.intended_deliveries", ks.IntendedDeliveries)
		row("kitchensink.heartbeat_steps", ks.HeartbeatSteps)
		row("kitchensink.heartbeat_resumes", ks.HeartbeatResumes)
		row("kitchensink.heartbeat_stalls", ks.HeartbeatStalls)
		row("kitchensink.heartbeat_timeouts", ks.HeartbeatTimeouts)
		for _, k := range sortedStrings(ks.Plans) {
			row("kitchensink.plan."+k, ks.Plans[k])
		}
		for _, k := range sortedStrings(ks.Actions) {
			row("kitchensink.action."+k, fmt.Sprintf("%d (%d refused)", ks.Actions[k], ks.Refused[k]))
		}
		for _, k := range sortedStrings(ks.Violations) {
			row("kitchensink.violation."+k, ks.Violations[k])
		}
	}
	row("kills", r.Kills)
	kinds := make([]string, 0, len(r.Faults))
	for k := range r.Faults {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		if n, ok := r.FaultedRequests[k]; ok {
			row("faults."+k, fmt.Sprintf("%d windows, %d requests", r.Faults[k], n))
		} else {
			row("faults."+k, fmt.Sprintf("%d windows", r.Faults[k]))
		}
	}
	for _, k := range sortedStrings(r.FaultedCalls) {
		row("faulted_calls."+k, r.FaultedCalls[k])
	}
	for _, k := range sortedStrings(r.ClockSkews) {
		row("clock_skew."+k, r.ClockSkews[k])
	}
	row("elapsed", r.Elapsed)
	if r.OK {
		row("result", "OK")
	} else {
		row("result", "FAILED: "+strings.Join(r.Violations, ", "))
	}
	return tw.Flush()
}

func sortedStrings[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
