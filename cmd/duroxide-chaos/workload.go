package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/schedule"
)

// The workload: every orchestration's output is a pure function of its
// kind and index, so the driver can compare it with expectedOutput.

// kinds are the orchestration shapes, assigned round-robin by index:
//
//   - fanout: four activities joined and summed;
//   - timer: a durable timer of 0.5 to 2 s (kills land while it runs),
//     then an activity;
//   - sub: a sub-orchestration;
//   - event: waits for an event the driver raises, then for the end marker
//     on its queue (so a duplicated raise lands in history before the
//     instance completes);
//   - can: three executions chained by continue-as-new, one activity each;
//   - kv: a KV value set and read back;
//   - session: two activities on a session;
//   - slow: activities that run longer than the worker lock's renewal
//     interval, so their locks are renewed (and renewals meet faults);
//   - inbox: dequeues the messages the driver enqueues until the end
//     marker; its output lists them in order of arrival;
//   - canloop: continue-as-new canLoopRounds times (an activity every
//     tenth round) while the driver enqueues messages, which are carried
//     from execution to execution; the last one dequeues them;
//   - large: a fan-out wider than one transactional batch (a large turn).
var kinds = []string{"fanout", "timer", "sub", "event", "can", "kv", "session", "slow", "inbox", "canloop", "large"}

// allKinds are the kinds -kinds accepts: the default mix and those that
// run only when named: the kitchen sink (kitchensink.go), the schedule
// kind (schedules.go) and bigpayload (bigpayload.go, with -large-payloads).
var allKinds = append(append([]string{}, kinds...), kitchenSink, scheduleKind, bigPayloadKind)

// Orchestration and activity names registered by every worker.
const (
	orchName      = "ChaosOrchestration"
	childName     = "ChaosChild"
	actMul        = "ChaosMul"
	actEcho       = "ChaosEcho"
	actSessionAdd = "ChaosSessionAdd"
	actSlow       = "ChaosSlow"
	eventName     = "go"
	queueName     = "inbox"
	endMarker     = "end"
	statusWaiting = "waiting"
	canRounds     = 3
	fanoutWidth   = 4
	slowCount     = 2
	// slowActivity outlasts two renewal intervals of workerLockTimeout.
	slowActivity   = 2500 * time.Millisecond
	inboxMessages  = 4
	canLoopRounds  = 40
	canLoopEvery   = 10
	canLoopMessage = 3
	largeWidth     = 60
)

// instanceName is the id of the i-th top-level instance.
func instanceName(i int) string { return fmt.Sprintf("chaos-%s-%d", kindOf(i), i) }

// mix is the kinds this run assigns round-robin: all of them unless
// -kinds names some (set once by the driver before anything starts).
var mix = kinds

// kindOf is the kind of the i-th top-level instance.
func kindOf(i int) string { return mix[i%len(mix)] }

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
	if err != nil || kindOf(i) != k {
		return "", 0, false
	}
	return k, i, true
}

// eventPayload is the data the driver raises for instance i.
func eventPayload(i int) string { return fmt.Sprintf("ev%d", i) }

// messagePayload is the k-th message the driver enqueues for instance i:
// unique over the run, so a delivery is attributed to one intended send.
func messagePayload(i, k int) string { return fmt.Sprintf("m%d.%d", i, k) }

// messageCount is how many messages (end marker excluded) the driver
// enqueues for instance i.
func messageCount(i int) int {
	switch kindOf(i) {
	case "inbox":
		return inboxMessages
	case "canloop":
		return canLoopMessage
	}
	return 0
}

// messagesOf lists the messages of instance i in the order they are sent.
func messagesOf(i int) []string {
	out := make([]string, messageCount(i))
	for k := range out {
		out[k] = messagePayload(i, k)
	}
	return out
}

// timerDelay is the timer of the timer kind's instance i.
func timerDelay(i int) time.Duration {
	return 500*time.Millisecond + time.Duration(i%4)*500*time.Millisecond
}

// expectedOutput is the output instance i must complete with.
func expectedOutput(i int) string {
	switch kindOf(i) {
	case "fanout":
		return "sum=" + strconv.Itoa(i*fanoutWidth*(fanoutWidth+1)/2)
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
	case "slow":
		return fmt.Sprintf("slow:%d", slowCount*i)
	case "inbox":
		return "inbox:" + strings.Join(messagesOf(i), ",")
	case "canloop":
		return fmt.Sprintf("canloop:%d:%d:%s", canLoopRounds, i*(canLoopRounds/canLoopEvery), strings.Join(messagesOf(i), ","))
	case "large":
		return "large=" + strconv.Itoa(i*largeWidth*(largeWidth+1)/2)
	case scheduleKind:
		return "schedule:" + firedPayload
	case bigPayloadKind:
		return bigExpected(i)
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
	// Blob and Sums carry the bigpayload kind's continue-as-new state.
	Blob string `json:"blob,omitempty"`
	Sums string `json:"sums,omitempty"`
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

// newRegistry registers the workload's orchestrations and activities;
// dir is the run's directory, where the kitchen sink's planted faults are.
func newRegistry(log *activityLog, dir string) (*durable.Registry, error) {
	reg := durable.NewRegistry()
	errs := []error{
		durable.RegisterOrchestration(reg, orchName, chaosOrchestration),
		schedule.Register(reg),
		durable.RegisterOrchestration(reg, childName, chaosChild),
		durable.RegisterOrchestration(reg, ksOrchName, ksOrchestration),
		durable.RegisterOrchestration(reg, ksChildName, ksChild),
		durable.RegisterActivity(reg, actFlaky, flaky(dir)),
		durable.RegisterActivity(reg, actPager, pager(log, dir)),
		reg.SetActivityPolicy(actPager, durable.ActivityPolicy{HeartbeatTimeout: pagerHeartbeatTimeout}),
		durable.RegisterActivity(reg, actMul, func(ctx durable.ActivityContext, in mulInput) (int, error) {
			return in.A * in.B, log.record(ctx)
		}),
		durable.RegisterActivity(reg, actEcho, func(ctx durable.ActivityContext, in string) (string, error) {
			return "echo:" + in, log.record(ctx)
		}),
		durable.RegisterActivity(reg, actSessionAdd, func(ctx durable.ActivityContext, in int) (int, error) {
			return in, log.record(ctx)
		}),
		durable.RegisterActivity(reg, actSlow, func(ctx durable.ActivityContext, in int) (int, error) {
			// Longer than the lock's renewal interval: the runtime renews
			// the lock while it runs. A cancelled activity returns early
			// (its result is then discarded by the runtime).
			t := time.NewTimer(slowActivity)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-t.C:
			}
			return in, log.record(ctx)
		}),
	}
	errs = append(errs, registerBigPayload(reg, log)...)
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
	case scheduleKind:
		return scheduleOwner(ctx)
	case "fanout":
		futs := make([]*durable.Future[int], 0, fanoutWidth)
		for j := 1; j <= fanoutWidth; j++ {
			futs = append(futs, durable.CallActivity[int](ctx, actMul, mulInput{A: i, B: j}))
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
		if _, err := durable.NewTimer(ctx, timerDelay(i)).Await(); err != nil {
			return "", err
		}
		return durable.CallActivity[string](ctx, actEcho, fmt.Sprintf("t%d", i)).Await()
	case "sub":
		out, err := durable.CallSubOrchestration[string](ctx, childName, i).Await()
		if err != nil {
			return "", err
		}
		return "parent(" + out + ")", nil
	case "event":
		ctx.SetCustomStatus(statusWaiting)
		data, err := durable.WaitEvent[string](ctx, eventName).Await()
		if err != nil {
			return "", err
		}
		// The driver enqueues the end marker once its raise succeeded:
		// a duplicate of the raise is in history before it.
		if _, err := receiveUntilEnd(ctx); err != nil {
			return "", err
		}
		return "got:" + data, nil
	case "can":
		v, err := durable.CallActivity[int](ctx, actMul, mulInput{A: i, B: 1}).Await()
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
		if _, err := durable.CallActivity[string](ctx, actEcho, "kv").Await(); err != nil {
			return "", err
		}
		v, found, err := durable.KVValue[string](ctx, "k")
		if err != nil || !found {
			return "", fmt.Errorf("kv read back: found=%v err=%v", found, err)
		}
		return "kv:" + v, nil
	case "slow":
		futs := make([]*durable.Future[int], 0, slowCount)
		for range slowCount {
			futs = append(futs, durable.CallActivity[int](ctx, actSlow, i))
		}
		sum := 0
		for _, r := range durable.Join(ctx, futs...) {
			if r.Err != nil {
				return "", r.Err
			}
			sum += r.Value
		}
		return fmt.Sprintf("slow:%d", sum), nil
	case "inbox":
		got, err := receiveUntilEnd(ctx)
		if err != nil {
			return "", err
		}
		return "inbox:" + strings.Join(got, ","), nil
	case "canloop":
		return canLoop(ctx, in)
	case bigPayloadKind:
		return bigPayload(ctx, in)
	case "large":
		futs := make([]*durable.Future[int], 0, largeWidth)
		for j := 1; j <= largeWidth; j++ {
			futs = append(futs, durable.CallActivity[int](ctx, actMul, mulInput{A: i, B: j}))
		}
		sum := 0
		for _, r := range durable.Join(ctx, futs...) {
			if r.Err != nil {
				return "", r.Err
			}
			sum += r.Value
		}
		return "large=" + strconv.Itoa(sum), nil
	case "session":
		session := fmt.Sprintf("s%d", i%5)
		a, err := durable.CallActivity[int](ctx, actSessionAdd, i+1, durable.ActivityOptions{Session: session}).Await()
		if err != nil {
			return "", err
		}
		b, err := durable.CallActivity[int](ctx, actSessionAdd, i+2, durable.ActivityOptions{Session: session}).Await()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("session:%d", a+b), nil
	}
	return "", fmt.Errorf("unknown kind %q", in.Kind)
}

// receiveUntilEnd dequeues the instance's queue up to the end marker and
// returns what came before it, in order of arrival.
func receiveUntilEnd(ctx *durable.OrchestrationContext) ([]string, error) {
	var got []string
	for {
		m, err := durable.DequeueEvent[string](ctx, queueName).Await()
		if err != nil {
			return nil, err
		}
		if m == endMarker {
			return got, nil
		}
		got = append(got, m)
	}
}

// canLoop is one execution of the canloop kind: continue-as-new until
// the last round, which dequeues the messages carried so far.
func canLoop(ctx *durable.OrchestrationContext, in orchInput) (string, error) {
	if in.Round%canLoopEvery == canLoopEvery-1 {
		v, err := durable.CallActivity[int](ctx, actMul, mulInput{A: in.Index, B: 1}).Await()
		if err != nil {
			return "", err
		}
		in.Acc += v
	}
	in.Round++
	if in.Round < canLoopRounds {
		return "", durable.ContinueAsNew(ctx, in)
	}
	got, err := receiveUntilEnd(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("canloop:%d:%d:%s", in.Round, in.Acc, strings.Join(got, ",")), nil
}

// chaosChild is the sub-orchestration of the "sub" kind.
func chaosChild(ctx *durable.OrchestrationContext, i int) (string, error) {
	v, err := durable.CallActivity[int](ctx, actMul, mulInput{A: i, B: 7}).Await()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("child:%d", v), nil
}
