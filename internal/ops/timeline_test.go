package ops_test

import (
	"testing"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/ops"
)

func ev(id uint64, ms uint64, source *uint64, k duroxide.EventKind) duroxide.Event {
	return duroxide.Event{EventID: id, SourceEventID: source, InstanceID: "p", ExecutionID: 1, TimestampMs: ms, Kind: k}
}

func ptr[T any](v T) *T { return &v }

// TestTimeline: an outcome takes its name and duration from the event it
// answers; failures are marked; auto-named children get the parent's
// prefix, explicit ones keep their id.
func TestTimeline(t *testing.T) {
	hist := []duroxide.Event{
		ev(1, 1_000, nil, duroxide.OrchestrationStarted{Name: "Order", Input: "in"}),
		ev(2, 1_000, nil, duroxide.ActivityScheduled{Name: "Charge", Input: "card"}),
		ev(3, 1_250, ptr[uint64](2), duroxide.ActivityFailed{Details: duroxide.ApplicationError{
			Kind: duroxide.AppErrorKind{Type: duroxide.AppActivityFailed}, Message: "declined"}}),
		ev(4, 1_300, nil, duroxide.SubOrchestrationScheduled{Name: "Ship", Instance: "sub::4"}),
		ev(5, 1_300, nil, duroxide.SubOrchestrationScheduled{Name: "Bill", Instance: "bill-7"}),
		ev(6, 3_300, ptr[uint64](4), duroxide.SubOrchestrationCompleted{Result: "shipped"}),
		ev(7, 3_400, nil, duroxide.OrchestrationFailed{Details: duroxide.ApplicationError{
			Kind: duroxide.AppErrorKind{Type: duroxide.AppCancelled, Reason: "stuck"}}}),
	}
	tl := ops.Timeline("p", hist)
	if len(tl) != len(hist) {
		t.Fatalf("%d entries", len(tl))
	}
	failed := tl[2]
	if failed.Name != "Charge" || failed.Duration != 250*time.Millisecond || !failed.Failed || failed.Detail != "declined" ||
		failed.Offset != 250*time.Millisecond {
		t.Fatalf("the failed activity: %+v", failed)
	}
	if tl[3].Child != "p::sub::4" || tl[4].Child != "bill-7" {
		t.Fatalf("children: %q %q", tl[3].Child, tl[4].Child)
	}
	if tl[5].Name != "Ship" || tl[5].Duration != 2*time.Second || tl[5].Failed {
		t.Fatalf("the child's completion: %+v", tl[5])
	}
	if !tl[6].Failed || tl[6].Detail != "canceled: stuck" || tl[6].Duration != 0 {
		t.Fatalf("the orchestration's failure: %+v", tl[6])
	}
}

func TestFailureTextOfPoison(t *testing.T) {
	got := ops.FailureText(duroxide.PoisonError{AttemptCount: 6, MaxAttempts: 5, Message: "exceeded",
		MessageType: duroxide.PoisonMessageType{Kind: duroxide.PoisonActivity, ActivityName: "Charge"}})
	if got != "poison: Activity Charge message failed 6 of 5 attempts: exceeded" {
		t.Fatalf("%q", got)
	}
}
