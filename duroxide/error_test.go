package duroxide

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProviderErrorClassification(t *testing.T) {
	r := Retryable("fetch", "busy %d", 3)
	p := Permanent("ack", "invalid lock token %q", "t")
	if r.Error() != "fetch: busy 3" || p.Error() != `ack: invalid lock token "t"` {
		t.Errorf("messages: %q, %q", r, p)
	}
	if !errors.Is(r, ErrRetryable) || errors.Is(r, ErrPermanent) {
		t.Error("retryable classification")
	}
	if !errors.Is(p, ErrPermanent) || errors.Is(p, ErrRetryable) {
		t.Error("permanent classification")
	}
	if !IsRetryable(r) || IsRetryable(p) || IsRetryable(io.EOF) || IsRetryable(nil) {
		t.Error("IsRetryable")
	}
	// Classification survives fmt wrapping.
	wrapped := fmt.Errorf("outer: %w", p)
	if !errors.Is(wrapped, ErrPermanent) || IsRetryable(wrapped) {
		t.Error("classification lost through fmt.Errorf")
	}
	var pe *ProviderError
	if !errors.As(wrapped, &pe) || pe.Operation != "ack" {
		t.Errorf("errors.As: %#v", pe)
	}
	// A plain error matches neither class.
	if errors.Is(io.EOF, ErrRetryable) || errors.Is(io.EOF, ErrPermanent) {
		t.Error("plain error classified")
	}
}

func TestWrap(t *testing.T) {
	if Wrap("op", nil) != nil {
		t.Error("Wrap(nil) != nil")
	}
	// Any other error becomes retryable, like Rust's From<String>.
	w := Wrap("read", io.ErrUnexpectedEOF)
	if !IsRetryable(w) || !errors.Is(w, ErrRetryable) || !errors.Is(w, io.ErrUnexpectedEOF) {
		t.Errorf("Wrap(plain) = %v", w)
	}
	if w.Error() != "read: "+io.ErrUnexpectedEOF.Error() {
		t.Errorf("message %q", w)
	}
	// A ProviderError keeps its retryability and message; the original
	// stays reachable.
	inner := Permanent("ack", "duplicate event")
	w = Wrap("ack_orchestration_item", fmt.Errorf("context: %w", inner))
	var pe *ProviderError
	if !errors.As(w, &pe) || pe.Operation != "ack_orchestration_item" || pe.Message != "duplicate event" || pe.Retryable {
		t.Errorf("Wrap(permanent) = %#v", pe)
	}
	if !errors.Is(w, ErrPermanent) || errors.Is(w, ErrRetryable) || !errors.Is(w, inner) {
		t.Error("Wrap(permanent) classification")
	}
	if w.Error() != "ack_orchestration_item: duplicate event" {
		t.Errorf("message %q", w)
	}
	w = Wrap("renew", Retryable("renew", "throttled"))
	if !IsRetryable(w) {
		t.Error("Wrap(retryable) lost retryability")
	}
}

func TestProviderErrorMessageFromCause(t *testing.T) {
	e := &ProviderError{Operation: "op", Err: io.EOF}
	if e.Error() != "op: EOF" || errors.Unwrap(e) != io.EOF {
		t.Errorf("%q", e)
	}
}

func TestToInfrastructure(t *testing.T) {
	d := Retryable("ack_orchestration_item", "db busy").ToInfrastructure()
	want := InfrastructureError{Operation: "ack_orchestration_item", Message: "db busy", Retryable: true}
	if d != want {
		t.Errorf("got %#v", d)
	}
	data, err := MarshalErrorDetails(d)
	if err != nil || string(data) != `{"Infrastructure":{"operation":"ack_orchestration_item","message":"db busy","retryable":true}}` {
		t.Errorf("got %s %v", data, err)
	}
}

func TestKindedErrorsMatchTheirSentinelThroughWrapping(t *testing.T) {
	for _, kind := range []error{ErrInstanceNotFound, ErrLockLost, ErrDuplicateEvent, ErrInvalidInput, ErrTooLarge} {
		err := Kinded(kind, "ack_orchestration_item", "boom %d", 1)
		require.ErrorIs(t, err, kind)
		require.ErrorIs(t, err, ErrPermanent)
		require.Equal(t, "ack_orchestration_item: boom 1", err.Error(), "the message keeps the Rust operation name")
		wrapped := Wrap("outer", fmt.Errorf("context: %w", err))
		require.ErrorIs(t, wrapped, kind, "Wrap keeps the kind")
		for _, other := range []error{ErrInstanceNotFound, ErrLockLost, ErrDuplicateEvent, ErrInvalidInput, ErrTooLarge} {
			if other != kind {
				require.NotErrorIs(t, wrapped, other)
			}
		}
	}
	require.NotErrorIs(t, Permanent("op", "x"), ErrLockLost, "an unkinded error matches no sentinel")
}

// TestTooLargeNamesSizeAndLimit: TooLarge is permanent, matches
// ErrTooLarge even wrapped, and holds a *TooLargeError with the size and
// the limit, which its message names.
func TestTooLargeNamesSizeAndLimit(t *testing.T) {
	err := Wrap("outer", TooLarge("ack_work_item", "activity completion", 5_000_360, 2_097_152))
	require.ErrorIs(t, err, ErrTooLarge)
	require.ErrorIs(t, err, ErrPermanent)
	var tl *TooLargeError
	require.ErrorAs(t, err, &tl)
	require.Equal(t, TooLargeError{What: "activity completion", Size: 5_000_360, Limit: 2_097_152}, *tl)
	require.Equal(t, "activity completion too large: 5000360 bytes stored, the limit is 2097152 bytes", tl.Error())
	require.Equal(t, "ack_work_item: "+tl.Error(), TooLarge("ack_work_item", "activity completion", 5_000_360, 2_097_152).Error())
}
