// Package leaktest fails a test binary that leaves goroutines running, so a
// provider, server or runtime that forgets to stop a loop is caught in the
// package that owns it. Each test package calls it from TestMain:
//
//	func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }
//
// Start with [VerifyTestMain].
package leaktest

import (
	"testing"

	"go.uber.org/goleak"
)

// ignored are goroutines owned by the standard library rather than by the
// code under test: idle keep-alive connections of http.Transport (closed by
// the transport after its idle timeout, not by the client's owner).
var ignored = []goleak.Option{
	goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
	goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
}

// VerifyTestMain runs the tests and then fails if goroutines other than the
// ignored ones are still running.
func VerifyTestMain(m *testing.M) {
	goleak.VerifyTestMain(m, ignored...)
}

// Find returns an error naming the goroutines, other than the ignored ones
// and the caller's, that are still running.
func Find() error {
	return goleak.Find(ignored...)
}
