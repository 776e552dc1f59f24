package localcosmos

import (
	"net/http"
	"strings"
)

// Priority is a request's priority level under Cosmos DB's priority-based
// execution, from its x-ms-cosmos-priority-level header (azcosmos sets it
// from the PriorityLevel of its client or request options).
type Priority string

// The priority levels.
const (
	// PriorityHigh is a request that says High, or says nothing: the
	// service's default level for an account whose default was not
	// changed.
	PriorityHigh Priority = "High"
	// PriorityLow is a request that says Low: the first the service
	// throttles when a container is over its RU/s.
	PriorityLow Priority = "Low"
)

// priorityHeader is the request header azcosmos sends the level in
// (cosmos_headers_policy.go of azcosmos v1.5.0).
const priorityHeader = "x-ms-cosmos-priority-level"

// RequestPriority reads r's priority level without reading its body:
// Low when its x-ms-cosmos-priority-level is Low (in any case), High
// otherwise. A value that is neither is taken as High rather than
// refused: azcosmos only sends the two, and what the service answers to
// another is not known here.
func RequestPriority(r *http.Request) Priority {
	if strings.EqualFold(strings.TrimSpace(r.Header.Get(priorityHeader)), string(PriorityLow)) {
		return PriorityLow
	}
	return PriorityHigh
}
