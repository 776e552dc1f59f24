package cosmostest

// TB is the part of testing.TB that New uses. *testing.T, *testing.B and
// *testing.F satisfy it; taking this interface instead of testing.TB
// keeps package testing out of binaries that use cosmostest (such as
// cmd/cosmostest).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// New starts a server for the test tb, failing it if the server cannot
// start, and closes the server when the test ends. Programs use
// NewServer, which returns the error and leaves Close to the caller.
func New(tb TB, opts *Options) *Server {
	tb.Helper()
	s, err := NewServer(opts)
	if err != nil {
		tb.Fatalf("cosmostest: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}
