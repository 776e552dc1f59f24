package query

import (
	"encoding/json"
	"fmt"
)

// Error is a query failure shaped like the error body Cosmos DB returns.
//
// Status and SubStatus are the HTTP status and the x-ms-substatus header;
// Code is the "code" field of the JSON error body (for example "BadRequest");
// Message is the "message" field exactly as the service writes it, minus the
// "\r\nActivityId: ..." trailer that the HTTP layer appends. For query
// compilation errors that message is itself a JSON document
// ({"errors":[{"severity":"Error","location":{...},"code":"SC1001","message":"..."}]}),
// because that is what the real service sends and what client code parses.
type Error struct {
	Status    int
	SubStatus int
	Code      string
	Message   string

	detail string // human-readable text inside Message, for Error() and Detail()
}

// Error implements the error interface.
func (e *Error) Error() string {
	d := e.detail
	if d == "" {
		d = e.Message
	}
	return fmt.Sprintf("query: %d/%d %s: %s", e.Status, e.SubStatus, e.Code, d)
}

// Detail returns the human-readable sentence inside Message (for example
// "Syntax error, incorrect syntax near 'FORM'."), without the JSON wrapper.
func (e *Error) Detail() string {
	if e.detail != "" {
		return e.detail
	}
	return e.Message
}

// scError builds a compilation error in the service's query-error format:
// the message is a JSON document with one entry carrying a location (byte
// offsets into the query text) and an SC code. SC1001 is a syntax error,
// SC2001 an unresolved identifier, SC2005 an unknown function and SC2050 a
// wrong argument count — the codes the real service uses for these.
func scError(code string, sp span, msg string) *Error {
	type location struct {
		Start int `json:"start"`
		End   int `json:"end"`
	}
	type entry struct {
		Severity string   `json:"severity"`
		Location location `json:"location"`
		Code     string   `json:"code"`
		Message  string   `json:"message"`
	}
	body := struct {
		Errors []entry `json:"errors"`
	}{Errors: []entry{{Severity: "Error", Location: location{sp.start, sp.end}, Code: code, Message: msg}}}
	b, _ := json.Marshal(body)
	return &Error{Status: 400, Code: "BadRequest", Message: string(b), detail: msg}
}

// errorsError builds an error in the backend's {"Errors":["..."]} format,
// which the service uses for failures found while planning or executing a
// query that compiled (missing composite index, excluded ORDER BY path, ...).
func errorsError(msg string) *Error {
	b, _ := json.Marshal(struct {
		Errors []string `json:"Errors"`
	}{[]string{msg}})
	return &Error{Status: 400, Code: "BadRequest", Message: string(b), detail: msg}
}

// unsupportedError reports a construct the real service accepts but this fake
// does not implement. It is deliberately worded so nobody mistakes it for a
// Cosmos DB message: a test that hits it should be changed or the fake extended.
func unsupportedError(what string) *Error {
	msg := fmt.Sprintf("cosmostest: %s is not supported by the in-process Cosmos DB fake (the real service accepts it).", what)
	b, _ := json.Marshal(struct {
		Errors []string `json:"Errors"`
	}{[]string{msg}})
	return &Error{Status: 400, Code: "BadRequest", Message: string(b), detail: msg}
}

// GatewayCrossPartitionMessage is the text the real gateway returns (400,
// substatus 1004) for a cross-partition query that needs state across
// partitions, which azcosmos v1.5.0 cannot handle because it has no client
// query engine. Taken verbatim from service responses quoted in
// Azure/azure-sdk-for-go#23128.
const GatewayCrossPartitionMessage = "The provided cross partition query can not be directly served by the gateway. " +
	"This is a first chance (internal) exception that all newer clients will know how to handle gracefully. " +
	"This exception is traced, but unless you see it bubble up as an exception (which only happens on older SDK clients), " +
	"then you can safely ignore this message."

func gatewayError() *Error {
	return &Error{Status: 400, SubStatus: 1004, Code: "BadRequest", Message: GatewayCrossPartitionMessage,
		detail: GatewayCrossPartitionMessage}
}
