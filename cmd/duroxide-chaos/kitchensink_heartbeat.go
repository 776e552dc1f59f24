package main

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
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

const (
	// opHeartbeat is the step: actPager over N pages.
	opHeartbeat = "hb"
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
	Index int `json:"index"`
	Pages int `json:"pages"`
}

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
		if s.Op == opHeartbeat {
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
	return func(ctx durable.ActivityContext, in pagerInput) (string, error) {
		me := pagerProgress{Instance: ctx.InstanceID(), Execution: ctx.ExecutionID(), Activity: ctx.ActivityID()}
		d, ok, err := durable.HeartbeatDetails[pagerProgress](ctx)
		if err != nil {
			return "", err
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
