package durable

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// A batch fetched without the ContinueAsNew item is held only while the
// successor is still to start: not for a finished instance, nor for one
// whose successor was poisoned (OrchestrationFailed after the
// continue-as-new), whose messages are drained as for any finished one.
func TestAwaitingSuccessor(t *testing.T) {
	started := xEv(1, nil, duroxide.OrchestrationStarted{Name: "o", Version: "1.0.0"})
	can := xEv(3, nil, duroxide.OrchestrationContinuedAsNew{Input: "next"})
	for _, tc := range []struct {
		name    string
		history []duroxide.Event
		want    bool
	}{
		{"empty", nil, false},
		{"running", []duroxide.Event{started}, false},
		{"continued as new", []duroxide.Event{started, can}, true},
		{"continued as new, activity cancelled after", []duroxide.Event{started, can,
			xEv(4, nil, duroxide.ActivityCancelRequested{Reason: "orchestration_terminal_continued_as_new"})}, true},
		{"successor poisoned", []duroxide.Event{started, can, xEv(4, nil, duroxide.OrchestrationFailed{Details: duroxide.PoisonError{}})}, false},
		{"completed", []duroxide.Event{started, xEv(2, nil, duroxide.OrchestrationCompleted{Output: "x"})}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, awaitingSuccessor(tc.history))
		})
	}
}
