package schedule

import (
	"hash/fnv"
	"time"
)

// These helpers compute fire times on Spec.Next alone, so the schedule
// engine needs nothing more of the spec than Next and Jitter.

// maxFiresPerTurn bounds the fire times one step of the schedule
// enumerates (a backfill or a catch-up after downtime): the rest wait for
// the next step, so no turn grows without bound.
const maxFiresPerTurn = 200

// firesIn returns the nominal fire times in (after, upTo], at most limit.
func firesIn(s Spec, after, upTo time.Time, limit int) []time.Time {
	var out []time.Time
	t := after
	for len(out) < limit {
		n, err := s.Next(t)
		if err != nil || n.IsZero() || n.After(upTo) {
			break
		}
		out = append(out, n)
		t = n
	}
	return out
}

// nextFires returns the next n nominal fire times after t.
func nextFires(s Spec, t time.Time, n int) []time.Time {
	var out []time.Time
	for len(out) < n {
		next, err := s.Next(t)
		if err != nil || next.IsZero() {
			break
		}
		out = append(out, next)
		t = next
	}
	return out
}

// fireDelay is the jitter of one fire: a hash of the schedule id and the
// nominal time, scaled into [0, s.Jitter) in whole milliseconds (the
// resolution of timers and of the orchestration clock), so every process
// and every replay computes the same delay.
func fireDelay(s Spec, scheduleID string, nominal time.Time) time.Duration {
	steps := uint64(s.Jitter / time.Millisecond)
	if steps == 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(scheduleID))
	h.Write([]byte(nominal.UTC().Format(time.RFC3339Nano)))
	return time.Duration(h.Sum64()%steps) * time.Millisecond
}

// RunID is the instance id of the run a schedule starts for the nominal
// fire time t: the same id for every retry of the fire, so a fire started
// twice is one run.
func RunID(prefix string, t time.Time) string {
	return prefix + "@" + t.UTC().Format(time.RFC3339Nano)
}
