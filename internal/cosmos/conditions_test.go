package cosmos

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConditionsMatchByStatus: errors.Is answers for an *Error and a
// *BatchError (also wrapped) from the status, only for that status, and
// never for a transport failure (status 0).
func TestConditionsMatchByStatus(t *testing.T) {
	conds := map[int]error{
		http.StatusBadRequest: ErrBadRequest, http.StatusForbidden: ErrForbidden, http.StatusNotFound: ErrNotFound,
		http.StatusConflict: ErrConflict, http.StatusPreconditionFailed: ErrPreconditionFailed,
		http.StatusRequestEntityTooLarge: ErrTooLarge, http.StatusTooManyRequests: ErrThrottled,
	}
	for status, want := range conds {
		for _, err := range []error{
			&Error{StatusCode: status},
			&BatchError{StatusCode: status, Index: 1},
			fmt.Errorf("wrapped: %w", &Error{StatusCode: status}),
		} {
			for other, cond := range conds {
				require.Equal(t, other == status, errors.Is(err, cond), "%v is %v", err, cond)
			}
			require.ErrorIs(t, err, want)
			require.ErrorIs(t, err, StatusCondition(status))
		}
	}
	transport := &Error{Err: errors.New("connection reset")}
	for _, cond := range conds {
		require.NotErrorIs(t, transport, cond)
	}
	require.ErrorIs(t, &Error{StatusCode: 449}, StatusCondition(449), "an unnamed status still matches by number")
}

// TestConditionsStatusCodesRoundTrip: a tolerate list recorded as
// statuses (journal documents) reads back as conditions that match the
// same failures.
func TestConditionsStatusCodesRoundTrip(t *testing.T) {
	codes := StatusCodes([]error{ErrNotFound, ErrPreconditionFailed})
	require.Equal(t, []int{404, 412}, codes)
	back := Conditions(codes)
	require.ErrorIs(t, &BatchError{StatusCode: 412}, back[1])
	require.Nil(t, StatusCodes(nil), "an empty list must stay omitted from documents")
	require.Nil(t, Conditions(nil))
}
