package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/duroxide-go/cdb/durable"
)

// The workload: every orchestration's output is a pure function of its
// kind and index, so the driver can compare it with expectedOutput.

// kinds are the orchestration shapes, assigned round-robin by index.
var kinds = []string{"fanout", "timer", "sub", "event", "can", "kv", "session"}

// Orchestration and activity names registered by every worker.
const (
	orchName      = "ChaosOrchestration"
	childName     = "ChaosChild"
	actMul        = "ChaosMul"
	actEcho       = "ChaosEcho"
	actSessionAdd = "ChaosSessionAdd"
	eventName     = "go"
	statusWaiting = "waiting"
	canRounds     = 3
	fanoutWidth   = 4
)

// instanceName is the id of the i-th top-level instance.
func instanceName(i int) string { return fmt.Sprintf("chaos-%s-%d", kinds[i%len(kinds)], i) }

// parseInstance returns the kind and index encoded in an instance id.
func parseInstance(id string) (kind string, i int, ok bool) {
	rest, found := strings.CutPrefix(id, "chaos-")
	if !found {
		return "", 0, false
	}
	k, n, found := strings.Cut(rest, "-")
	if !found {
		return "", 0, false
	}
	i, err := strconv.Atoi(n)
	if err != nil || kinds[i%len(kinds)] != k {
		return "", 0, false
	}
	return k, i, true
}

// eventPayload is the data the driver raises for instance i.
func eventPayload(i int) string { return fmt.Sprintf("ev%d", i) }

// expectedOutput is the output instance i must complete with.
func expectedOutput(i int) string {
	switch kinds[i%len(kinds)] {
	case "fanout":
		sum := 0
		for j := 1; j <= fanoutWidth; j++ {
			sum += i * j
		}
		return "sum=" + strconv.Itoa(sum)
	case "timer":
		return fmt.Sprintf("echo:t%d", i)
	case "sub":
		return fmt.Sprintf("parent(child:%d)", i*7)
	case "event":
		return "got:" + eventPayload(i)
	case "can":
		return fmt.Sprintf("can-done:%d:%d", i, canRounds*i)
	case "kv":
		return fmt.Sprintf("kv:v%d", i)
	case "session":
		return fmt.Sprintf("session:%d", (i+1)+(i+2))
	}
	return "?"
}

// orchInput is the input the driver starts instance i with.
type orchInput struct {
	Kind  string `json:"kind"`
	Index int    `json:"index"`
	// Round and Acc carry continue-as-new state.
	Round int `json:"round,omitempty"`
	Acc   int `json:"acc,omitempty"`
}

// mulInput is the input of actMul.
type mulInput struct {
	A int `json:"a"`
	B int `json:"b"`
}

// activityLog appends one line per activity execution to a per-process
// file, so the driver counts executions and re-executions after the run.
type activityLog struct {
	mu sync.Mutex
	f  *os.File
}

// record appends "<instance> <execution> <activity id> <name>" in one
// write (O_APPEND): a process killed mid-run leaves whole lines only.
func (l *activityLog) record(ctx durable.ActivityContext) error {
	if l == nil {
		return nil
	}
	line := fmt.Sprintf("%s %d %d %s\n", ctx.InstanceID(), ctx.ExecutionID(), ctx.ActivityID(), ctx.ActivityName())
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.f.WriteString(line)
	return err
}

// newRegistry registers the workload's orchestrations and activities.
func newRegistry(log *activityLog) (*durable.Registry, error) {
	reg := durable.NewRegistry()
	errs := []error{
		durable.RegisterOrchestration(reg, orchName, chaosOrchestration),
		durable.RegisterOrchestration(reg, childName, chaosChild),
		durable.RegisterActivity(reg, actMul, func(ctx durable.ActivityContext, in mulInput) (int, error) {
			return in.A * in.B, log.record(ctx)
		}),
		durable.RegisterActivity(reg, actEcho, func(ctx durable.ActivityContext, in string) (string, error) {
			return "echo:" + in, log.record(ctx)
		}),
		durable.RegisterActivity(reg, actSessionAdd, func(ctx durable.ActivityContext, in int) (int, error) {
			return in, log.record(ctx)
		}),
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// chaosOrchestration runs one kind of the workload.
func chaosOrchestration(ctx *durable.OrchestrationContext, in orchInput) (string, error) {
	i := in.Index
	switch in.Kind {
	case "fanout":
		futs := make([]*durable.Future[int], 0, fanoutWidth)
		for j := 1; j <= fanoutWidth; j++ {
			futs = append(futs, durable.ScheduleActivity[int](ctx, actMul, mulInput{A: i, B: j}))
		}
		sum := 0
		for _, r := range durable.Join(ctx, futs...) {
			if r.Err != nil {
				return "", r.Err
			}
			sum += r.Value
		}
		return "sum=" + strconv.Itoa(sum), nil
	case "timer":
		if _, err := ctx.ScheduleTimer(200 * time.Millisecond).Await(); err != nil {
			return "", err
		}
		return durable.ScheduleActivity[string](ctx, actEcho, fmt.Sprintf("t%d", i)).Await()
	case "sub":
		out, err := durable.ScheduleSubOrchestration[string](ctx, childName, i).Await()
		if err != nil {
			return "", err
		}
		return "parent(" + out + ")", nil
	case "event":
		ctx.SetCustomStatus(statusWaiting)
		data, err := ctx.ScheduleWait(eventName).Await()
		if err != nil {
			return "", err
		}
		return "got:" + data, nil
	case "can":
		v, err := durable.ScheduleActivity[int](ctx, actMul, mulInput{A: i, B: 1}).Await()
		if err != nil {
			return "", err
		}
		in.Acc += v
		in.Round++
		if in.Round < canRounds {
			return "", durable.ContinueAsNew(ctx, in)
		}
		return fmt.Sprintf("can-done:%d:%d", i, in.Acc), nil
	case "kv":
		durable.SetKVValue(ctx, "k", fmt.Sprintf("v%d", i))
		if _, err := durable.ScheduleActivity[string](ctx, actEcho, "kv").Await(); err != nil {
			return "", err
		}
		v, found, err := durable.GetKVValue[string](ctx, "k")
		if err != nil || !found {
			return "", fmt.Errorf("kv read back: found=%v err=%v", found, err)
		}
		return "kv:" + v, nil
	case "session":
		session := fmt.Sprintf("s%d", i%5)
		a, err := durable.ScheduleActivityOnSession[int](ctx, actSessionAdd, i+1, session).Await()
		if err != nil {
			return "", err
		}
		b, err := durable.ScheduleActivityOnSession[int](ctx, actSessionAdd, i+2, session).Await()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("session:%d", a+b), nil
	}
	return "", fmt.Errorf("unknown kind %q", in.Kind)
}

// chaosChild is the sub-orchestration of the "sub" kind.
func chaosChild(ctx *durable.OrchestrationContext, i int) (string, error) {
	v, err := durable.ScheduleActivity[int](ctx, actMul, mulInput{A: i, B: 7}).Await()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("child:%d", v), nil
}
