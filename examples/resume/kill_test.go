//go:build unix

package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/embedded"
)

// exampleEnv is the environment the example runs in: no account, the
// store in dir.
func exampleEnv(dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COSMOS_") && !strings.HasPrefix(kv, embedded.EnvDataDir+"=") {
			env = append(env, kv)
		}
	}
	return append(env, embedded.EnvDataDir+"="+dir)
}

// TestResumeAfterKill9 is the three commands of docs/orchestrations.md: build and run the
// example, SIGKILL it once the first order completed (later ones still
// wait on their durable timers, a second apart), run it again. The second
// run must finish every order, and every instance in the store must have
// completed exactly once.
func TestResumeAfterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short, which asks for quick tests: this one builds the example and runs it twice with a SIGKILL between; `go test ./...` (the README command) and .ci/run run it")
	}
	dir := t.TempDir()
	bin := filepath.Join(t.TempDir(), "resume")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	args := []string{"-n", "8", "-stagger", "1s"}

	first := exec.CommandContext(t.Context(), bin, args...)
	first.Env = exampleEnv(dir)
	stdout, err := first.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	var seen []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.HasPrefix(sc.Text(), "completed  order-01") {
			if err := first.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	_, _ = bufio.NewReader(stdout).WriteTo(&bytes.Buffer{})
	err = first.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("first run was not killed midway (%v); its output:\n%s", err, strings.Join(seen, "\n"))
	}
	t.Logf("first run, killed:\n%s", strings.Join(seen, "\n"))

	second := exec.CommandContext(t.Context(), bin, args...)
	second.Env = exampleEnv(dir)
	out, err := second.CombinedOutput()
	t.Logf("second run:\n%s", out)
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	// order-01 completed before the kill, so the second run resumes.
	if !regexp.MustCompile(`started    8 orders \(order-01 \.\. order-08\): [1-8] already completed`).Match(out) {
		t.Error("second run does not report the orders the first completed")
	}
	if !strings.Contains(string(out), "summary    8 of 8 orders completed exactly once") {
		t.Fatal("second run does not report every order completed exactly once")
	}

	// Check the store itself, not only what the example printed.
	st, err := embedded.Open(t.Context(), &embedded.Options{DataDir: dir, Log: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ids, err := st.Provider.Admin().ListInstances(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 8 {
		t.Fatalf("store holds %d instances %v, want the 8 orders", len(ids), ids)
	}
	once, err := completedOnce(t.Context(), durable.NewClient(st.Provider), ids)
	if err != nil {
		t.Fatal(err)
	}
	if once != 8 {
		t.Fatalf("%d of 8 instances completed exactly once", once)
	}
}
