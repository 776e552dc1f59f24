package replayer

import (
	"testing"

	"github.com/duroxide-go/cdb/durable"
)

// RequireReplays fails t, listing each execution that does not replay,
// unless reg replays every execution src yields. A source that cannot be
// read fails t too.
func RequireReplays(t testing.TB, reg *durable.Registry, src Source) {
	t.Helper()
	rep, err := Replay(t.Context(), reg, src)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	for _, f := range rep.Failures() {
		t.Errorf("does not replay: %s", f)
	}
}
