package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/duroxide-go/cdb/duroxide"
)

// The kitchen sink's reference model: from the operator's record of one
// instance, what the instance must end as; and the judge that compares
// it with what the store holds.

// ksExpectation is what one instance must end as.
type ksExpectation struct {
	// Gone: deleted and not started again; the instance must not exist.
	Gone bool
	// Runs are the runs it may end in (more than one when the operator's
	// calls raced: a restart on top of a rewind, two reuse starts).
	Runs map[int]bool
	// MayCancel: a cancel was accepted while the run was live, so the run
	// may end cancelled (or complete, if it completed first).
	MayCancel bool
	// Rewound: a rewind was accepted after the fault was cleared, so the
	// run must not end on the planted fault.
	Rewound bool
	// Output is what every run completes with (the program's output does
	// not depend on the run).
	Output string
	// Refusals are the operator's calls refused although the model says
	// the instance's state allowed them, by violation category.
	Refusals map[string]int
}

// Violation categories of the kitchen sink.
const (
	ksLost            = "lost"                // must exist, does not
	ksStuck           = "stuck"               // not terminal at the end
	ksWrongOutput     = "wrong_output"        // completed with another output
	ksWrongRun        = "wrong_run"           // ended in a run the operator's actions do not allow
	ksResurrected     = "resurrected"         // deleted and not re-created, yet exists
	ksStrayCancel     = "stray_cancel"        // ended cancelled without a cancel of its run
	ksFaultPersisted  = "fault_persisted"     // ended on the planted fault after the rewind
	ksStaleChild      = "stale_child_failure" // failed by a child an earlier execution dropped
	ksNondeterminism  = "nondeterminism"      // failed on a message its history does not match
	ksUnexpectedFail  = "unexpected_failure"  // failed otherwise
	ksResumeRefused   = "resume_refused"      // Resume refused while Suspended
	ksRecreateRefused = "recreate_refused"    // start after delete refused for ksPatience
	ksDoubleStart     = "double_start"        // both concurrent IDReuseAllowTerminal starts accepted
	ksOverlap         = "overlapping_executions"
	ksKVMismatch      = "kv_mismatch"
	ksDupDelivery     = "duplicated_deliveries"
	ksUpdateWrong     = "update_answer" // an update answered against its contract
)

// ksExpect runs the model over the operator's record.
func ksExpect(l *ksLife) ksExpectation {
	e := ksExpectation{Runs: map[int]bool{}, Output: ksExpected(l.Index, l.Steps), Refusals: map[string]int{}}
	var reuses []ksAction
	for _, a := range l.Actions {
		switch a.Op {
		case actStart, actRecreate:
			if a.accepted() {
				e = e.only(a.Run)
				e.Gone = false
			} else if a.Op == actRecreate && strings.Contains(a.Err, duroxide.ErrInstanceExists.Error()) {
				e.Refusals[ksRecreateRefused]++
			}
		case actCancel:
			// A cancel of an instance seen terminal must change nothing.
			if a.accepted() && a.Observed != "Completed" && a.Observed != "Failed" {
				e.MayCancel = true
			}
		case actRewind:
			if a.accepted() {
				e.Rewound = true
			}
		case actRestart:
			if !a.accepted() {
				continue
			}
			if a.Observed == "Rewinding" {
				// Raced with the rewind: either may be the one that took.
				e.Runs[a.Run] = true
				continue
			}
			e = e.only(a.Run)
		case actDelete:
			if a.accepted() {
				e.Gone, e.Runs = true, map[int]bool{}
			}
		case actReuse:
			reuses = append(reuses, a)
		case actResume:
			if a.Err == errResumeRefused.Error() {
				e.Refusals[ksResumeRefused]++
			}
		}
	}
	took, clean := 0, 0
	for _, a := range reuses {
		if !a.accepted() {
			continue
		}
		if took == 0 {
			e = e.only(a.Run)
		}
		e.Runs[a.Run] = true
		took++
		if a.Err == "" {
			clean++
		}
	}
	if clean > 1 {
		// Both callers were told they started a run: one must be refused.
		e.Refusals[ksDoubleStart]++
	}
	return e
}

// only is e allowing exactly run, not cancelled.
func (e ksExpectation) only(run int) ksExpectation {
	e.Runs, e.MayCancel, e.Rewound = map[int]bool{run: true}, false, false
	return e
}

// ksActual is what the store holds for one instance.
type ksActual struct {
	State   string
	Output  string
	Failure string
	// Run is the run of its latest execution (0: none).
	Run int
	// Overlaps counts executions that a later one started on top of (no
	// terminal event).
	Overlaps int
	// Duplicates counts events or messages recorded twice in one
	// execution.
	Duplicates int
	// KVWrong names the KV steps whose value is not in the store.
	KVWrong []string
}

// ksJudge compares an instance with the model and returns the violations
// found, by category, with a line for each.
func ksJudge(l *ksLife, e ksExpectation, act ksActual) (map[string]int, []string) {
	found := map[string]int{}
	var lines []string
	add := func(cat, format string, args ...any) {
		found[cat]++
		lines = append(lines, fmt.Sprintf("%s [%s, plan %s]: %s: %s", l.Instance, ksRunsString(e), l.Plan, cat, fmt.Sprintf(format, args...)))
	}
	switch act.State {
	case "NotFound":
		if !e.Gone {
			add(ksLost, "not found")
		}
	case "Completed":
		switch {
		case e.Gone:
			add(ksResurrected, "completed run %d", act.Run)
		case !e.Runs[act.Run]:
			add(ksWrongRun, "completed run %d", act.Run)
		case act.Output != e.Output:
			add(ksWrongOutput, "output %q, want %q", act.Output, e.Output)
		case len(act.KVWrong) > 0:
			add(ksKVMismatch, "%s", strings.Join(act.KVWrong, "; "))
		}
	case "Failed":
		switch {
		case e.Gone:
			add(ksResurrected, "failed run %d: %s", act.Run, act.Failure)
		case strings.HasPrefix(act.Failure, "nondeterministic"):
			// A message meant for another run (its ids match this one's)
			// was applied to this run's history.
			add(ksNondeterminism, "run %d: %s", act.Run, act.Failure)
		case strings.Contains(act.Failure, "sub-orchestration") || strings.Contains(act.Failure, "parent canceled"):
			// A child's cancellation (its parent's earlier execution
			// dropped or cancelled it) reached this run: a top-level
			// instance has no parent of its own.
			add(ksStaleChild, "run %d: %s", act.Run, act.Failure)
		case strings.HasPrefix(act.Failure, "canceled:"):
			if !e.MayCancel || !e.Runs[act.Run] {
				add(ksStrayCancel, "run %d: %s", act.Run, act.Failure)
			}
		case strings.Contains(act.Failure, ksFaultMessage):
			add(ksFaultPersisted, "run %d: %s", act.Run, act.Failure)
		default:
			add(ksUnexpectedFail, "run %d: %s", act.Run, act.Failure)
		}
	case "Suspended":
		if resumeRefused(l.Actions) && e.Refusals[ksResumeRefused] == 0 {
			// Left Suspended because every resume was refused (the
			// operator's patience had not run out when the run ended).
			add(ksResumeRefused, "still Suspended, its resumes refused (run %d)", act.Run)
			break
		}
		add(ksStuck, "%s (run %d; last seen %s, custom status at run %d step %d)", act.State, act.Run, l.Last.State, l.Last.Progress.Run, l.Last.Progress.Pos)
	default:
		add(ksStuck, "%s (run %d; last seen %s, custom status at run %d step %d)", act.State, act.Run, l.Last.State, l.Last.Progress.Run, l.Last.Progress.Pos)
	}
	for _, cat := range sortedStrings(e.Refusals) {
		for range e.Refusals[cat] {
			add(cat, "the operator's call was refused (%s)", ksActionsString(l.Actions))
		}
	}
	if act.Overlaps > 0 {
		found[ksOverlap] += act.Overlaps - 1
		add(ksOverlap, "%d executions had another started on top of them", act.Overlaps)
	}
	if act.Duplicates > 0 {
		found[ksDupDelivery] += act.Duplicates - 1
		add(ksDupDelivery, "%d deliveries recorded twice in one execution", act.Duplicates)
	}
	return found, lines
}

// ksRunsString names what the model allows, for problem lines.
func ksRunsString(e ksExpectation) string {
	if e.Gone {
		return "expect gone"
	}
	runs := make([]int, 0, len(e.Runs))
	for r := range e.Runs {
		runs = append(runs, r)
	}
	sort.Ints(runs)
	s := fmt.Sprintf("expect run %v completed", runs)
	if e.MayCancel {
		s += " or cancelled"
	}
	return s
}

// ksActionsString lists the operator's actions, for problem lines.
func ksActionsString(actions []ksAction) string {
	parts := make([]string, 0, len(actions))
	for _, a := range actions {
		s := fmt.Sprintf("%s(r%d, saw %s)", a.Op, a.Run, a.Observed)
		if a.Err != "" {
			s += "=" + a.Err
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// ksRunOf is the run of an execution's history (0: not a kitchen-sink
// start).
func ksRunOf(hist []duroxide.Event) int {
	for _, e := range hist {
		if s, ok := kindValue(e.Kind).(duroxide.OrchestrationStarted); ok {
			var in ksInput
			if err := json.Unmarshal([]byte(s.Input), &in); err == nil {
				return in.Run
			}
			return 0
		}
	}
	return 0
}

// ksHistoryFacts reads what the judge needs from an instance's
// executions: the latest one's run, executions left without a terminal
// event under a later one, and deliveries recorded twice in one
// execution.
func ksHistoryFacts(executions [][]duroxide.Event) (run, overlaps, duplicates int) {
	for x, events := range executions {
		terminal := false
		seen := map[string]int{}
		for _, e := range events {
			switch k := kindValue(e.Kind).(type) {
			case duroxide.OrchestrationCompleted, duroxide.OrchestrationFailed, duroxide.OrchestrationContinuedAsNew:
				terminal = true
			case duroxide.ExternalEvent:
				seen["e/"+k.Name+"/"+k.Data]++
			case duroxide.ExternalEventPersistent:
				seen["q/"+k.Name+"/"+k.Data]++
			}
		}
		if x < len(executions)-1 && !terminal {
			overlaps++
		}
		for _, n := range seen {
			duplicates += n - 1
		}
		if x == len(executions)-1 {
			run = ksRunOf(events)
		}
	}
	return run, overlaps, duplicates
}

// ksPrefix starts the ids of kitchen-sink instances and their children.
const ksPrefix = "chaos-" + kitchenSink + "-"

// ksReport is the kitchen sink's part of the report.
type ksReport struct {
	Instances int `json:"instances"`
	// Plans counts the instances of each operator plan.
	Plans map[string]int `json:"plans"`
	// Actions counts the operator's calls by action, Refused those
	// refused (a refusal the model allows is no violation).
	Actions map[string]int `json:"actions"`
	Refused map[string]int `json:"refused"`
	// MatchedModel counts the instances that ended as the model says.
	MatchedModel int `json:"matched_model"`
	// IntendedDeliveries counts the events and messages the driver sent.
	IntendedDeliveries int `json:"intended_deliveries"`
	// HeartbeatSteps counts the programs' heartbeat steps (children
	// included), HeartbeatResumes the pager attempts that resumed from
	// an earlier attempt's details (kitchensink_heartbeat.go); a resume
	// from wrong details shows as a wrong output.
	HeartbeatSteps   int `json:"heartbeat_steps"`
	HeartbeatResumes int `json:"heartbeat_resumes"`
	// HeartbeatStalls counts the stalling steps' first attempts that
	// stalled, HeartbeatTimeouts those a heartbeat timeout ended (the
	// others' workers were killed under them); a stall nothing ends
	// leaves its instance stuck.
	HeartbeatStalls   int `json:"heartbeat_stalls"`
	HeartbeatTimeouts int `json:"heartbeat_timeouts"`
	// Violations counts the findings by category.
	Violations map[string]int `json:"violations"`
}

// checkKitchenSink judges every kitchen-sink instance against the model:
// outcomes are the top-level instances' states, histories every
// kitchen-sink instance's executions (children included), by id.
func (d *driver) checkKitchenSink(ctx context.Context, r *Report, outcomes map[int]outcome, histories map[string][][]duroxide.Event) ([]string, error) {
	ks := &ksReport{Plans: map[string]int{}, Actions: map[string]int{}, Refused: map[string]int{}, Violations: map[string]int{}}
	r.KitchenSink = ks
	var problems []string
	for _, i := range sortedInts(d.ks) {
		l := d.ks[i]
		ks.Instances++
		ks.Plans[l.Plan]++
		ks.IntendedDeliveries += l.Intents
		ks.HeartbeatSteps += countHeartbeatSteps(l.Steps)
		for _, a := range l.Actions {
			ks.Actions[a.Op]++
			if a.Err != "" {
				ks.Refused[a.Op]++
			}
		}
		o := outcomes[i]
		act := ksActual{State: o.State}
		switch o.State {
		case "Completed":
			act.Output = o.Output
		case "Failed":
			act.Failure = o.Output
		}
		act.Run, act.Overlaps, act.Duplicates = ksHistoryFacts(histories[l.Instance])
		exp := ksExpect(l)
		if o.State == "Completed" && act.Output == exp.Output {
			wrong, err := d.ksKVWrong(ctx, l)
			if err != nil {
				return nil, err
			}
			act.KVWrong = wrong
		}
		r.outcomes++
		if o.State == "Completed" {
			r.Completed++
		}
		found, lines := ksJudge(l, exp, act)
		if len(found) == 0 {
			ks.MatchedModel++
		} else {
			lines = append(lines, ksDiagnosis(l, histories[l.Instance]))
		}
		for cat, n := range found {
			ks.Violations[cat] += n
		}
		problems = append(problems, lines...)
		for _, w := range l.UpdateWrong {
			ks.Violations[ksUpdateWrong]++
			problems = append(problems, fmt.Sprintf("%s [plan %s]: %s: %s", l.Instance, l.Plan, ksUpdateWrong, w))
		}
	}
	resumes, err := countResumes(d.dir)
	if err != nil {
		return nil, err
	}
	ks.HeartbeatResumes = resumes
	if ks.HeartbeatStalls, ks.HeartbeatTimeouts, err = countStalls(d.dir); err != nil {
		return nil, err
	}
	// Children: no execution may be started on top of a live one.
	for _, id := range sortedStrings(histories) {
		if _, _, top := parseInstance(id); top {
			continue
		}
		if _, overlaps, _ := ksHistoryFacts(histories[id]); overlaps > 0 {
			ks.Violations[ksOverlap] += overlaps
			problems = append(problems, fmt.Sprintf("%s: %s: %d executions had another started on top of them", id, ksOverlap, overlaps))
		}
	}
	return problems, nil
}

// ksKVWrong lists the KV steps of l's program whose value is not in the
// store.
func (d *driver) ksKVWrong(ctx context.Context, l *ksLife) ([]string, error) {
	var wrong []string
	for pos, s := range l.Steps {
		if s.Op != opKV {
			continue
		}
		v, found, err := d.client.KVValue(ctx, l.Instance, ksKVKey(pos))
		if err != nil {
			return nil, fmt.Errorf("reading the KV store of %s: %w", l.Instance, err)
		}
		if want := fmt.Sprintf("v%d", s.N); !found || v != want {
			wrong = append(wrong, fmt.Sprintf("%s = %q (found %v), want %q", ksKVKey(pos), v, found, want))
		}
	}
	return wrong, nil
}

func sortedInts[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// ksDiagnosis describes a mismatching instance for whoever reads the
// problems: its program, the operator's actions, and the last events of
// each execution.
func ksDiagnosis(l *ksLife, executions [][]duroxide.Event) string {
	steps := make([]string, len(l.Steps))
	for pos, s := range l.Steps {
		steps[pos] = fmt.Sprintf("%d:%s", pos, s.Op)
		if s.N != 0 {
			steps[pos] += fmt.Sprintf("(%d)", s.N)
		}
	}
	var execs []string
	for x, events := range executions {
		execs = append(execs, fmt.Sprintf("#%d %s", x+1, tail(events, 5)))
	}
	return fmt.Sprintf("    %s: program [%s]; operator: %s; executions: %s", l.Instance, strings.Join(steps, " "), ksActionsString(l.Actions), strings.Join(execs, " "))
}

// resumeRefused reports whether the operator's last resume was refused.
func resumeRefused(actions []ksAction) bool {
	for k := len(actions) - 1; k >= 0; k-- {
		if actions[k].Op == actResume {
			return actions[k].Err != ""
		}
	}
	return false
}
