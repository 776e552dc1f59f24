package replayer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// Status is the outcome of checking one execution.
type Status string

// The outcomes.
const (
	// StatusOK: the code replays the history.
	StatusOK Status = "ok"
	// StatusNondeterministic: the code does not replay it; Message is the
	// runtime's text naming the mismatching call and event.
	StatusNondeterministic Status = "nondeterministic"
	// StatusUnregistered: the registry has no orchestration of the
	// recorded name and version.
	StatusUnregistered Status = "unregistered"
	// StatusHistoryError: the history could not be read or is corrupt.
	StatusHistoryError Status = "history_error"
	// StatusPanicked: the code panics while replaying a history that did
	// not end in a failure; the runtime would fail the instance.
	StatusPanicked Status = "panicked"
)

// Result is one execution's outcome.
type Result struct {
	Instance      string
	ExecutionID   uint64
	Orchestration string
	Version       string
	Status        Status
	Message       string
	// OldPatches are the change ids whose old branch the execution takes
	// (ctx.Patched answered false; durable.OldPatchBranches).
	OldPatches []string
	// Ended says the history ends the execution (completed, failed or
	// continued as new): the runtime never replays it again, so its old
	// branches need no code.
	Ended bool
}

// String renders the result as one report line.
func (r Result) String() string {
	s := fmt.Sprintf("%s: instance %q execution %d (%s@%s)", r.Status, r.Instance, r.ExecutionID, r.Orchestration, r.Version)
	if r.Message != "" {
		s += ": " + r.Message
	}
	return s
}

// Report holds every checked execution's result, in source order.
type Report struct {
	Results []Result
}

// OK reports whether every execution replays.
func (r *Report) OK() bool { return len(r.Failures()) == 0 }

// Failures returns the results that are not StatusOK.
func (r *Report) Failures() []Result {
	var out []Result
	for _, res := range r.Results {
		if res.Status != StatusOK {
			out = append(out, res)
		}
	}
	return out
}

// OldPatchBranches returns the executions that still need the old branch
// of the patch changeID: they have not ended and their replay took it.
// Until it is empty, the code must keep the old branch (ctx.Patched);
// once it is, over every running instance, ctx.DeprecatePatch can
// replace the call.
func (r *Report) OldPatchBranches(changeID string) []Result {
	var out []Result
	for _, res := range r.Results {
		if !res.Ended && slices.Contains(res.OldPatches, changeID) {
			out = append(out, res)
		}
	}
	return out
}

// WriteText writes one line per failure, one per execution that still
// needs an old patch branch, and a summary line.
func (r *Report) WriteText(w io.Writer) error {
	failures := r.Failures()
	for _, f := range failures {
		if _, err := fmt.Fprintln(w, f); err != nil {
			return err
		}
	}
	old := 0
	for _, res := range r.Results {
		if res.Ended || len(res.OldPatches) == 0 {
			continue
		}
		old++
		if _, err := fmt.Fprintf(w, "old patch branch: instance %q execution %d (%s@%s) takes the old branch of %s\n",
			res.Instance, res.ExecutionID, res.Orchestration, res.Version, strings.Join(res.OldPatches, ", ")); err != nil {
			return err
		}
	}
	summary := fmt.Sprintf("replayed %d executions: %d ok, %d failed", len(r.Results), len(r.Results)-len(failures), len(failures))
	if old > 0 {
		summary += fmt.Sprintf(", %d running on an old patch branch", old)
	}
	_, err := fmt.Fprintln(w, summary)
	return err
}

// ErrNoRegistry: Replay was given no registry to replay with.
var ErrNoRegistry = errors.New("replayer: no registry: replay needs the orchestration code")

// Options are Replay's optional settings.
type Options struct {
	// HistoryLimits are the runtime's Options.HistoryLimits, which
	// ctx.ContinueAsNewSuggested answers against (zero: the defaults).
	// Code that acts on the suggestion replays only with the limits its
	// runtime had.
	HistoryLimits durable.HistoryLimits
}

// Replay checks every execution src yields against reg (see
// durable.CheckHistory) and reports each one. The error is for a source
// that could not be read; executions that do not replay are in the report.
// It takes at most one Options (it panics on more, as durable's calls do).
func Replay(ctx context.Context, reg *durable.Registry, src Source, opts ...Options) (*Report, error) {
	if reg == nil {
		return nil, ErrNoRegistry
	}
	o := oneOptions("Replay", opts)
	rep := &Report{}
	err := src.Executions(ctx, func(ex Execution) error {
		rep.Results = append(rep.Results, check(reg, ex, o))
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// oneOptions returns the options of a call that takes at most one.
func oneOptions(call string, opts []Options) Options {
	switch len(opts) {
	case 0:
		return Options{}
	case 1:
		return opts[0]
	}
	panic(fmt.Sprintf("replayer: %s takes at most one Options, got %d", call, len(opts)))
}

// check replays one execution.
func check(reg *durable.Registry, ex Execution, o Options) Result {
	res := Result{Instance: ex.Instance, ExecutionID: ex.ExecutionID, Orchestration: ex.Orchestration, Version: ex.Version, Status: StatusOK}
	if ex.ReadError != "" {
		res.Status, res.Message = StatusHistoryError, ex.ReadError
		return res
	}
	res.Ended = endsExecution(ex.Events)
	old, err := durable.OldPatchBranches(reg, durable.RecordedExecution{Instance: ex.Instance, ExecutionID: ex.ExecutionID,
		History: ex.Events, KVSnapshot: ex.KVSnapshot, HistoryLimits: o.HistoryLimits})
	res.OldPatches = old
	var re *durable.ReplayError
	if !errors.As(err, &re) {
		return res
	}
	res.Message = re.Message
	if re.Orchestration != "" {
		res.Orchestration, res.Version = re.Orchestration, re.Version
	}
	switch {
	case errors.Is(err, durable.ErrNondeterministic):
		res.Status = StatusNondeterministic
	case errors.Is(err, durable.ErrUnregisteredOrchestration):
		res.Status = StatusUnregistered
	case errors.Is(err, durable.ErrReplayPanicked):
		res.Status = StatusPanicked
	default:
		res.Status = StatusHistoryError
	}
	return res
}

// endsExecution reports whether events hold the execution's terminal event.
func endsExecution(events []duroxide.Event) bool {
	for _, ev := range events {
		switch ev.Kind.(type) {
		case duroxide.OrchestrationCompleted, duroxide.OrchestrationFailed, duroxide.OrchestrationContinuedAsNew:
			return true
		}
	}
	return false
}
