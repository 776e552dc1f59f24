package duroxide

// DispatchRefuser is an optional Provider capability: a provider that
// may serve clients but must not serve a runtime says so, and
// durable.Start refuses it with the error RefuseDispatch returns. The
// Cosmos provider opened with Options.ClientOnly does (embedded's joined
// store, whose owner process releases every lock when it restarts, so a
// second process's runtime would see its locked work run twice). Go-only.
//
// A provider that wraps another should forward RefuseDispatch.
type DispatchRefuser interface {
	// RefuseDispatch returns nil when a runtime may fetch work from the
	// provider, else why not (an error matched with errors.Is).
	RefuseDispatch() error
}
