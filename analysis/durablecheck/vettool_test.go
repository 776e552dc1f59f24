package durablecheck_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVetTool builds cmd/durablecheck and runs it as go vet's tool on a
// fixture that uses the real durable package: vet must fail and report
// the construct in the orchestration's body and the call, in another
// package of the module, that reaches one.
func TestVetTool(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short, which asks for quick tests: this one builds the vet tool and runs go vet over the real durable package; .ci/run runs it")
	}
	bin := filepath.Join(t.TempDir(), "durablecheck")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/durablecheck")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	vet := exec.CommandContext(t.Context(), "go", "vet", "-vettool="+bin, "./internal/vetfixture/...")
	out, err := vet.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("go vet: want a failing exit, got %v\n%s", err, out)
	}
	for _, want := range []string{
		"orch.go:17:15: time.Now in orchestration code: use ctx.UTCNow()",
		"orch.go:23:27: call to helper.Stamp reaches time.Now (helper.go:7) in orchestration code",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("go vet output lacks %q:\n%s", want, out)
		}
	}
}
