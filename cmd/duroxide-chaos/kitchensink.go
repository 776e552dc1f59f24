package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/durable"
)

// The kitchen-sink kind: each instance runs a random program of steps
// drawn from the seed and its index (ksProgram), carried in its input so
// that any worker replays it, while the driver's operator (operator.go)
// suspends, cancels, rewinds, restarts, deletes and re-creates it. The
// program's output is a pure function of its steps (ksExpected); what the
// operator did decides which run must end how (model.go).

// kitchenSink is the kind's name. It is not in the default mix: its
// operator ends and restarts instances, which the other kinds' checks do
// not expect; -kinds kitchensink runs it.
const kitchenSink = "kitchensink"

// Names the kind registers.
const (
	ksOrchName  = "ChaosKitchenSink"
	ksChildName = "ChaosKitchenSinkChild"
	// actFlaky fails while the operator's fault file for its instance
	// and run exists (the planted fault a rewind recovers from).
	actFlaky = "ChaosFlaky"
	// ksFaultMessage is the planted fault's error text.
	ksFaultMessage = "kitchen-sink planted fault"
	// ksBurstMin is the smallest burst: more messages than one page of
	// held messages, delivered while the instance is suspended.
	ksBurstMin = 120
	// ksDequeueChunk is how many messages a queue step dequeues per turn.
	ksDequeueChunk = 50
)

// The program's operations.
const (
	opActivity = "act"     // an activity: ChaosMul(index+1, N)
	opTimer    = "timer"   // a durable timer of N ms
	opEvent    = "event"   // wait for an event the driver raises
	opQueue    = "queue"   // dequeue N messages the driver enqueues
	opKV       = "kv"      // set a KV value and read it back
	opSession  = "session" // an activity on a session
	opChild    = "child"   // a sub-orchestration running Sub, awaited at once
	opFork     = "fork"    // a sub-orchestration running Sub, awaited later
	opJoin     = "join"    // await the forked children
	opCAN      = "can"     // continue as new with the rest of the program
	opFault    = "fault"   // actFlaky: fails until the operator clears it
	// opHeartbeat (kitchensink_heartbeat.go): actPager over N pages,
	// resuming from its heartbeat details after a kill.
	opUpdate = "update" // answer the update the driver sends, then wait for its event
	opPatch  = "patch"  // take a patched branch (a patch marker in history)
)

// ksStep is one step of a program.
type ksStep struct {
	Op  string   `json:"op"`
	N   int      `json:"n,omitempty"`
	Sub []ksStep `json:"sub,omitempty"`
}

// ksInput is the kitchen-sink orchestration's input: the whole program,
// where it is (Pos, across continue-as-new) and what it produced so far.
// Run numbers the instance's runs: 1 for the first start, one more for
// every restart or re-creation, so events, queues and faults of one run
// are never mistaken for another's.
type ksInput struct {
	Index int      `json:"index"`
	Run   int      `json:"run"`
	Steps []ksStep `json:"steps"`
	Pos   int      `json:"pos,omitempty"`
	Parts []string `json:"parts,omitempty"`
}

// ksChildInput is a child's input: its own program (no events, queues,
// KV or continue-as-new: the driver addresses top-level instances only).
type ksChildInput struct {
	Index int      `json:"index"`
	Steps []ksStep `json:"steps"`
}

// ksFaultInput is actFlaky's input.
type ksFaultInput struct {
	Instance string `json:"instance"`
	Run      int    `json:"run"`
}

// The operator's plans, one per instance.
const (
	planNone          = "none"           // runs untouched
	planSuspend       = "suspend"        // suspended then resumed, a few times, while it runs
	planBurst         = "suspend-burst"  // suspended while a burst of messages arrives, then resumed
	planCancel        = "cancel"         // cancelled while it runs
	planRewind        = "rewind"         // fails on a planted fault; cleared, then rewound
	planRewindRestart = "rewind-restart" // as rewind, then restarted at once
	planRestart       = "restart"        // restarted once terminal
	planLateCancel    = "late-cancel"    // cancelled once terminal (a no-op), then restarted
	planRecreate      = "recreate"       // deleted once terminal, then started again
	planForceRecreate = "force-recreate" // deleted while it runs (forced), then started again
	planReuse         = "reuse"          // two concurrent IDReuseAllowTerminal starts once terminal
)

// ksPlans are the plans, drawn uniformly.
var ksPlans = []string{planNone, planSuspend, planBurst, planCancel, planRewind, planRewindRestart,
	planRestart, planLateCancel, planRecreate, planForceRecreate, planReuse}

// ksRand is instance i's generator: a pure function of the seed and i.
func ksRand(seed int64, i int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(i)*2+1))
}

// ksDraw draws instance i's plan (one of plans) and program from the
// seed.
func ksDraw(seed int64, i int, plans []string) (plan string, steps []ksStep) {
	rng := ksRand(seed, i)
	plan = plans[rng.IntN(len(plans))]
	return plan, ksProgram(rng, plan)
}

// ksProgram draws a top-level program of 4 to 9 steps (plus what the
// plan needs): every operation may appear; a continue-as-new is often
// followed by a child (a child of execution 2); a planted fault often
// follows a fork (a child in flight when its parent fails).
func ksProgram(rng *rand.Rand, plan string) []ksStep {
	n := 4 + rng.IntN(6)
	var steps []ksStep
	cans := 0
	for len(steps) < n {
		switch r := rng.IntN(22); {
		case r < 3:
			steps = append(steps, ksStep{Op: opActivity, N: 1 + rng.IntN(50)})
		case r < 5:
			steps = append(steps, ksStep{Op: opTimer, N: 200 + rng.IntN(1300)})
		case r < 7:
			steps = append(steps, ksStep{Op: opEvent})
		case r < 9:
			steps = append(steps, ksStep{Op: opQueue, N: 1 + rng.IntN(3)})
		case r < 10:
			steps = append(steps, ksStep{Op: opKV, N: rng.IntN(1000)})
		case r < 11:
			steps = append(steps, ksStep{Op: opUpdate})
		case r < 12:
			steps = append(steps, ksStep{Op: opPatch})
		case r < 14:
			steps = append(steps, ksStep{Op: opSession, N: 1 + rng.IntN(50)})
		case r < 17:
			steps = append(steps, ksStep{Op: opChild, Sub: ksChildProgram(rng, 1)})
		case r < 19:
			steps = append(steps, ksStep{Op: opFork, Sub: ksChildProgram(rng, 1)})
			if rng.IntN(2) == 0 {
				steps = append(steps, ksStep{Op: opActivity, N: 1 + rng.IntN(50)}, ksStep{Op: opJoin})
			}
		default:
			if cans == 2 {
				continue
			}
			cans++
			steps = append(steps, ksStep{Op: opCAN})
			if rng.IntN(2) == 0 {
				steps = append(steps, ksStep{Op: opChild, Sub: ksChildProgram(rng, 1)})
			}
		}
	}
	switch plan {
	case planRewind, planRewindRestart:
		at := 1 + rng.IntN(len(steps))
		fault := []ksStep{{Op: opFault}}
		if rng.IntN(2) == 0 {
			// A child with a timer still runs when the fault fails the
			// parent, which cancels it: the rewind meets its cancellation.
			fault = []ksStep{{Op: opFork, Sub: []ksStep{{Op: opTimer, N: 500 + rng.IntN(1500)}, {Op: opActivity, N: 7}}}, {Op: opFault}}
		}
		steps = append(steps[:at:at], append(fault, steps[at:]...)...)
	case planSuspend:
		// Suspensions meet continue-as-new: the program has at least one.
		if cans == 0 {
			at := rng.IntN(len(steps) + 1)
			steps = append(steps[:at:at], append([]ksStep{{Op: opCAN}, {Op: opActivity, N: 1 + rng.IntN(50)}}, steps[at:]...)...)
		}
	case planBurst:
		at := rng.IntN(len(steps) + 1)
		burst := ksStep{Op: opQueue, N: ksBurstMin + rng.IntN(31)}
		steps = append(steps[:at:at], append([]ksStep{burst}, steps[at:]...)...)
	}
	return ksAddHeartbeats(rng, steps)
}

// ksChildProgram draws a child's program of 1 to 3 steps; a child at
// depth 1 may have children of its own (nested), at depth 2 not.
func ksChildProgram(rng *rand.Rand, depth int) []ksStep {
	n := 1 + rng.IntN(3)
	steps := make([]ksStep, 0, n)
	for range n {
		switch r := rng.IntN(8); {
		case r < 3:
			steps = append(steps, ksStep{Op: opActivity, N: 1 + rng.IntN(50)})
		case r < 5:
			steps = append(steps, ksStep{Op: opTimer, N: 100 + rng.IntN(900)})
		case r < 6:
			steps = append(steps, ksStep{Op: opSession, N: 1 + rng.IntN(50)})
		default:
			if depth >= 2 {
				steps = append(steps, ksStep{Op: opActivity, N: 1 + rng.IntN(50)})
				continue
			}
			steps = append(steps, ksStep{Op: opChild, Sub: ksChildProgram(rng, depth+1)})
		}
	}
	return steps
}

// hasOp reports whether steps (top level) holds an op.
func hasOp(steps []ksStep, op string) bool {
	for _, s := range steps {
		if s.Op == op {
			return true
		}
	}
	return false
}

// ksEventName and ksQueueName are the event and queue of step pos in
// run: a run never receives what was meant for another.
func ksEventName(run, pos int) string { return fmt.Sprintf("ev-%d-%d", run, pos) }
func ksQueueName(run, pos int) string { return fmt.Sprintf("q-%d-%d", run, pos) }

// ksEventData and ksMessageData are the payloads the driver sends:
// unique over the run of the soak.
func ksEventData(inst string, run, pos int) string { return fmt.Sprintf("%s/r%d/p%d", inst, run, pos) }
func ksMessageData(inst string, run, pos, k int) string {
	return fmt.Sprintf("%s/r%d/p%d/m%d", inst, run, pos, k)
}

// ksSessionOf is the session of instance i's session steps.
func ksSessionOf(i int) string { return fmt.Sprintf("ks%d", i%7) }

// ksUpdateName is the update step pos of run answers, ksUpdateDone the
// event the driver raises once it has the answer, and ksUpdateData the
// request it sends: a run never answers what was meant for another.
func ksUpdateName(run, pos int) string { return fmt.Sprintf("u-%d-%d", run, pos) }
func ksUpdateDone(run, pos int) string { return fmt.Sprintf("ud-%d-%d", run, pos) }
func ksUpdateData(inst string, run, pos int) string {
	return fmt.Sprintf("%s/r%d/p%d/u", inst, run, pos)
}

// ksUpdateAnswer is the handler's answer to request in.
func ksUpdateAnswer(in string) string { return "r:" + in }

// Custom statuses the program sets: "p:<run>:<pos>" while at step pos,
// "w:<run>:<pos>:e" while waiting for its event, "w:<run>:<pos>:q<n>"
// while dequeueing n messages and "w:<run>:<pos>:u" while it takes its
// update. The driver sends what a wait asks for.
func ksStatusAt(run, pos int) string { return fmt.Sprintf("p:%d:%d", run, pos) }
func ksStatusWaiting(run, pos int, s ksStep) string {
	switch s.Op {
	case opEvent:
		return fmt.Sprintf("w:%d:%d:e", run, pos)
	case opUpdate:
		return fmt.Sprintf("w:%d:%d:u", run, pos)
	}
	return fmt.Sprintf("w:%d:%d:q%d", run, pos, s.N)
}

// ksProgress is a parsed custom status.
type ksProgress struct {
	Run, Pos int
	// Waiting is set for a wait: Event, or Messages to dequeue.
	Waiting  bool
	Event    bool
	Update   bool
	Messages int
}

// parseKSStatus parses a custom status the program set.
func parseKSStatus(s string) (ksProgress, bool) {
	f := strings.Split(s, ":")
	if len(f) < 3 || (f[0] != "p" && f[0] != "w") {
		return ksProgress{}, false
	}
	run, err1 := strconv.Atoi(f[1])
	pos, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return ksProgress{}, false
	}
	p := ksProgress{Run: run, Pos: pos}
	if f[0] == "p" {
		return p, len(f) == 3
	}
	if len(f) != 4 {
		return ksProgress{}, false
	}
	p.Waiting = true
	switch {
	case f[3] == "e":
		p.Event = true
	case f[3] == "u":
		p.Update = true
	case strings.HasPrefix(f[3], "q"):
		n, err := strconv.Atoi(f[3][1:])
		if err != nil || n < 1 {
			return ksProgress{}, false
		}
		p.Messages = n
	default:
		return ksProgress{}, false
	}
	return p, true
}

// ksPart is the output part of a step whose result the program knows in
// advance (the same in the orchestration and in ksExpected).
func ksPart(index int, s ksStep) string {
	switch s.Op {
	case opActivity:
		return "a" + strconv.Itoa((index+1)*s.N)
	case opTimer:
		return "t"
	case opKV:
		return fmt.Sprintf("k=v%d", s.N)
	case opSession:
		return "s" + strconv.Itoa(s.N)
	case opFault:
		return "x"
	case opHeartbeat, opHeartbeatStall:
		return pagerPart(index, s.N)
	case opPatch:
		return "pn"
	}
	return "?" + s.Op
}

// ksExpected is the output a program completes with.
func ksExpected(index int, steps []ksStep) string {
	var parts, pending []string
	join := func() {
		parts = append(parts, pending...)
		pending = nil
	}
	for pos, s := range steps {
		switch s.Op {
		case opCAN, opJoin:
			join()
		case opFork:
			pending = append(pending, "f("+ksChildExpected(index, s.Sub)+")")
		case opChild:
			parts = append(parts, "c("+ksChildExpected(index, s.Sub)+")")
		case opEvent:
			parts = append(parts, "e"+strconv.Itoa(pos))
		case opQueue:
			parts = append(parts, fmt.Sprintf("q%dx%d", pos, s.N))
		case opUpdate:
			parts = append(parts, ksUpdatePart(pos, 1))
		default:
			parts = append(parts, ksPart(index, s))
		}
	}
	join()
	return "ks:" + strings.Join(parts, ",")
}

// ksChildExpected is the output a child program completes with.
func ksChildExpected(index int, steps []ksStep) string {
	parts := make([]string, 0, len(steps))
	for _, s := range steps {
		if s.Op == opChild {
			parts = append(parts, "c("+ksChildExpected(index, s.Sub)+")")
			continue
		}
		parts = append(parts, ksPart(index, s))
	}
	return strings.Join(parts, ";")
}

// ksKVKey is the key a KV step at pos sets.
func ksKVKey(pos int) string { return "k" + strconv.Itoa(pos) }

// ksOrchestration runs a top-level program from in.Pos: up to its end,
// or up to a continue-as-new, which carries the rest (Pos and Parts) into
// the next execution. Forked children are joined at a join step, before
// a continue-as-new and at the end.
func ksOrchestration(ctx *durable.OrchestrationContext, in ksInput) (string, error) {
	var pending []*durable.Future[string]
	join := func() error {
		for _, f := range pending {
			out, err := f.Await()
			if err != nil {
				return err
			}
			in.Parts = append(in.Parts, "f("+out+")")
		}
		pending = nil
		return nil
	}
	for ; in.Pos < len(in.Steps); in.Pos++ {
		s := in.Steps[in.Pos]
		ctx.SetCustomStatus(ksStatusAt(in.Run, in.Pos))
		switch s.Op {
		case opCAN:
			if err := join(); err != nil {
				return "", err
			}
			in.Pos++
			return "", durable.ContinueAsNew(ctx, in)
		case opJoin:
			if err := join(); err != nil {
				return "", err
			}
		case opFork:
			pending = append(pending, durable.CallSubOrchestration[string](ctx, ksChildName, ksChildInput{Index: in.Index, Steps: s.Sub}))
		default:
			part, err := ksStepOf(ctx, in, s)
			if err != nil {
				return "", err
			}
			in.Parts = append(in.Parts, part)
		}
	}
	if err := join(); err != nil {
		return "", err
	}
	return "ks:" + strings.Join(in.Parts, ","), nil
}

// ksStepOf runs one top-level step and returns its output part. Event
// and queue steps check what arrived against what the driver sends: a
// stray or misordered delivery shows in the output.
func ksStepOf(ctx *durable.OrchestrationContext, in ksInput, s ksStep) (string, error) {
	inst := ctx.InstanceID()
	switch s.Op {
	case opEvent:
		ctx.SetCustomStatus(ksStatusWaiting(in.Run, in.Pos, s))
		data, err := durable.WaitEvent[string](ctx, ksEventName(in.Run, in.Pos)).Await()
		if err != nil {
			return "", err
		}
		if want := ksEventData(inst, in.Run, in.Pos); data != want {
			return fmt.Sprintf("e%d?%s", in.Pos, data), nil
		}
		return "e" + strconv.Itoa(in.Pos), nil
	case opQueue:
		ctx.SetCustomStatus(ksStatusWaiting(in.Run, in.Pos, s))
		for k := range s.N {
			if k > 0 && k%ksDequeueChunk == 0 {
				// A turn resolves at most about a hundred dequeues of
				// messages already there (the runtime's quiescence
				// bound): a burst delivered at once is taken in chunks.
				if _, err := durable.NewTimer(ctx, time.Millisecond).Await(); err != nil {
					return "", err
				}
			}
			m, err := durable.DequeueEvent[string](ctx, ksQueueName(in.Run, in.Pos)).Await()
			if err != nil {
				return "", err
			}
			if want := ksMessageData(inst, in.Run, in.Pos, k); m != want {
				return fmt.Sprintf("q%d?%d:%s", in.Pos, k, m), nil
			}
		}
		return fmt.Sprintf("q%dx%d", in.Pos, s.N), nil
	case opKV:
		durable.SetKVValue(ctx, ksKVKey(in.Pos), fmt.Sprintf("v%d", s.N))
		v, found, err := durable.KVValue[string](ctx, ksKVKey(in.Pos))
		if err != nil || !found {
			return "", fmt.Errorf("kv read back: found=%v err=%v", found, err)
		}
		return "k=" + v, nil
	case opFault:
		if _, err := durable.CallActivity[string](ctx, actFlaky, ksFaultInput{Instance: inst, Run: in.Run}).Await(); err != nil {
			return "", err
		}
		return ksPart(in.Index, s), nil
	case opUpdate:
		return ksUpdateStep(ctx, in, s)
	case opPatch:
		// Every run of the soak starts after the patch, so the new branch
		// is the one taken; the marker is what replay, rewind and restart
		// must carry.
		//durablecheck:ignore the id comes from the step's position in the instance's input, the same on every replay
		if ctx.Patched(fmt.Sprintf("ks-patch-%d", in.Pos)) {
			return "pn", nil
		}
		return "po", nil
	}
	return ksCommonStep(ctx, in.Index, s)
}

// ksUpdateStep answers the step's update and waits for the driver's word
// that it got the answer. The part counts the handler's runs: a retried
// update (the driver retries with the same id) must run it once.
func ksUpdateStep(ctx *durable.OrchestrationContext, in ksInput, s ksStep) (string, error) {
	runs := 0
	durable.SetUpdateHandler(ctx, ksUpdateName(in.Run, in.Pos), func(_ *durable.OrchestrationContext, req string) (string, error) {
		runs++
		return ksUpdateAnswer(req), nil
	}, durable.UpdateHandlerOptions[string]{Validator: func(_ *durable.OrchestrationContext, req string) error {
		if req == "" {
			return errKSEmptyUpdate
		}
		return nil
	}})
	ctx.SetCustomStatus(ksStatusWaiting(in.Run, in.Pos, s))
	if _, err := durable.WaitEvent[string](ctx, ksUpdateDone(in.Run, in.Pos)).Await(); err != nil {
		return "", err
	}
	return ksUpdatePart(in.Pos, runs), nil
}

// errKSEmptyUpdate is the validator's refusal, which the driver provokes
// once per update step: a refused request must run nothing.
var errKSEmptyUpdate = errors.New("kitchen sink: empty update")

// ksUpdatePart is an update step's part after its handler ran runs times.
func ksUpdatePart(pos, runs int) string { return fmt.Sprintf("u%dx%d", pos, runs) }

// ksCommonStep runs a step top-level programs and children share.
func ksCommonStep(ctx *durable.OrchestrationContext, index int, s ksStep) (string, error) {
	switch s.Op {
	case opActivity:
		if _, err := durable.CallActivity[int](ctx, actMul, mulInput{A: index + 1, B: s.N}).Await(); err != nil {
			return "", err
		}
	case opTimer:
		if _, err := durable.NewTimer(ctx, time.Duration(s.N)*time.Millisecond).Await(); err != nil {
			return "", err
		}
	case opSession:
		if _, err := durable.CallActivity[int](ctx, actSessionAdd, s.N, durable.ActivityOptions{Session: ksSessionOf(index)}).Await(); err != nil {
			return "", err
		}
	case opHeartbeat, opHeartbeatStall:
		// The activity's own result: a wrong resume shows in the output.
		in := pagerInput{Index: index, Pages: s.N, Stall: s.Op == opHeartbeatStall}
		return durable.CallActivity[string](ctx, actPager, in, durable.ActivityOptions{Retry: pagerRetry}).Await()
	case opChild:
		out, err := durable.CallSubOrchestration[string](ctx, ksChildName, ksChildInput{Index: index, Steps: s.Sub}).Await()
		if err != nil {
			return "", err
		}
		return "c(" + out + ")", nil
	default:
		return "", fmt.Errorf("kitchen sink: step %q", s.Op)
	}
	return ksPart(index, s), nil
}

// ksChild runs a child program.
func ksChild(ctx *durable.OrchestrationContext, in ksChildInput) (string, error) {
	parts := make([]string, 0, len(in.Steps))
	for _, s := range in.Steps {
		part, err := ksCommonStep(ctx, in.Index, s)
		if err != nil {
			return "", err
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ";"), nil
}

// ksFaultPath is the file whose existence is the planted fault of
// instance's run: workers and driver share the run's directory, so the
// fault is the same for every process and outlasts kills.
func ksFaultPath(dir, instance string, run int) string {
	return filepath.Join(dir, "ks-faults", fmt.Sprintf("%s.r%d", instance, run))
}

// errPlantedFault is what actFlaky fails with while its fault is planted.
var errPlantedFault = errors.New(ksFaultMessage)

// flaky is actFlaky: it fails while the fault file of its instance and
// run exists.
func flaky(dir string) func(durable.ActivityContext, ksFaultInput) (string, error) {
	return func(_ durable.ActivityContext, in ksFaultInput) (string, error) {
		if _, err := os.Stat(ksFaultPath(dir, in.Instance, in.Run)); err == nil {
			return "", errPlantedFault
		}
		return "x", nil
	}
}
