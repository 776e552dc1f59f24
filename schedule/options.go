package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors of the schedule client. Each is matched with errors.Is.
var (
	// ErrExists: Create named a schedule id already in use.
	ErrExists = errors.New("schedule: schedule exists")
	// ErrNotFound: no schedule has the id.
	ErrNotFound = errors.New("schedule: schedule not found")
	// ErrInvalidOptions: an Options, Action or request field is malformed;
	// the message says which. A malformed Spec is ErrInvalidSpec.
	ErrInvalidOptions = errors.New("schedule: invalid options")
)

// Overlap says what a fire does while a run the schedule started earlier
// is still running.
type Overlap string

// The overlap policies. The zero value is OverlapSkip.
const (
	// OverlapSkip drops the fire (recorded as skipped).
	OverlapSkip Overlap = "skip"
	// OverlapBufferOne keeps the fire and starts it when the running run
	// ends; fires beyond the one buffered are skipped.
	OverlapBufferOne Overlap = "buffer_one"
	// OverlapBufferAll keeps every fire and starts them one after
	// another, each when the previous run ends.
	OverlapBufferAll Overlap = "buffer_all"
	// OverlapCancelOther cancels the running runs, then starts the fire.
	OverlapCancelOther Overlap = "cancel_other"
	// OverlapAllowAll starts the fire whatever runs.
	OverlapAllowAll Overlap = "allow_all"
)

func (o Overlap) orDefault() Overlap {
	if o == "" {
		return OverlapSkip
	}
	return o
}

func (o Overlap) validate() error {
	switch o.orDefault() {
	case OverlapSkip, OverlapBufferOne, OverlapBufferAll, OverlapCancelOther, OverlapAllowAll:
		return nil
	}
	return fmt.Errorf("%w: overlap policy %q", ErrInvalidOptions, string(o))
}

// DefaultCatchupWindow is the catch-up window of Options whose
// CatchupWindow is 0.
const DefaultCatchupWindow = time.Minute

// Action is the orchestration a fire starts.
type Action struct {
	// Orchestration and Version name the orchestration (Version "" is
	// the registry's policy).
	Orchestration string `json:"orchestration"`
	Version       string `json:"version,omitempty"`
	// Input is the run's input as its encoded text (durable.Encode; a
	// string travels as itself).
	Input string `json:"input,omitempty"`
	// IDPrefix starts each run's instance id, "<IDPrefix>@<nominal fire
	// time, RFC 3339 UTC>"; "" is the schedule's id.
	IDPrefix string `json:"id_prefix,omitempty"`
}

// Options configure a schedule.
type Options struct {
	// Spec says when the schedule fires.
	Spec Spec `json:"spec"`
	// Action is what each fire starts.
	Action Action `json:"action"`
	// Overlap is the overlap policy ("" = OverlapSkip).
	Overlap Overlap `json:"overlap,omitempty"`
	// CatchupWindow bounds how late a fire may start: a fire found more
	// than this past its time (every process was down) is recorded as
	// missed and not run. 0 = DefaultCatchupWindow.
	CatchupWindow time.Duration `json:"catchup_window,omitempty"`
	// Paused creates the schedule paused.
	Paused bool `json:"paused,omitempty"`
	// Note is free text shown by Describe (the last pause or unpause
	// note once there is one).
	Note string `json:"note,omitempty"`
}

func (o Options) validate() error {
	if err := o.Spec.Validate(); err != nil {
		return err
	}
	if o.Action.Orchestration == "" {
		return fmt.Errorf("%w: Action.Orchestration is empty", ErrInvalidOptions)
	}
	if strings.Contains(o.Action.IDPrefix, "@") {
		return fmt.Errorf("%w: Action.IDPrefix %q holds '@', which separates the fire time", ErrInvalidOptions, o.Action.IDPrefix)
	}
	if o.CatchupWindow < 0 {
		return fmt.Errorf("%w: CatchupWindow %v is negative", ErrInvalidOptions, o.CatchupWindow)
	}
	return o.Overlap.validate()
}

func (o Options) catchupWindow() time.Duration {
	if o.CatchupWindow == 0 {
		return DefaultCatchupWindow
	}
	return o.CatchupWindow
}

func validateID(id string) error {
	if id == "" || strings.Contains(id, "@") {
		return fmt.Errorf("%w: schedule id %q must be non-empty and hold no '@'", ErrInvalidOptions, id)
	}
	return nil
}
