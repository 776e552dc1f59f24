package embedded

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable"
)

// serviceEnv makes the test binary a service on the embedded store
// instead of running its tests (TestMain): "slow" runs an activity that
// never ends (the test kills the process), "fast" the same activity at
// once. Both hold every lock for ten minutes, far longer than the test
// waits, so work another run left locked only finishes in time if Open
// released those locks.
const serviceEnv = "EMBEDDED_TEST_SERVICE"

const (
	recoveryInstance = "recovery-order"
	longLock         = 10 * time.Minute
)

// runService is the service: start the order (once: a second start of
// the id is refused and ignored), run until it completes, print its
// output. It returns the process's exit status.
func runService(mode string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := Open(ctx, &Options{Log: io.Discard})
	if err != nil {
		fmt.Println("open:", err)
		return 2
	}
	defer st.Close()
	reg := durable.NewRegistry()
	err = durable.RegisterActivity(reg, "Pack", func(ac durable.ActivityContext, in string) (string, error) {
		if mode == "slow" {
			fmt.Println("packing")
			<-ac.Done()
		}
		return "packed " + in, nil
	})
	if err == nil {
		err = durable.RegisterOrchestration(reg, "Order", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			return durable.CallActivity[string](ctx, "Pack", in).Await()
		})
	}
	if err != nil {
		fmt.Println("register:", err)
		return 2
	}
	rt, err := durable.Start(ctx, st.Provider, reg, &durable.Options{WorkerLockTimeout: longLock, OrchestratorLockTimeout: longLock, SessionIdleTimeout: 2 * longLock})
	if err != nil {
		fmt.Println("start runtime:", err)
		return 2
	}
	defer rt.Shutdown(context.Background())
	c := durable.NewClient(st.Provider)
	_ = c.StartOrchestration(ctx, recoveryInstance, "Order", "box")
	status, err := c.WaitForOrchestration(ctx, recoveryInstance)
	if err != nil {
		fmt.Println("wait:", err)
		return 1
	}
	fmt.Println("done:", status.State, status.Output)
	return 0
}

// A service killed (SIGKILL) while an activity runs leaves the activity's
// lock, held for ten minutes; started again on the same directory, it
// finishes the order within the test's minute, the activity run again,
// because Open released every lock the dead process held.
func TestRestartAfterKillResumesLockedWorkAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short, which asks for quick tests: this one runs the test binary as a service twice with a SIGKILL between; `go test ./...` (the README command) and .ci/run run it")
	}
	dir := t.TempDir()
	env := func(mode string) []string {
		var out []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "COSMOS_") && !strings.HasPrefix(kv, EnvDataDir+"=") && !strings.HasPrefix(kv, EnvRequireAccount+"=") {
				out = append(out, kv)
			}
		}
		return append(out, EnvDataDir+"="+dir, serviceEnv+"="+mode)
	}

	first := exec.CommandContext(t.Context(), os.Args[0])
	first.Env = env("slow")
	stdout, err := first.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "packing\n" {
		_ = first.Process.Kill()
		t.Fatalf("first run: %q, %v; want the activity to start", line, err)
	}
	if err := first.Process.Kill(); err != nil { // SIGKILL: nothing is released
		t.Fatal(err)
	}
	_ = first.Wait()

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	second := exec.CommandContext(ctx, os.Args[0])
	second.Env = env("fast")
	out, err := second.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "done: Completed packed box") {
		t.Fatalf("second run: %v\n%s\n(the order must finish well before its ten-minute locks expire)", err, out)
	}
}
