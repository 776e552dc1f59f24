package durable

import (
	"log/slog"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/stretchr/testify/require"
)

// Helpers of the engine tests (engine_*_test.go). Every name starts with
// "et" so they never collide with the helpers of the ported Rust tests
// (replay_*_test.go) in the same package.

const (
	etInstance = "et-inst"
	etExec     = uint64(1)
)

// etClock is a fixed clock so fire times and timestamps are predictable.
var etClock = time.UnixMilli(1_700_000_000_000)

func etEv(id uint64, source *uint64, kind duroxide.EventKind) duroxide.Event {
	return duroxide.Event{EventID: id, SourceEventID: source, InstanceID: etInstance, ExecutionID: etExec,
		TimestampMs: uint64(etClock.UnixMilli()), DuroxideVersion: DuroxideVersion, Kind: kind}
}

func etSrc(id uint64) *uint64 { return &id }

func etStarted(input string) duroxide.Event {
	return etEv(1, nil, duroxide.OrchestrationStarted{Name: "Orch", Version: "1.0.0", Input: input})
}

func etEngine(history ...duroxide.Event) *replayEngine {
	e := newReplayEngine(etInstance, etExec, history)
	e.now = func() time.Time { return etClock }
	e.logger = slog.New(slog.DiscardHandler)
	return e
}

func etRun(e *replayEngine, h OrchestrationFunc) TurnResult {
	return e.executeOrchestration(h, "in", "Orch", "1.0.0", "worker")
}

// etKinds strips ids and stamps so a test can compare the shape of a delta.
func etKinds(evs []duroxide.Event) []duroxide.EventKind {
	out := make([]duroxide.EventKind, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}

// etRequireDelta asserts the exact delta: ids, source ids, kinds, stamps.
func etRequireDelta(t *testing.T, e *replayEngine, want ...duroxide.Event) {
	t.Helper()
	require.Equal(t, want, e.historyDelta())
}

func etAppErr(msg string) duroxide.ErrorDetails {
	return duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppActivityFailed}, Message: msg}
}

func etStr(s string) *string { return &s }

func etActivityDone(id uint64, result string) duroxide.WorkItem {
	return duroxide.ActivityCompletedItem{Instance: etInstance, ExecutionID: etExec, ID: id, Result: result}
}
