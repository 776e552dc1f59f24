package ops

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// Detail is everything known about one instance.
type Detail struct {
	Summary
	// State is the client's view of the latest execution: Running,
	// Completed, Failed, Blocked, Suspended, NotFound.
	State string `json:"state"`
	// Output is a completed instance's output.
	Output string `json:"output,omitempty"`
	// Failure is a failed instance's failure text.
	Failure string `json:"failure,omitempty"`
	// BlockedReason says why a Blocked instance is held back.
	BlockedReason string `json:"blocked_reason,omitempty"`
	// SuspendedReason is the reason a Suspended instance was suspended
	// with.
	SuspendedReason string `json:"suspended_reason,omitempty"`
	// Waiting says why a started instance has not run yet (State
	// Pending), e.g. that no runtime has its orchestration registered, or
	// why a running one does not progress (an activity no runtime has
	// registered).
	Waiting string `json:"waiting,omitempty"`
	// CustomStatus is the latest custom status; nil when none.
	CustomStatus *string `json:"custom_status"`
	// KV is the instance's key-value store, sorted by key.
	KV []KeyValue `json:"kv"`
	// Updates are the updates the instance keeps records of (they are
	// also in KV), sorted by id.
	Updates []durable.UpdateInfo `json:"updates,omitempty"`
	// Executions are the instance's executions, oldest first.
	Executions []Execution `json:"executions"`
	// Children are the ids of the instance's descendants.
	Children []string `json:"children,omitempty"`
	// Pending are the requests made of the instance (cancel, suspend,
	// rewind, ...) that no runtime has taken yet, oldest first.
	Pending []Pending `json:"pending,omitempty"`
	// Heartbeats are the last heartbeats of the instance's outstanding
	// activities (durable.ActivityHeartbeat), by execution and activity id.
	Heartbeats []Heartbeat `json:"heartbeats,omitempty"`
}

// Heartbeat is an outstanding activity's last heartbeat.
type Heartbeat struct {
	ExecutionID uint64    `json:"execution_id"`
	ActivityID  uint64    `json:"activity_id"`
	Name        string    `json:"name"`
	Details     string    `json:"details"`
	At          time.Time `json:"at"`
}

// Pending is one request a runtime has not taken yet
// (durable.PendingRequest).
type Pending struct {
	Kind   string `json:"kind"`
	Reason string `json:"reason,omitempty"`
}

// String is "kind" or "kind: reason".
func (p Pending) String() string {
	if p.Reason == "" {
		return p.Kind
	}
	return p.Kind + ": " + p.Reason
}

// KeyValue is one KV entry.
type KeyValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Execution is one execution of an instance and its history.
type Execution struct {
	ID       uint64  `json:"id"`
	Status   string  `json:"status"`
	Timeline []Entry `json:"timeline"`
}

// Terminal reports whether the instance has completed or failed.
func (d *Detail) Terminal() bool { return d.State == "Completed" || d.State == "Failed" }

// Poisoned reports whether the failed instance's latest execution
// records a poison failure (a message that exceeded its attempts): what
// Redrive applies to.
func (d *Detail) Poisoned() bool {
	if d.State != "Failed" || len(d.Executions) == 0 {
		return false
	}
	for _, e := range d.Executions[len(d.Executions)-1].Timeline {
		if e.Failed && strings.HasPrefix(e.Detail, poisonPrefix) {
			return true
		}
	}
	return false
}

// Instance reads instance's status, custom status, KV, executions with
// their timelines, and descendants, at low priority (an operator's read:
// duroxide.LowPriorityUnlessSet) unless ctx says otherwise.
func (s *Service) Instance(ctx context.Context, instance string) (*Detail, error) {
	ctx = duroxide.LowPriorityUnlessSet(ctx)
	info, err := s.c.InstanceInfo(ctx, instance)
	if isNotFound(err) {
		return s.pending(ctx, instance, err)
	}
	if err != nil {
		return nil, err
	}
	st, err := s.c.Status(ctx, instance)
	if err != nil {
		return nil, err
	}
	d := &Detail{Summary: summarize(info, st.State == durable.StateBlocked)}
	if st.State == durable.StateSuspended {
		d.Summary.State = duroxide.InstanceSuspended
	}
	d.State, d.Output, d.Failure, d.BlockedReason, d.CustomStatus = st.State.String(), st.Output, st.FailureMessage(), st.BlockedReason, st.CustomStatus
	d.SuspendedReason, d.Waiting = st.SuspendedReason, st.Waiting
	if err := s.readPending(ctx, d); err != nil {
		return nil, err
	}
	if err := s.readHeartbeats(ctx, d); err != nil {
		return nil, err
	}
	if err := s.readKV(ctx, d); err != nil {
		return nil, err
	}
	if len(d.KV) > 0 {
		// Update records live in the KV store; none without it.
		if d.Updates, err = s.c.Updates(ctx, instance); err != nil && !isNotFound(err) {
			return nil, err
		}
	}
	if err := s.readExecutions(ctx, d); err != nil {
		return nil, err
	}
	tree, err := s.c.InstanceTree(ctx, instance)
	if err != nil {
		return nil, err
	}
	for _, id := range tree.AllIDs {
		if id != instance {
			d.Children = append(d.Children, id)
		}
	}
	return d, nil
}

// StatePending is the State of an instance whose start is queued but has
// not run yet.
const StatePending = "Pending"

// pending describes an instance that has no stored execution yet: its
// start is queued (Waiting may say why it has not run), or notFound.
func (s *Service) pending(ctx context.Context, instance string, notFound error) (*Detail, error) {
	st, err := s.c.Status(ctx, instance)
	if err != nil {
		return nil, err
	}
	if st.State != durable.StateNotFound || st.Waiting == "" {
		return nil, notFound
	}
	return &Detail{Summary: Summary{ID: instance, State: "pending", Status: StatePending}, State: StatePending, Waiting: st.Waiting}, nil
}

func (s *Service) readPending(ctx context.Context, d *Detail) error {
	reqs, err := s.c.PendingRequests(ctx, d.ID)
	if err != nil {
		return err
	}
	for _, r := range reqs {
		d.Pending = append(d.Pending, Pending{Kind: r.Kind, Reason: r.Reason})
	}
	return nil
}

func (s *Service) readHeartbeats(ctx context.Context, d *Detail) error {
	hs, err := s.c.ActivityHeartbeats(ctx, d.ID)
	if err != nil {
		return err
	}
	for _, h := range hs {
		d.Heartbeats = append(d.Heartbeats, Heartbeat{ExecutionID: h.ExecutionID, ActivityID: h.ActivityID, Name: h.Name, Details: h.Details, At: h.At})
	}
	return nil
}

func (s *Service) readKV(ctx context.Context, d *Detail) error {
	kv, err := s.c.KVValues(ctx, d.ID)
	if err != nil && !isNotFound(err) { // an empty store reads as not found
		return err
	}
	for k, v := range kv {
		d.KV = append(d.KV, KeyValue{k, v})
	}
	slices.SortFunc(d.KV, func(a, b KeyValue) int {
		if a.Key < b.Key {
			return -1
		}
		if a.Key > b.Key {
			return 1
		}
		return 0
	})
	return nil
}

func (s *Service) readExecutions(ctx context.Context, d *Detail) error {
	ids, err := s.c.ListExecutions(ctx, d.ID)
	if err != nil {
		return err
	}
	for _, id := range ids {
		hist, err := s.c.ExecutionHistory(ctx, d.ID, id)
		if err != nil {
			return err
		}
		ex := Execution{ID: id, Status: executionStatus(hist), Timeline: Timeline(d.ID, hist)}
		d.Executions = append(d.Executions, ex)
	}
	return nil
}

// executionStatus is the status an execution's last event gives it.
func executionStatus(hist []duroxide.Event) string {
	for i := len(hist) - 1; i >= 0; i-- {
		switch hist[i].Kind.(type) {
		case duroxide.OrchestrationCompleted:
			return duroxide.StatusCompleted
		case duroxide.OrchestrationFailed:
			return duroxide.StatusFailed
		case duroxide.OrchestrationContinuedAsNew:
			return duroxide.StatusContinuedAsNew
		}
	}
	return duroxide.StatusRunning
}

func isNotFound(err error) bool { return errors.Is(err, durable.ErrInstanceNotFound) }
