package main

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/microsoft/durabletask-go/api"
	"github.com/microsoft/durabletask-go/backend"
	"github.com/microsoft/durabletask-go/backend/sqlite"
	"github.com/microsoft/durabletask-go/task"
)

// durableTask is microsoft/durabletask-go on its sqlite backend, set up as
// its README and samples/parallel do (orchestration worker, activity
// worker, task hub worker in one process), with WithMaxParallelism for the
// slot counts (its default is 1 each).
type durableTask struct {
	be     backend.Backend
	worker backend.TaskHubWorker
	client backend.TaskHubClient
	input  fanInput
}

func newDurableTask(ctx context.Context, file string, s setup) (*durableTask, error) {
	r := task.NewTaskRegistry()
	if err := r.AddOrchestratorN("FanoutOrchestration", dtFanout); err != nil {
		return nil, err
	}
	if err := r.AddActivityN("ProcessTask", dtProcessTask); err != nil {
		return nil, err
	}
	log := quietLogger{}
	opts := sqlite.NewSqliteOptions("")
	if file != "" {
		opts = sqlite.NewSqliteOptions(filepath.Join(file, "durabletask.sqlite3"))
	}
	be := sqlite.NewSqliteBackend(opts, log)
	exec := task.NewTaskExecutor(r)
	ow := backend.NewOrchestrationWorker(be, exec, log, backend.WithMaxParallelism(int32(s.orch)))
	aw := backend.NewActivityTaskWorker(be, exec, log, backend.WithMaxParallelism(int32(s.worker)))
	w := backend.NewTaskHubWorker(be, ow, aw, log)
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	return &durableTask{be: be, worker: w, client: backend.NewTaskHubClient(be), input: s.input()}, nil
}

func dtFanout(ctx *task.OrchestrationContext) (any, error) {
	var in fanInput
	if err := ctx.GetInput(&in); err != nil {
		return nil, err
	}
	tasks := make([]task.Task, in.Tasks)
	for i := range tasks {
		tasks[i] = ctx.CallActivity("ProcessTask", task.WithActivityInput(taskInput{Index: i, DelayMS: in.DelayMS, Payload: in.Payload}))
	}
	for _, t := range tasks {
		var out string
		if err := t.Await(&out); err != nil {
			return nil, err
		}
	}
	return in.Tasks, nil
}

func dtProcessTask(ctx task.ActivityContext) (any, error) {
	var in taskInput
	if err := ctx.GetInput(&in); err != nil {
		return nil, err
	}
	return processTask(ctx.Context(), in)
}

func (d *durableTask) Start(ctx context.Context, id string) error {
	_, err := d.client.ScheduleNewOrchestration(ctx, "FanoutOrchestration", api.WithInstanceID(api.InstanceID(id)), api.WithInput(d.input))
	return err
}

func (d *durableTask) Status(ctx context.Context, id string) (done, failed bool, err error) {
	md, err := d.client.FetchOrchestrationMetadata(ctx, api.InstanceID(id))
	if err != nil {
		if errors.Is(err, api.ErrInstanceNotFound) {
			return false, false, nil
		}
		return false, false, err
	}
	return dtDone(md)
}

func dtDone(md *api.OrchestrationMetadata) (done, failed bool, err error) {
	switch md.RuntimeStatus {
	case api.RUNTIME_STATUS_COMPLETED:
		return true, false, nil
	case api.RUNTIME_STATUS_FAILED, api.RUNTIME_STATUS_TERMINATED, api.RUNTIME_STATUS_CANCELED:
		return true, true, nil
	}
	return false, false, nil
}

// Wait uses WaitForOrchestrationCompletion, which polls at 100 ms growing
// ×1.5.
func (d *durableTask) Wait(ctx context.Context, id string) (failed bool, err error) {
	md, err := d.client.WaitForOrchestrationCompletion(ctx, api.InstanceID(id))
	if err != nil {
		return false, err
	}
	_, failed, err = dtDone(md)
	return failed, err
}

func (d *durableTask) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = d.worker.Shutdown(ctx)
}

// quietLogger drops durabletask-go's logs, which would otherwise print a
// line per work item.
type quietLogger struct{}

func (quietLogger) Debug(...any)          {}
func (quietLogger) Debugf(string, ...any) {}
func (quietLogger) Info(...any)           {}
func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Warn(...any)           {}
func (quietLogger) Warnf(string, ...any)  {}
func (quietLogger) Error(...any)          {}
func (quietLogger) Errorf(string, ...any) {}
