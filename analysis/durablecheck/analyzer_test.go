package durablecheck_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/duroxide-go/cdb/analysis/durablecheck"
)

// TestAnalyzer checks every rule on testdata/src/example.com/orch (each
// construct in orchestration code, and the same constructs in activities
// and ordinary code), cross-package facts on example.com/helpers, and that
// deterministic orchestration code (example.com/clean) and the durable
// package itself (whose stub uses a goroutine, channels and a mutex) are
// not reported.
func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), durablecheck.Analyzer,
		"example.com/orch", "example.com/helpers", "example.com/clean",
		"github.com/duroxide-go/cdb/durable")
}
