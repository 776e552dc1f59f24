package cosmos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// Error is a failed Cosmos request. StatusCode and SubStatus are the
// service's; StatusCode is 0 for transport failures and canceled contexts.
type Error struct {
	Call       Call
	StatusCode int
	SubStatus  int
	RetryAfter time.Duration
	ActivityID string
	// Message is the service's explanation, when it sent one.
	Message string
	Err     error
}

// Error describes the request, the status and the service message.
func (e *Error) Error() string {
	if e.StatusCode == 0 {
		return fmt.Sprintf("cosmos %s: %v", e.Call.Op, e.Err)
	}
	msg := fmt.Sprintf("cosmos %s: status %d", e.Call.Op, e.StatusCode)
	if e.SubStatus != 0 {
		msg += fmt.Sprintf(" (substatus %d)", e.SubStatus)
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.ActivityID != "" {
		msg += " (activity " + e.ActivityID + ")"
	}
	return msg
}

// Unwrap returns the SDK's (or a hook's) error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the Condition of e's status, so that
// errors.Is(err, ErrConflict) holds for a 409.
func (e *Error) Is(target error) bool { return matches(target, e.StatusCode) }

// Retryable reports whether repeating the request can succeed. See the
// error table in docs/cosmos.md for the reasoning behind each status.
func (e *Error) Retryable() bool {
	switch e.StatusCode {
	case 0:
		// Transport failure or canceled context. Cancellation is not worth
		// retrying; everything else (reset, timeout, DNS) is transient.
		return !errors.Is(e.Err, context.Canceled)
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusGone,
		449, // RetryWith: concurrent update in the service
		http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	case http.StatusPreconditionFailed:
		// An ETag race: re-reading and trying again can succeed. Callers
		// for which 412 means "your lock is gone" map it to permanent.
		return true
	case http.StatusForbidden:
		return e.SubStatus == 3 || e.SubStatus == 1008 // write forbidden / account not found during failover
	}
	return false
}

// Classify turns an error from azcosmos (or a hook) into *Error; an
// error that already holds one keeps it (and gains call if it had none).
func Classify(call Call, err error) error {
	var ce *Error
	if errors.As(err, &ce) {
		if ce.Call.Op == "" {
			ce.Call = call
		}
		return ce
	}
	out := &Error{Call: call, Err: err}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		out.StatusCode = re.StatusCode
		var msgActivity string
		out.Message, msgActivity = serviceMessage(re.RawResponse)
		out.ActivityID = msgActivity
		if re.RawResponse != nil {
			h := re.RawResponse.Header
			out.SubStatus, _ = strconv.Atoi(h.Get("x-ms-substatus"))
			if id := h.Get("x-ms-activity-id"); id != "" {
				out.ActivityID = id
			}
			if ms, perr := strconv.ParseFloat(h.Get("x-ms-retry-after-ms"), 64); perr == nil {
				out.RetryAfter = time.Duration(ms * float64(time.Millisecond))
			}
		}
	}
	return out
}

// StatusOf returns the status of the *Error err holds, or 0.
func StatusOf(err error) int {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.StatusCode
	}
	return 0
}

// MaxMessageBytes bounds the service message kept on an error, so logs
// stay readable; the ActivityId is kept even when the rest is cut.
const MaxMessageBytes = 1024

// serviceMessage decodes the service's {"code","message"} error body as
// JSON (escapes such as \r\n and \" become what they stand for), folds
// its line breaks into "; " so one error stays one log line, and bounds it
// on a UTF-8 boundary. It returns the ActivityId the message names, which
// the gateway repeats there, for responses whose header lacks it.
func serviceMessage(resp *http.Response) (msg, activityID string) {
	if resp == nil {
		return "", ""
	}
	body, err := runtime.Payload(resp)
	if err != nil || len(body) == 0 {
		return "", ""
	}
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil || e.Message == "" {
		return "", ""
	}
	return tidyMessage(e.Message)
}

func tidyMessage(m string) (msg, activityID string) {
	lines := strings.FieldsFunc(m, func(r rune) bool { return r == '\r' || r == '\n' })
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	m = strings.Join(slices.DeleteFunc(lines, func(s string) bool { return s == "" }), "; ")
	if i := strings.Index(m, "ActivityId: "); i >= 0 {
		rest := m[i+len("ActivityId: "):]
		if j := strings.IndexAny(rest, ",; "); j >= 0 {
			rest = rest[:j]
		}
		activityID = rest
	}
	if len(m) > MaxMessageBytes {
		cut := MaxMessageBytes
		for cut > 0 && !utf8.RuneStart(m[cut]) {
			cut--
		}
		m = m[:cut] + "…"
		if activityID != "" && !strings.Contains(m, activityID) {
			m += " (ActivityId: " + activityID + ")"
		}
	}
	return m, activityID
}

// MayHaveApplied reports whether a failed write may nevertheless have taken
// effect: its connection failed after it was sent (status 0: reset, drop,
// timeout, canceled context), the service timed out (408) or failed (5xx).
// A write refused with any other status, a 429 included, was not applied.
// Callers that must undo their own writes treat such a write as applied.
func MayHaveApplied(err error) bool {
	var ce *Error
	if !errors.As(err, &ce) {
		return err != nil
	}
	return ce.StatusCode == 0 || ce.StatusCode == http.StatusRequestTimeout || ce.StatusCode >= http.StatusInternalServerError
}

// IsRetryable reports whether err is an *Error that repeating can fix.
func IsRetryable(err error) bool {
	var ce *Error
	return errors.As(err, &ce) && ce.Retryable()
}
