package localcosmos

import (
	"fmt"
	"net/http"
)

// serviceVersion is the service build the error messages claim, as the real
// service appends it to every message.
const serviceVersion = "Microsoft.Azure.Documents.Common/2.14.0"

// Messages copied from the real service (status codes and texts as Azure Cosmos DB
// for NoSQL answers them through the gateway).
const (
	msgNotFound            = "Entity with the specified id does not exist in the system. More info: https://aka.ms/cosmosdb-tsg-not-found"
	msgResourceNotFound    = "Resource Not Found. Learn more: https://aka.ms/cosmosdb-tsg-not-found"
	msgOwnerNotFound       = "Owner resource does not exist"
	msgConflict            = "Entity with the specified id already exists in the system."
	msgResourceConflict    = "Resource with specified id, name, or unique index already exists."
	msgUniqueConflict      = "Unique index constraint violation."
	msgPrecondition        = "Operation cannot be performed because one of the specified precondition is not met."
	msgPatchPrecondition   = "One of the specified pre-condition is not met."
	msgTooLarge            = "Request size is too large"
	msgPKMismatch          = "PartitionKey extracted from document doesn't match the one specified in the header. Learn more: https://aka.ms/CosmosDB/sql/errors/wrong-pk-value"
	msgPKMissing           = "PartitionKey value must be supplied for this operation."
	msgPKFewer             = "The partition key supplied in x-ms-partitionkey header has fewer components than defined in the the collection."
	msgPKMore              = "The partition key supplied in x-ms-partitionkey header has more components than defined in the the collection."
	msgPKFormat            = "The partition key supplied in x-ms-partitionkey header has incorrect format."
	msgIDMissing           = "The input content is invalid because the required properties - 'id; ' - are missing"
	msgInvalidPayload      = "The request payload is invalid. Ensure to provide a valid request payload."
	msgBatchTooMany        = "Batch request has more operations than what is supported."
	msgBatchEmpty          = "Batch request has no operations."
	msgAuthMissing         = "Required Header authorization is missing. Ensure a valid Authorization token is passed."
	msgDateInvalid         = "The input date header is invalid format. Please pass in RFC 1123 style date format."
	msgLocalAuthDisabled   = "Local Authorization is disabled. Use an AAD token to authorize all requests."
	msgCrossPartitionOff   = "Cross partition query is required but disabled. Please set x-ms-documentdb-query-enablecrosspartition to true, specify x-ms-documentdb-partitionkey, or revise your query to avoid this exception."
	msgInvalidContinuation = "Invalid Continuation Token"
	msgQueryContentType    = "The value 'application/json' specified for the header 'Content-Type' is invalid for a query. Use 'application/query+json'."
)

// Substatus codes the real service sets on the errors this server produces.
const (
	subPKMismatch      = 1001 // 400: partition key mismatch
	subOwnerNotFound   = 1003 // 404: database or container missing
	subCrossPartition  = 1004 // 400: cross partition query not servable by the gateway
	subAADControlPlane = 5300 // 403: control-plane request with a data-plane AAD token
)

// apiError is an error response in the shape the service sends:
// HTTP status, optional x-ms-substatus, and a {"code","message"} body.
type apiError struct {
	Status    int
	SubStatus int
	Message   string
	Headers   map[string]string
}

func (e *apiError) Error() string {
	if e.SubStatus != 0 {
		return fmt.Sprintf("%d/%d %s", e.Status, e.SubStatus, e.Message)
	}
	return fmt.Sprintf("%d %s", e.Status, e.Message)
}

func newError(status int, format string, args ...any) *apiError {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	return &apiError{Status: status, Message: msg}
}

func newSubError(status, sub int, format string, args ...any) *apiError {
	e := newError(status, format, args...)
	e.SubStatus = sub
	return e
}

func errBadRequest(format string, args ...any) *apiError {
	return newError(http.StatusBadRequest, format, args...)
}

func errNotFound() *apiError { return newError(http.StatusNotFound, msgNotFound) }

func errConflict() *apiError { return newError(http.StatusConflict, msgConflict) }

func errPrecondition() *apiError { return newError(http.StatusPreconditionFailed, msgPrecondition) }

func errTooLarge() *apiError { return newError(http.StatusRequestEntityTooLarge, msgTooLarge) }

func errOwnerNotFound() *apiError {
	return newSubError(http.StatusNotFound, subOwnerNotFound, msgOwnerNotFound)
}

// errorCode is the "code" field of an error body for an HTTP status, as the
// service spells it.
func errorCode(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "BadRequest"
	case http.StatusUnauthorized:
		return "Unauthorized"
	case http.StatusForbidden:
		return "Forbidden"
	case http.StatusNotFound:
		return "NotFound"
	case http.StatusMethodNotAllowed:
		return "MethodNotAllowed"
	case http.StatusRequestTimeout:
		return "RequestTimeout"
	case http.StatusConflict:
		return "Conflict"
	case http.StatusGone:
		return "Gone"
	case http.StatusPreconditionFailed:
		return "PreconditionFailed"
	case http.StatusRequestEntityTooLarge:
		return "RequestEntityTooLarge"
	case http.StatusFailedDependency:
		return "FailedDependency"
	case http.StatusTooManyRequests:
		return "TooManyRequests"
	case 449:
		return "RetryWith"
	case http.StatusInternalServerError:
		return "InternalServerError"
	case http.StatusBadGateway:
		return "BadGateway"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailable"
	case http.StatusGatewayTimeout:
		return "GatewayTimeout"
	}
	if t := http.StatusText(status); t != "" {
		return t
	}
	return fmt.Sprint(status)
}

// refusalMessage is the message a [Refusal] carries (an injected fault,
// for cosmostest), modelled on what the service says for that status.
func refusalMessage(status int) string {
	switch status {
	case http.StatusTooManyRequests:
		return `Message: {"Errors":["Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later. Learn more: http://aka.ms/cosmosdb-error-429"]}`
	case http.StatusServiceUnavailable:
		return `Message: {"Errors":["Service is currently unavailable. More info: https://aka.ms/cosmosdb-tsg-service-unavailable"]}`
	case http.StatusRequestTimeout:
		return `Message: {"Errors":["Request timed out. More info: https://aka.ms/cosmosdb-tsg-request-timeout"]}`
	case http.StatusGone:
		return `Message: {"Errors":["The requested resource is no longer available at the server."]}`
	case http.StatusInternalServerError:
		return `Message: {"Errors":["An unknown error occurred while processing this request."]}`
	}
	return fmt.Sprintf("Message: {\"Errors\":[%q]}", "cosmostest: injected fault "+http.StatusText(status))
}
