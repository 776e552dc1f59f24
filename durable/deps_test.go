package durable_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDurableLinksNoCosmosSDK: package durable runs on any provider, and
// modules that import it without the Cosmos provider (analysis/durablecheck
// among them, whose go.sum has no Azure entries) must build without the
// Azure SDK. The test seam, which durable imports, is where that breaks
// most easily: internal/testhooks names the Cosmos fault hooks through
// internal/cosmoshook (standard library only), never internal/cosmos,
// which links azcosmos.
func TestDurableLinksNoCosmosSDK(t *testing.T) {
	// The test runs under go test, so the toolchain is there: on PATH,
	// or the one that built this binary. Without it the guarantee is
	// unchecked, which is a failure, not a skip.
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(gobin, "list", "-deps", "github.com/duroxide-go/cdb/durable").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list -deps: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -deps: %v", err)
	}
	var azure []string
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "github.com/Azure/") {
			azure = append(azure, dep)
		}
	}
	if len(azure) > 0 {
		t.Fatalf("package durable links the Azure SDK:\n%s", strings.Join(azure, "\n"))
	}
}
