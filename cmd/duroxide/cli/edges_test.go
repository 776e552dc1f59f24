package cli_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/duroxide-go/cdb/cmd/duroxide/cli"
	"github.com/duroxide-go/cdb/durable"
)

// Main returns the exit code, so that a main of your own can exit with
// it (this example is compiled, not run).
func ExampleMain() {
	reg := durable.NewRegistry() // your orchestrations and activities
	os.Exit(cli.Main(reg))
}

// opName matches an internal operation name leading a message, such as
// "get_instance_info: " or "delete_instances_atomic: ".
var opName = regexp.MustCompile(`\b[a-z]+(_[a-z]+)+: `)

// TestPurgeOfARunningInstance: refused with exit 1, naming the -force
// flag; -dry-run with an id says what would be purged and changes
// nothing. On both providers.
func TestPurgeOfARunningInstance(t *testing.T) {
	for name, env := range map[string]func(*testing.T) *opsEnv{"memprovider": newOpsEnv, "cosmos": newCosmosEnv} {
		t.Run(name, func(t *testing.T) {
			e := env(t)
			e.start("Wait", "approval", "w-1")
			e.start("Echo", "x", "ok-1")

			_, errOut := e.want(cli.ExitFailed, "purge", "w-1")
			if !strings.Contains(errOut, "-force") || opName.MatchString(errOut) {
				t.Fatalf("purge of a running instance:\n%s", errOut)
			}
			_, errOut = e.want(cli.ExitFailed, "purge", "-dry-run", "w-1")
			if !strings.Contains(errOut, "-force") || !strings.Contains(errOut, "dry run") {
				t.Fatalf("dry run of a refused purge:\n%s", errOut)
			}
			out, errOut := e.want(cli.ExitOK, "purge", "-dry-run", "-force", "w-1")
			if out != "w-1\n" || !strings.Contains(errOut, "dry run: purge would delete 1 instance(s)") {
				t.Fatalf("forced dry run:\n%s\n%s", out, errOut)
			}
			out, errOut = e.want(cli.ExitOK, "purge", "-dry-run", "ok-1")
			if out != "ok-1\n" || !strings.Contains(errOut, "would delete 1 instance(s)") {
				t.Fatalf("dry run:\n%s\n%s", out, errOut)
			}
			e.want(cli.ExitNotFound, "purge", "-dry-run", "nope")
			// Nothing was purged.
			e.want(cli.ExitOK, "show", "ok-1")
			if st := e.settle("w-1"); st.State != durable.StateRunning {
				t.Fatalf("w-1: %v", st.State)
			}
			e.want(cli.ExitOK, "purge", "-force", "w-1")
			e.want(cli.ExitNotFound, "show", "w-1")
		})
	}
}

// TestCancelOfAnEndedInstance: refused with exit 1, saying the instance
// already ended and how; no "cancel requested".
func TestCancelOfAnEndedInstance(t *testing.T) {
	e := newOpsEnv(t)
	e.start("Echo", "x", "ok-1")
	e.start("Fail", "x", "bad-1")
	e.start("Wait", "approval", "w-1")
	e.want(cli.ExitOK, "cancel", "-reason", "stop", "w-1")
	e.terminal("w-1")
	for id, state := range map[string]string{"ok-1": "Completed", "bad-1": "Failed", "w-1": "Cancelled"} {
		out, errOut := e.want(cli.ExitFailed, "cancel", id)
		if out != "" || !strings.Contains(errOut, id+" already ended ("+state+")") {
			t.Fatalf("cancel %s:\n%s\n%s", id, out, errOut)
		}
	}
}

// TestUsageErrorsAreShort: a usage error is one line saying what is
// wrong, the command's usage line, and where the full usage is; exit 2.
func TestUsageErrorsAreShort(t *testing.T) {
	e := newOpsEnv(t)
	for _, tc := range []struct {
		args       []string
		want, line string
	}{
		{[]string{"purge"}, "purge takes one INSTANCE, or filters", "usage: duroxide purge [-force] [-dry-run] INSTANCE"},
		{[]string{"cancel", "-dry-run", "w-1"}, "only purge has a dry run", "usage: duroxide cancel"},
		{[]string{"show"}, "want INSTANCE, got 0 argument(s)", "usage: duroxide show INSTANCE"},
		{[]string{"show", "-nope", "x"}, "flag provided but not defined: -nope", "usage: duroxide show INSTANCE"},
		{[]string{"search", "-created-after", "yesterday"}, "neither an RFC 3339 time nor a duration", "usage: duroxide list"},
		{[]string{"resume", "a", "b"}, "resume takes one INSTANCE", "usage: duroxide suspend|resume|rewind"},
		{[]string{"replya"}, `unknown command "replya"`, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			sub := *e
			sub.t = t
			out, errOut := sub.want(cli.ExitUsage, tc.args...)
			lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
			if out != "" || !strings.HasPrefix(lines[0], "duroxide: ") || !strings.Contains(lines[0], tc.want) ||
				lines[len(lines)-1] != "run 'duroxide help' (or -h) for usage" || len(lines) > 3 ||
				tc.line != "" && !strings.HasPrefix(lines[1], tc.line) || strings.Contains(errOut, "Exit codes") {
				t.Fatalf("stderr:\n%s", errOut)
			}
		})
	}
	// The full usage is there when asked for, and a command's own with -h.
	if out, _ := e.want(cli.ExitOK, "help"); !strings.Contains(out, "Exit codes") {
		t.Fatalf("help:\n%s", out)
	}
	if out, _ := e.want(cli.ExitOK, "purge", "-h"); !strings.Contains(out, "usage: duroxide purge") || !strings.Contains(out, "-force") {
		t.Fatalf("purge -h:\n%s", out)
	}
}

// TestMessagesCarryNoOperationNames: what the CLI tells a person does not
// lead with the provider's internal operation names.
func TestMessagesCarryNoOperationNames(t *testing.T) {
	e := newCosmosEnv(t)
	e.start("Wait", "approval", "w-1")
	for _, tc := range []struct {
		code int
		args []string
		want string
	}{
		{cli.ExitNotFound, []string{"show", "nope"}, `duroxide: instance "nope" not found`},
		{cli.ExitNotFound, []string{"purge", "nope"}, `duroxide: instance "nope" not found`},
		{cli.ExitNotFound, []string{"cancel", "nope"}, "not found"},
		{cli.ExitFailed, []string{"purge", "w-1"}, `duroxide: instance "w-1" is still running`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			sub := *e
			sub.t = t
			_, errOut := sub.want(tc.code, tc.args...)
			if !strings.Contains(errOut, tc.want) || opName.MatchString(errOut) {
				t.Fatalf("stderr:\n%s", errOut)
			}
		})
	}
}
