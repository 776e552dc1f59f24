package schedule

import "time"

// The schedule's names in the store.
const (
	// OrchestrationName is the orchestration that runs every schedule.
	OrchestrationName = "__duroxide_schedule"
	// InstancePrefix starts a schedule's instance id: "schedule:<id>".
	InstancePrefix = "schedule:"
	// runsActivity reads which runs are still running and cancels runs.
	runsActivity = "__duroxide_schedule:runs"
	// controlQueue carries the client's requests (persistent queue, so a
	// request sent while the schedule sleeps waits for it).
	controlQueue = "__duroxide_schedule:control"
	// stateKey is the KV key holding the schedule's published state.
	stateKey = "__duroxide_schedule:state"
	// replyKeyPrefix + request id is the KV key of a request's answer.
	replyKeyPrefix = "__duroxide_schedule:reply:"
)

// Bounds of the state a schedule keeps.
const (
	maxRecent  = 20
	maxReplies = 16
	// maxBuffered bounds OverlapBufferAll's backlog; fires past it are
	// skipped.
	maxBuffered = 100
	// maxRunning bounds the runs a schedule watches (OverlapAllowAll may
	// start many); past it the oldest are forgotten, so cancel_other
	// and the overlap check no longer see them.
	maxRunning = 100
	// stepsPerExecution is how many loop steps an execution runs before
	// it continues as new, bounding its history.
	stepsPerExecution = 64
	// runPollInterval is how often a schedule with buffered fires looks
	// whether the running run has ended.
	runPollInterval = time.Second
	// startGrace is how long a run just started may be not found (its
	// start on its way) and still count as running.
	startGrace = time.Minute
)

func instanceID(id string) string { return InstancePrefix + id }

// ActionKind says what a schedule did.
type ActionKind string

// The action kinds Describe reports.
const (
	// ActionStarted: a run was started.
	ActionStarted ActionKind = "started"
	// ActionSkipped: a fire was dropped (overlap policy).
	ActionSkipped ActionKind = "skipped"
	// ActionBuffered: a fire waits for the running run (overlap policy).
	ActionBuffered ActionKind = "buffered"
	// ActionCancelled: a running run was cancelled (OverlapCancelOther).
	ActionCancelled ActionKind = "cancelled"
	// ActionMissed: fires older than the catch-up window were not run.
	ActionMissed ActionKind = "missed"
)

// Record is one thing a schedule did.
type Record struct {
	Kind ActionKind `json:"kind"`
	// Nominal is the fire time concerned (for ActionMissed the first
	// missed one).
	Nominal time.Time `json:"nominal"`
	// At is when the schedule acted.
	At time.Time `json:"at"`
	// RunID is the run started or cancelled.
	RunID string `json:"run_id,omitempty"`
	// Reason says why: "scheduled", "trigger", "backfill", "overlap",
	// "catch-up window".
	Reason string `json:"reason,omitempty"`
}

// state is the schedule orchestration's input and published state.
type state struct {
	ID      string  `json:"id"`
	Options Options `json:"options"`
	// Last is the latest nominal fire time handled (started, skipped,
	// buffered or missed); fires after it are still to come.
	Last time.Time `json:"last"`
	// Buffered are fires waiting for the running run, oldest first.
	Buffered []time.Time `json:"buffered,omitempty"`
	// Running are the runs started and not yet seen ended.
	Running []string `json:"running,omitempty"`
	// StartedAt is when each of Running was started.
	StartedAt map[string]time.Time `json:"started_at,omitempty"`
	Recent    []Record             `json:"recent,omitempty"`
	Started   uint64               `json:"started"`
	Replies   []string             `json:"replies,omitempty"`
	Updated   time.Time            `json:"updated"`
}

func (s *state) prefix() string {
	if s.Options.Action.IDPrefix != "" {
		return s.Options.Action.IDPrefix
	}
	return s.ID
}

func (s *state) record(r Record) {
	s.Recent = append(s.Recent, r)
	if n := len(s.Recent) - maxRecent; n > 0 {
		s.Recent = append([]Record(nil), s.Recent[n:]...)
	}
}

// request is one control message of the client.
type request struct {
	ID      string    `json:"id"`
	Op      string    `json:"op"`
	Options *Options  `json:"options,omitempty"`
	Note    string    `json:"note,omitempty"`
	Overlap Overlap   `json:"overlap,omitempty"`
	From    time.Time `json:"from,omitzero"`
	To      time.Time `json:"to,omitzero"`
}

// The request ops.
const (
	opUpdate   = "update"
	opPause    = "pause"
	opUnpause  = "unpause"
	opTrigger  = "trigger"
	opBackfill = "backfill"
)

// reply is a request's answer.
type reply struct {
	Error string `json:"error,omitempty"`
}

// runsQuery is the runs activity's input; it returns the ids of Check
// still running, after cancelling Cancel.
type runsQuery struct {
	Check []string `json:"check,omitempty"`
	// Settled are the runs of Check started long enough ago that, not
	// found, they were deleted rather than still on their way.
	Settled []string `json:"settled,omitempty"`
	Cancel  []string `json:"cancel,omitempty"`
	Reason  string   `json:"reason,omitempty"`
}
