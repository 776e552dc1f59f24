package durable

// TestReplayEngine runs the replay-engine tests ported from duroxide
// 0.1.29's tests/replay_engine/*.rs: go test -run
// 'TestReplayEngine/<file stem>/<exact Rust test name>'.

import (
	"runtime"
	"sort"
	"testing"
)

// replayCase is one ported Rust #[test] fn.
type replayCase struct {
	name string
	fn   func(t *testing.T)
}

// replaySuites maps a Rust file stem (tests/replay_engine/<stem>.rs) to its
// cases in source order. Each replay_<stem>_test.go registers its own in an
// init function, so the two porters never edit a shared list.
var replaySuites = map[string][]replayCase{}

// registerReplaySuite adds the cases of one Rust test file.
func registerReplaySuite(stem string, cases ...replayCase) {
	if _, dup := replaySuites[stem]; dup {
		panic("replay suite registered twice: " + stem)
	}
	replaySuites[stem] = cases
}

// TestReplayEngine runs every ported replay-engine test as
// TestReplayEngine/<file stem>/<exact Rust test name>.
func TestReplayEngine(t *testing.T) {
	stems := make([]string, 0, len(replaySuites))
	for s := range replaySuites {
		stems = append(stems, s)
	}
	sort.Strings(stems)
	for _, stem := range stems {
		t.Run(stem, func(t *testing.T) {
			for _, c := range replaySuites[stem] {
				t.Run(c.name, func(t *testing.T) {
					before := runtime.NumGoroutine()
					t.Cleanup(func() { requireNoLeakedGoroutines(t, before) })
					c.fn(t)
				})
			}
		})
	}
}
