package replayer

import (
	"testing"

	"github.com/duroxide-go/cdb/durable"
)

// RequireReplays fails t, listing each execution that does not replay,
// unless reg replays every execution src yields. A source that cannot be
// read fails t too. opts are Replay's.
func RequireReplays(t testing.TB, reg *durable.Registry, src Source, opts ...Options) {
	t.Helper()
	rep, err := Replay(t.Context(), reg, src, opts...)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	for _, f := range rep.Failures() {
		t.Errorf("does not replay: %s", f)
	}
}
