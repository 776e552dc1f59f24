package replayer

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/duroxide-go/cdb/durable"
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

// WriteText writes one line per failure and a summary line.
func (r *Report) WriteText(w io.Writer) error {
	failures := r.Failures()
	for _, f := range failures {
		if _, err := fmt.Fprintln(w, f); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "replayed %d executions: %d ok, %d failed\n", len(r.Results), len(r.Results)-len(failures), len(failures))
	return err
}

// ErrNoRegistry: Replay was given no registry to replay with.
var ErrNoRegistry = errors.New("replayer: no registry: replay needs the orchestration code")

// Replay checks every execution src yields against reg (see
// durable.CheckHistory) and reports each one. The error is for a source
// that could not be read; executions that do not replay are in the report.
func Replay(ctx context.Context, reg *durable.Registry, src Source) (*Report, error) {
	if reg == nil {
		return nil, ErrNoRegistry
	}
	rep := &Report{}
	err := src.Executions(ctx, func(ex Execution) error {
		rep.Results = append(rep.Results, check(reg, ex))
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// check replays one execution.
func check(reg *durable.Registry, ex Execution) Result {
	res := Result{Instance: ex.Instance, ExecutionID: ex.ExecutionID, Orchestration: ex.Orchestration, Version: ex.Version, Status: StatusOK}
	if ex.ReadError != "" {
		res.Status, res.Message = StatusHistoryError, ex.ReadError
		return res
	}
	err := durable.CheckHistory(reg, durable.RecordedExecution{Instance: ex.Instance, ExecutionID: ex.ExecutionID,
		History: ex.Events, KVSnapshot: ex.KVSnapshot})
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
