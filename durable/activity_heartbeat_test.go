package durable

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/duroxide-go/cdb/duroxide"
)

// TestHeartbeatRefusesBadDetailsAtOnce: details the store could not hold
// or the codec cannot encode are refused by Heartbeat itself, typed, and
// not recorded; a first attempt has no details to resume from.
func TestHeartbeatRefusesBadDetailsAtOnce(t *testing.T) {
	actx := detachedActivityContext(context.Background(), "i", "A", nil)
	if _, ok, err := HeartbeatDetails[int](actx); ok || err != nil {
		t.Fatalf("a first attempt: ok %v, err %v", ok, err)
	}
	if _, ok := actx.LastHeartbeat(); ok {
		t.Fatal("a first attempt has a last heartbeat")
	}
	if err := actx.Heartbeat(strings.Repeat("a", duroxide.MaxHeartbeatDetailsBytes-2)); err != nil {
		t.Fatalf("details at the limit: %v", err)
	}
	err := actx.Heartbeat(strings.Repeat("a", duroxide.MaxHeartbeatDetailsBytes-1))
	var tl *duroxide.TooLargeError
	if !errors.Is(err, duroxide.ErrTooLarge) || !errors.As(err, &tl) || tl.Limit != duroxide.MaxHeartbeatDetailsBytes {
		t.Fatalf("details over the limit: %v", err)
	}
	if err := actx.Heartbeat(make(chan int)); !errors.Is(err, ErrUnsupportedType) {
		t.Fatalf("details the codec cannot encode: %v", err)
	}
	if err := actx.Heartbeat("\xff"); !errors.Is(err, duroxide.ErrInvalidInput) {
		t.Fatalf("details that are not UTF-8: %v", err)
	}
	if _, seq, _ := actx.info.heartbeat.pending(); seq != 1 {
		t.Fatalf("refused details were recorded: %d heartbeats", seq)
	}
	if err := NewRegistry().SetActivityPolicy("A", ActivityPolicy{HeartbeatTimeout: -1}); err == nil {
		t.Fatal("a negative heartbeat timeout was accepted")
	}
}

// TestHeartbeatTimeoutFailureMatches: the failure text of a heartbeat
// timeout matches both sentinels; a plain timeout only ErrTimedOut.
func TestHeartbeatTimeoutFailureMatches(t *testing.T) {
	w := &activityWork{item: duroxide.ActivityExecuteItem{Instance: "i", ExecutionID: 1, ID: 2}}
	f := heartbeatTimeoutFailure(w, 1500000000).(duroxide.ActivityFailedItem)
	err := &TaskFailedError{Message: displayMessage(f.Details)}
	if !errors.Is(err, ErrHeartbeatTimeout) || !errors.Is(err, ErrTimedOut) {
		t.Fatalf("%q does not match both sentinels", err.Message)
	}
	if errors.Is(&TaskFailedError{Message: timeoutMessage}, ErrHeartbeatTimeout) {
		t.Fatal("a per-attempt timeout matches ErrHeartbeatTimeout")
	}
}
