package localcosmos

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// In-process transport.
//
// A client in the server's own process (the embedded store, tests) can
// skip the loopback socket: [Server.InProcessTransport] hands each request
// to the server's handler in the calling goroutine and returns the
// recorded response. The request and the response are the ones the socket
// would carry — same handler, headers, bodies and [Interceptor] — without
// the socket's system calls and the hand-offs between the client's, the
// connection's and the handler's goroutines, which on a busy machine each
// wait to be scheduled. An interception that drops the connection
// (Interception.Drop, before or after applying the request) becomes a
// transport error, as a reset connection is for the SDK.

// errTransportClosed is returned for requests sent after Close.
var errTransportClosed = errors.New("localcosmos: server closed")

// errConnectionDropped is what a dropped connection looks like in process.
var errConnectionDropped = errors.New("localcosmos: connection closed by the server")

// inProcess tracks requests served in process, so that Close waits for
// them as http.Server.Shutdown waits for those on sockets.
type inProcess struct {
	mu     sync.RWMutex
	closed bool
	wg     sync.WaitGroup
}

// InProcessTransport returns an http.RoundTripper that serves requests by
// calling the server directly, in the caller's goroutine (see above). Use
// it as the SDK's transport:
//
//	opts := &azcosmos.ClientOptions{}
//	opts.Transport = &http.Client{Transport: srv.InProcessTransport()}
//
// The request's URL may name the server's endpoint or any other host.
// After Close every request fails.
func (s *Server) InProcessTransport() http.RoundTripper { return inProcessTransport{s} }

type inProcessTransport struct{ s *Server }

// RoundTrip implements http.RoundTripper.
func (t inProcessTransport) RoundTrip(req *http.Request) (resp *http.Response, err error) {
	ip := &t.s.inproc
	ip.mu.RLock()
	if ip.closed {
		ip.mu.RUnlock()
		return nil, errTransportClosed
	}
	ip.wg.Add(1)
	ip.mu.RUnlock()
	defer ip.wg.Done()
	if err := unsendable(req.Header); err != nil {
		return nil, err
	}

	r := *req
	if r.Body == nil {
		r.Body = http.NoBody
	}
	r.RequestURI = req.URL.RequestURI()
	w := &recorder{header: http.Header{}}
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler { //nolint:errorlint // the sentinel value itself is panicked
				panic(v)
			}
			resp, err = nil, errConnectionDropped
		}
	}()
	t.s.ServeHTTP(w, &r)
	if err := req.Context().Err(); err != nil && !w.wrote {
		return nil, err
	}
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	body := w.body
	h := w.header
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}

// unsendable refuses, as net/http's transport does before it writes a
// byte, a header value no socket can carry (a control character but the
// horizontal tab): a request the wire would refuse must not reach the
// handler in process.
func unsendable(h http.Header) error {
	for k, vs := range h {
		for _, v := range vs {
			for i := 0; i < len(v); i++ {
				if b := v[i]; (b < ' ' && b != '\t') || b == 0x7f {
					return fmt.Errorf("net/http: invalid header field value for %q", k)
				}
			}
		}
	}
	return nil
}

// recorder is the http.ResponseWriter of an in-process request. It is not
// an http.Hijacker, so an interception that drops the connection aborts the
// handler (http.ErrAbortHandler), which RoundTrip turns into an error.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   []byte
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if w.wrote {
		return
	}
	w.wrote, w.status = true, status
}

// Write keeps b itself when it is the whole body (the server writes a
// response's body once and never reuses it), so the body is not copied.
func (w *recorder) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.body == nil {
		w.body = b[:len(b):len(b)]
	} else {
		w.body = append(w.body, b...)
	}
	return len(b), nil
}

// closeInProcess refuses new in-process requests and waits for those being
// served (an Interceptor's delays are its owner's to cut short first, as
// cosmostest's Close does).
func (s *Server) closeInProcess() {
	s.inproc.mu.Lock()
	s.inproc.closed = true
	s.inproc.mu.Unlock()
	s.inproc.wg.Wait()
}
