package cosmos

import (
	"errors"
	"fmt"
	"net/http"
)

// Callers decide by what a failure means (the document exists, the ETag
// moved, the document is gone), not by numbers: every such test is
// errors.Is(err, ErrX), which *Error and *BatchError answer from their
// status, so the mapping from statuses to meanings lives here only.

// Condition is a named outcome of a Cosmos request, matched with
// errors.Is against an *Error or a *BatchError.
type Condition struct {
	status int
	name   string
}

// Error names the condition and its status.
func (c *Condition) Error() string { return fmt.Sprintf("cosmos: %s (%d)", c.name, c.status) }

// Status is the HTTP status the condition stands for.
func (c *Condition) Status() int { return c.status }

// The conditions callers test for.
var (
	// ErrBadRequest (400): the service refused the request as malformed,
	// e.g. an id it cannot store.
	ErrBadRequest = &Condition{http.StatusBadRequest, "bad request"}
	// ErrForbidden (403): the credential may not do this (SubStatus says why).
	ErrForbidden = &Condition{http.StatusForbidden, "forbidden"}
	// ErrNotFound (404): the document (or its container) does not exist.
	ErrNotFound = &Condition{http.StatusNotFound, "not found"}
	// ErrConflict (409): a document with that id already exists.
	ErrConflict = &Condition{http.StatusConflict, "conflict"}
	// ErrPreconditionFailed (412): the If-Match ETag no longer matches.
	ErrPreconditionFailed = &Condition{http.StatusPreconditionFailed, "precondition failed"}
	// ErrTooLarge (413): the document or request exceeds the service limits.
	ErrTooLarge = &Condition{http.StatusRequestEntityTooLarge, "request entity too large"}
	// ErrThrottled (429): the request was refused for the request-unit
	// budget and was not executed.
	ErrThrottled = &Condition{http.StatusTooManyRequests, "throttled"}
)

var known = []*Condition{ErrBadRequest, ErrForbidden, ErrNotFound, ErrConflict, ErrPreconditionFailed, ErrTooLarge, ErrThrottled}

// StatusCondition returns the Condition of status: the named one when
// there is one, else a new Condition that still matches by status.
func StatusCondition(status int) *Condition {
	for _, c := range known {
		if c.status == status {
			return c
		}
	}
	return &Condition{status, "status"}
}

// matches reports whether target is a Condition for status.
func matches(target error, status int) bool {
	c, ok := target.(*Condition)
	return ok && status != 0 && c.status == status
}

// StatusCodes returns the statuses of conds, for documents that record a
// tolerate list (conds that are not Conditions are skipped).
func StatusCodes(conds []error) []int {
	var out []int
	for _, e := range conds {
		var c *Condition
		if errors.As(e, &c) {
			out = append(out, c.status)
		}
	}
	return out
}

// Conditions is the inverse of StatusCodes.
func Conditions(statuses []int) []error {
	var out []error
	for _, s := range statuses {
		out = append(out, StatusCondition(s))
	}
	return out
}
