package main

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/cschleiden/go-workflows/backend"
	"github.com/cschleiden/go-workflows/backend/monoprocess"
	"github.com/cschleiden/go-workflows/backend/sqlite"
	"github.com/cschleiden/go-workflows/client"
	"github.com/cschleiden/go-workflows/core"
	"github.com/cschleiden/go-workflows/worker"
	"github.com/cschleiden/go-workflows/workflow"
)

// goWorkflows is cschleiden/go-workflows on its sqlite backend wrapped in
// its monoprocess backend (as its own bench/ and samples do for a worker in
// the same process: enqueues wake the pollers), worker.DefaultOptions with
// MaxParallelWorkflowTasks/MaxParallelActivityTasks set to the slot counts
// (default 0 = unbounded).
type goWorkflows struct {
	be        backend.Backend
	w         *worker.Worker
	c         *client.Client
	cancel    context.CancelFunc
	input     fanInput
	instances sync.Map // id → *workflow.Instance
}

func newGoWorkflows(ctx context.Context, dir string, s setup) (*goWorkflows, error) {
	opts := sqlite.WithBackendOptions(backend.WithLogger(slog.New(slog.DiscardHandler)))
	var inner backend.Backend
	if dir == "" {
		inner = sqlite.NewInMemoryBackend(opts)
	} else {
		inner = sqlite.NewSqliteBackend(filepath.Join(dir, "go-workflows.sqlite"), opts)
	}
	be := monoprocess.NewMonoprocessBackend(inner)
	wo := worker.DefaultOptions
	wo.MaxParallelWorkflowTasks = s.orch
	wo.MaxParallelActivityTasks = s.worker
	w := worker.New(be, &wo)
	if err := errors.Join(w.RegisterWorkflow(gwFanout), w.RegisterActivity(gwProcessTask)); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	if err := w.Start(wctx); err != nil {
		cancel()
		return nil, err
	}
	return &goWorkflows{be: be, w: w, c: client.New(be), cancel: cancel, input: s.input()}, nil
}

func gwFanout(ctx workflow.Context, in fanInput) (int, error) {
	fs := make([]workflow.Future[string], in.Tasks)
	for i := range fs {
		fs[i] = workflow.ExecuteActivity[string](ctx, workflow.DefaultActivityOptions, gwProcessTask, taskInput{Index: i, DelayMS: in.DelayMS, Payload: in.Payload})
	}
	for _, f := range fs {
		if _, err := f.Get(ctx); err != nil {
			return 0, err
		}
	}
	return in.Tasks, nil
}

func gwProcessTask(ctx context.Context, in taskInput) (string, error) { return processTask(ctx, in) }

func (g *goWorkflows) Start(ctx context.Context, id string) error {
	inst, err := g.c.CreateWorkflowInstance(ctx, client.WorkflowInstanceOptions{InstanceID: id}, gwFanout, g.input)
	if err != nil {
		return err
	}
	g.instances.Store(id, inst)
	return nil
}

func (g *goWorkflows) instance(id string) *workflow.Instance {
	v, _ := g.instances.Load(id)
	return v.(*workflow.Instance)
}

func (g *goWorkflows) Status(ctx context.Context, id string) (done, failed bool, err error) {
	st, err := g.c.GetWorkflowInstanceState(ctx, g.instance(id))
	if err != nil || st != core.WorkflowInstanceStateFinished {
		return false, false, err
	}
	return true, false, nil
}

// Failed reads the finished instance's result to tell failure from success
// (stress.ResultChecker).
func (g *goWorkflows) Failed(ctx context.Context, id string) bool {
	defer g.instances.Delete(id)
	_, err := client.GetWorkflowResult[int](ctx, g.c, g.instance(id), time.Minute)
	return err != nil
}

// Wait uses WaitForWorkflowInstance, which polls at 1 ms growing ×1.5 up to
// 1 s.
func (g *goWorkflows) Wait(ctx context.Context, id string) (failed bool, err error) {
	if err := g.c.WaitForWorkflowInstance(ctx, g.instance(id), 5*time.Minute); err != nil {
		return false, err
	}
	return false, nil
}

func (g *goWorkflows) Close() {
	g.cancel()
	_ = g.w.WaitForCompletion()
	_ = g.be.Close()
}
