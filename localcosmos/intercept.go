package localcosmos

import "net/http"

// Interceptor sees every request the server receives before the server
// handles it, and may disturb it: delay it, refuse it, or drop its
// connection before or after applying it. It is the hook package
// cosmostest injects faults and latency through; a production server has
// none ([Options].Intercept nil) and handles every request as it comes.
type Interceptor interface {
	// Intercept is called in the request's goroutine, once the request is
	// classified and counted, before it is authenticated or applied. It
	// may block (to add latency) and must not read the request body.
	// [Server.Close] waits for requests being intercepted, so a blocking
	// interceptor must return when its owner closes (cosmostest's Close
	// cuts its delays short before closing the core).
	Intercept(op Op, r *http.Request) Interception
}

// Interception says what to do with an intercepted request. The zero
// value handles it as usual.
type Interception struct {
	// Abandon ends the request without applying it or writing anything
	// (the client has gone away).
	Abandon bool
	// Drop closes the connection instead of answering: before the request
	// is applied, or after with AfterApply. The client sees a transport
	// error (in process, [Server.InProcessTransport] returns one).
	Drop bool
	// Refuse, if set, is answered instead of the request's result: without
	// applying the request, or after applying it with AfterApply (an
	// ambiguous outcome: the change stands, the client sees an error).
	Refuse *Refusal
	// AfterApply applies the request before Drop or Refuse take effect.
	AfterApply bool
}

// Refusal is an error answer in the service's format: the status, the
// x-ms-substatus header when SubStatus is set, the given headers and a
// {"code","message"} body with the message the service gives for Status.
type Refusal struct {
	// Status is the HTTP status, for example 429, 503 or 408.
	Status int
	// SubStatus, if non-zero, is sent in x-ms-substatus.
	SubStatus int
	// Headers are added to the answer, for example
	// {"x-ms-retry-after-ms": "10"}.
	Headers map[string]string
}

// intercept runs the interceptor, if any.
func (s *Server) intercept(op Op, r *http.Request) Interception {
	if s.opts.Intercept == nil {
		return Interception{}
	}
	return s.opts.Intercept.Intercept(op, r)
}

// refusalError is the error a Refusal answers.
func refusalError(f *Refusal) *apiError {
	e := newSubError(f.Status, f.SubStatus, "%s", refusalMessage(f.Status))
	e.Headers = map[string]string{}
	for k, v := range f.Headers {
		e.Headers[k] = v
	}
	return e
}

// RequestOp classifies a request as the server does, without reading its
// body: what an [Interceptor] is told, for a request it has not seen.
func RequestOp(r *http.Request) Op {
	req, _ := parseRequest(r)
	return req.op
}
