package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// Report is the outcome of a run: the figures the checks are made on, as
// one JSON object with -json.
type Report struct {
	Processes             int            `json:"processes"`
	Completed             int            `json:"completed"`
	Expected              int            `json:"expected"`
	WrongOutput           int            `json:"wrong_output"`
	Lost                  int            `json:"lost"`
	DuplicatedCompletions int            `json:"duplicated_completions"`
	HistoryGaps           int            `json:"history_gaps"`
	InstancesChecked      int            `json:"instances_checked"`
	ExecutionsChecked     int            `json:"executions_checked"`
	EventsChecked         int            `json:"events_checked"`
	ActivityExecutions    int            `json:"activity_executions"`
	ActivityReexecutions  int            `json:"activity_reexecutions"`
	OutboxLeft            int            `json:"outbox_left"`
	LocksLeft             int            `json:"locks_left"`
	QueueLeft             int            `json:"queue_left"`
	Kills                 int            `json:"kills"`
	Faults                map[string]int `json:"faults"`
	FaultedRequests       map[string]int `json:"faulted_requests"`
	Elapsed               string         `json:"elapsed"`
	ElapsedSeconds        float64        `json:"elapsed_seconds"`
	Violations            []string       `json:"violations"`
	OK                    bool           `json:"ok"`

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
	// Problems describes each finding, for the log.
	Problems []string
}

// checkExecution checks one execution's history as read back (in event id
// order): ids contiguous from 1, and every completion recorded once.
func checkExecution(instance string, execution uint64, events []duroxide.Event) historyCheck {
	var c historyCheck
	seen := map[uint64]string{} // source event id → first completion's type
	terminals := 0
	for k, e := range events {
		if want := uint64(k + 1); e.EventID != want {
			c.Gaps++
			c.Problems = append(c.Problems, fmt.Sprintf("%s#%d: event %d has id %d, want %d", instance, execution, k, e.EventID, want))
		}
		switch e.Kind.(type) {
		case *duroxide.OrchestrationCompleted, *duroxide.OrchestrationFailed, *duroxide.OrchestrationContinuedAsNew:
			terminals++
			if terminals > 1 {
				c.DuplicatedCompletions++
				c.Problems = append(c.Problems, fmt.Sprintf("%s#%d: terminal event %s at id %d after another", instance, execution, e.Kind.EventType(), e.EventID))
			}
		case *duroxide.ActivityCompleted, *duroxide.ActivityFailed, *duroxide.TimerFired,
			*duroxide.SubOrchestrationCompleted, *duroxide.SubOrchestrationFailed:
			if e.SourceEventID == nil {
				continue
			}
			if first, dup := seen[*e.SourceEventID]; dup {
				c.DuplicatedCompletions++
				c.Problems = append(c.Problems, fmt.Sprintf("%s#%d: %s at id %d completes event %d again (first: %s)", instance, execution, e.Kind.EventType(), e.EventID, *e.SourceEventID, first))
				continue
			}
			seen[*e.SourceEventID] = e.Kind.EventType()
		}
	}
	return c
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
// wrong (completed with another output, or failed), or lost (not terminal).
func checkOutcome(o outcome, r *Report) (problem string) {
	r.outcomes++
	switch o.State {
	case "Completed":
		r.Completed++
		if want := expectedOutput(o.Index); o.Output != want {
			r.WrongOutput++
			return fmt.Sprintf("%s: output %q, want %q", o.Instance, o.Output, want)
		}
		return ""
	case "Failed":
		r.WrongOutput++
		return fmt.Sprintf("%s: failed: %s", o.Instance, o.Output)
	default:
		r.Lost++
		return fmt.Sprintf("%s: not completed (%s)", o.Instance, o.State)
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
	add(r.WrongOutput, "wrong outputs")
	add(r.DuplicatedCompletions, "duplicated completions")
	add(r.HistoryGaps, "history gaps")
	add(r.OutboxLeft, "outbox intents left")
	add(r.LocksLeft, "locks left")
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
	row("duplicated_completions", r.DuplicatedCompletions)
	row("history_gaps", r.HistoryGaps)
	row("instances_checked", r.InstancesChecked)
	row("executions_checked", r.ExecutionsChecked)
	row("events_checked", r.EventsChecked)
	row("activity_executions", r.ActivityExecutions)
	row("activity_reexecutions", r.ActivityReexecutions)
	row("outbox_left", r.OutboxLeft)
	row("locks_left", r.LocksLeft)
	row("queue_left", r.QueueLeft)
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
	row("elapsed", r.Elapsed)
	if r.OK {
		row("result", "OK")
	} else {
		row("result", "FAILED: "+strings.Join(r.Violations, ", "))
	}
	return tw.Flush()
}
