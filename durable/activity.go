package durable

import (
	"context"
	"log/slog"

	"github.com/duroxide-go/cdb/internal/testhooks"
)

// ActivityFunc is the untyped form of an activity: raw input in, raw
// output or error out. RegisterActivity adapts typed functions to it. A
// returned error fails the activity with its Error() text; a panic does the
// same with the panic's text.
type ActivityFunc func(ctx ActivityContext, input string) (string, error)

// ActivityContext is what an activity receives. It is a context.Context
// that is cancelled when the activity should stop: its orchestration was
// cancelled or finished without it, or its lock was lost. After that the
// activity has Options.ActivityCancellationGracePeriod to return before its
// result is discarded. It also carries the activity's identity and a
// Client over the runtime's store.
type ActivityContext struct {
	context.Context
	info *activityInfo
}

// activityInfo is the identity of one activity execution.
type activityInfo struct {
	instance             string
	executionID          uint64
	orchestrationName    string
	orchestrationVersion string
	activityName         string
	activityID           uint64
	workerID             string
	sessionID            *string
	tag                  *string
	client               *Client
	logger               *slog.Logger
	// describe reads the orchestration's name and version on first use.
	describe func() (name, version string)
	// heartbeat is the attempt's heartbeats (activity_heartbeat.go).
	heartbeat *heartbeatState
}

// InstanceID is the orchestration instance that scheduled the activity.
func (a ActivityContext) InstanceID() string { return a.info.instance }

// ExecutionID is the orchestration execution that scheduled the activity.
func (a ActivityContext) ExecutionID() uint64 { return a.info.executionID }

// OrchestrationName is the scheduling orchestration's name ("unknown" if
// its history could not be read).
func (a ActivityContext) OrchestrationName() string {
	if a.info.describe == nil {
		return a.info.orchestrationName
	}
	name, _ := a.info.describe()
	return name
}

// OrchestrationVersion is the scheduling orchestration's version.
func (a ActivityContext) OrchestrationVersion() string {
	if a.info.describe == nil {
		return a.info.orchestrationVersion
	}
	_, version := a.info.describe()
	return version
}

// ActivityName is the activity's registered name.
func (a ActivityContext) ActivityName() string { return a.info.activityName }

// ActivityID is the id of the ActivityScheduled event.
func (a ActivityContext) ActivityID() uint64 { return a.info.activityID }

// WorkerID identifies the worker slot running the activity.
func (a ActivityContext) WorkerID() string { return a.info.workerID }

// SessionID is the activity's session, if it was scheduled on one.
func (a ActivityContext) SessionID() (string, bool) { return deref(a.info.sessionID) }

// Tag is the activity's routing tag, if it has one.
func (a ActivityContext) Tag() (string, bool) { return deref(a.info.tag) }

// IsCanceled reports whether the activity has been asked to stop.
func (a ActivityContext) IsCanceled() bool { return a.Err() != nil }

// Client returns a Client over the runtime's store, so an activity can
// start, signal or inspect orchestrations (including its own).
func (a ActivityContext) Client() *Client { return a.info.client }

// Logger returns a logger annotated with the activity's identity.
func (a ActivityContext) Logger() *slog.Logger {
	return a.info.logger.With("instance_id", a.info.instance, "execution_id", a.info.executionID,
		"activity_name", a.info.activityName, "activity_id", a.info.activityID)
}

func deref(p *string) (string, bool) {
	if p == nil {
		return "", false
	}
	return *p, true
}

// Unit tests of activity functions build an ActivityContext outside a
// runtime with durabletest.NewActivityContext. The constructor is handed
// over through internal/testhooks, which cannot import this package (it
// imports testhooks), so that this package has no test-only API.
func init() {
	testhooks.NewActivityContext = func(ctx context.Context, instance, activityName string, c any) any {
		client, _ := c.(*Client)
		return detachedActivityContext(ctx, instance, activityName, client)
	}
}

// detachedActivityContext is an ActivityContext with no runtime behind it:
// ctx supplies cancellation, c (may be nil) the client.
func detachedActivityContext(ctx context.Context, instance, activityName string, c *Client) ActivityContext {
	return ActivityContext{Context: ctx, info: &activityInfo{
		instance: instance, executionID: initialExecutionID, orchestrationName: "test", orchestrationVersion: "1.0.0",
		activityName: activityName, activityID: 1, workerID: "test", client: c, logger: slog.Default(),
		heartbeat: newHeartbeatState(nil),
	}}
}
