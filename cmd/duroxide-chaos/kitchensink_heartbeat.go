package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/duroxide-go/cdb/durable"
)

// The kitchen sink's heartbeat step: actPager pages through N pages,
// heartbeating its progress after each; an attempt that runs after a
// worker was killed under it (or lost its lock) resumes from the last
// details the store kept. The step's output is the sum over all pages
// whichever attempts did them, so a resume from wrong details (another
// activity's, a page never reached, a sum that does not match its page)
// shows in the program's output, which the model judges; resumes are
// counted in the report.
//
// A stalling step (opHeartbeatStall) has its first attempt stop
// heartbeating although its process is alive: the pager's
// ActivityPolicy.HeartbeatTimeout must fail that attempt, and the call's
// RetryPolicy runs a second one (a new activity, so without details)
// that pages through. Without the timeout the attempt waits forever and
// the instance is reported stuck.

const (
	// opHeartbeat is the step: actPager over N pages.
	opHeartbeat = "hb"
	// opHeartbeatStall is opHeartbeat whose first attempt stalls.
	opHeartbeatStall = "hbs"
	// pagerHeartbeatTimeout fails a pager attempt that stops
	// heartbeating: ten pages' time, so a paging attempt never meets it.
	pagerHeartbeatTimeout = 3 * time.Second
	// stallLogName is the file in the run's directory where stalled
	// attempts are marked (so the retry does not stall) and their ends
	// recorded.
	stallLogName = "heartbeat-stalls.log"
	// actPager is the heartbeating activity.
	actPager = "ChaosPager"
	// pagerPageDelay is one page's work: a few pages outlast the worker
	// lock's renewal interval (workerLockTimeout), so details are stored
	// while the activity runs and a kill can land between them.
	pagerPageDelay = 300 * time.Millisecond
	// resumeLogName is the file in the run's directory every worker
	// appends the pager's resumes to.
	resumeLogName = "heartbeat-resumes.log"
)

// pagerInput is actPager's input.
type pagerInput struct {
	Index int  `json:"index"`
	Pages int  `json:"pages"`
	Stall bool `json:"stall,omitempty"`
}

// pagerRetry retries a pager attempt that failed: a heartbeat timeout's
// (a stall), or a timeout after a process pause.
var pagerRetry = durable.NewRetryPolicy(4).WithBackoff(durable.FixedBackoff(200 * time.Millisecond))

// pagerProgress is actPager's heartbeat details: where it is, and which
// activity it belongs to, so a resume can tell details not its own.
type pagerProgress struct {
	Instance  string `json:"instance"`
	Execution uint64 `json:"execution"`
	Activity  uint64 `json:"activity"`
	Page      int    `json:"page"`
	Sum       int    `json:"sum"`
}

// pagerSum is the sum of pages 1..page of instance index's pager.
func pagerSum(index, page int) int { return (index + 1) * page * (page + 1) / 2 }

// pagerPart is the output part of a heartbeat step over pages.
func pagerPart(index, pages int) string { return "h" + strconv.Itoa(pagerSum(index, pages)) }

// ksAddHeartbeats gives about half the programs a heartbeat step at a
// random place and, when the program has a child, about half of those
// one in the first child too. It draws after everything else, so the
// rest of a seed's programs is what it was before heartbeats.
func ksAddHeartbeats(rng *rand.Rand, steps []ksStep) []ksStep {
	if rng.IntN(2) == 0 {
		return steps
	}
	hb := ksStep{Op: opHeartbeat, N: 4 + rng.IntN(7)}
	if rng.IntN(3) == 0 {
		hb.Op = opHeartbeatStall
	}
	at := rng.IntN(len(steps) + 1)
	steps = append(steps[:at:at], append([]ksStep{hb}, steps[at:]...)...)
	if rng.IntN(2) == 0 {
		for k, s := range steps {
			if s.Op == opChild || s.Op == opFork {
				steps[k].Sub = append(steps[k].Sub[:len(s.Sub):len(s.Sub)], ksStep{Op: opHeartbeat, N: 4 + rng.IntN(7)})
				break
			}
		}
	}
	return steps
}

// countHeartbeatSteps counts the heartbeat steps of a program, children
// included.
func countHeartbeatSteps(steps []ksStep) int {
	n := 0
	for _, s := range steps {
		if s.Op == opHeartbeat || s.Op == opHeartbeatStall {
			n++
		}
		n += countHeartbeatSteps(s.Sub)
	}
	return n
}

// resumeLog appends one line per resumed pager attempt to the run's
// resume log: "<instance> <execution> <activity id> <page>".
type resumeLog struct {
	mu   sync.Mutex
	path string
}

func (l *resumeLog) record(p pagerProgress) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%s %d %d %d\n", p.Instance, p.Execution, p.Activity, p.Page)
	return errors.Join(err, f.Close())
}

// countResumes reads the run's resume log (0 when no pager resumed).
func countResumes(dir string) (int, error) {
	f, err := os.Open(filepath.Join(dir, resumeLogName))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
	}
	return n, sc.Err()
}

// pager is actPager. A first attempt starts at page 1; a later attempt
// of the same work item resumes after the page its details name, once it
// has checked that they are its own and consistent (otherwise it returns
// a part naming them, which no model expects).
func pager(log *activityLog, dir string) func(durable.ActivityContext, pagerInput) (string, error) {
	resumes := &resumeLog{path: filepath.Join(dir, resumeLogName)}
	stalls := &stallLog{path: filepath.Join(dir, stallLogName)}
	return func(ctx durable.ActivityContext, in pagerInput) (string, error) {
		me := pagerProgress{Instance: ctx.InstanceID(), Execution: ctx.ExecutionID(), Activity: ctx.ActivityID()}
		d, ok, err := durable.HeartbeatDetails[pagerProgress](ctx)
		if err != nil {
			return "", err
		}
		if in.Stall && !ok {
			if stalled, err := stalls.stall(ctx, me); stalled || err != nil {
				return "", err
			}
		}
		if ok {
			if d.Instance != me.Instance || d.Execution != me.Execution || d.Activity != me.Activity ||
				d.Page < 1 || d.Page > in.Pages || d.Sum != pagerSum(in.Index, d.Page) {
				return fmt.Sprintf("h?%+v", d), log.record(ctx)
			}
			if err := resumes.record(d); err != nil {
				return "", err
			}
			me = d
		}
		for me.Page < in.Pages {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(pagerPageDelay):
			}
			me.Page++
			me.Sum += (in.Index + 1) * me.Page
			if err := ctx.Heartbeat(me); err != nil {
				return "", err
			}
		}
		return "h" + strconv.Itoa(me.Sum), log.record(ctx)
	}
}

// stallLog marks and records the stalling steps' first attempts, one
// line each: "stall <instance> <execution>" when an attempt stalls, and
// "timeout <instance> <execution>" when its heartbeat timeout ended it.
type stallLog struct {
	mu   sync.Mutex
	path string
}

// stall makes the first attempt of execution me's stalling step stall
// until it is cancelled, and reports whether it did: a later attempt
// (the retry, or a re-run after a kill) finds the mark and pages.
func (l *stallLog) stall(ctx durable.ActivityContext, me pagerProgress) (bool, error) {
	key := me.Instance + " " + strconv.FormatUint(me.Execution, 10)
	lines, err := l.lines()
	if err != nil || slices.Contains(lines, "stall "+key) {
		return false, err
	}
	if err := l.append("stall " + key); err != nil {
		return false, err
	}
	<-ctx.Done()
	cause := context.Cause(ctx)
	if errors.Is(cause, durable.ErrHeartbeatTimeout) {
		return true, errors.Join(cause, l.append("timeout "+key))
	}
	return true, cause
}

func (l *stallLog) append(line string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, line)
	return errors.Join(err, f.Close())
}

func (l *stallLog) lines() ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, err := os.ReadFile(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n"), err
}

// countStalls reads the run's stall log: the stalled attempts, and those
// a heartbeat timeout ended.
func countStalls(dir string) (stalls, timeouts int, err error) {
	l := &stallLog{path: filepath.Join(dir, stallLogName)}
	lines, err := l.lines()
	for _, line := range lines {
		switch {
		case strings.HasPrefix(line, "stall "):
			stalls++
		case strings.HasPrefix(line, "timeout "):
			timeouts++
		}
	}
	return stalls, timeouts, err
}
