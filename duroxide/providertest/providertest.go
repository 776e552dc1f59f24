package providertest

import (
	"testing"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// Factory mirrors Rust duroxide's ProviderFactory: it hands every test a
// fresh provider and exposes the few hooks that need direct store access.
type Factory interface {
	// NewProvider returns a fresh, isolated, empty store. Register any
	// cleanup with t.Cleanup. Many tests assert exact queue contents, so
	// the store must not be shared with another test.
	NewProvider(t *testing.T) duroxide.Provider
	// LockTimeout is the lock the timing tests take and then outwait
	// (they sleep LockTimeout+100ms). Rust's default is 5s; the SQLite
	// reference uses 1s.
	LockTimeout() time.Duration
	// ShortPollThreshold bounds how long a fetch on an empty store may
	// take for a short-polling provider. Rust's default is 100ms.
	ShortPollThreshold() time.Duration
	// CorruptInstanceHistory overwrites every stored history event of
	// instance with content that cannot be decoded.
	CorruptInstanceHistory(t *testing.T, p duroxide.Provider, instance string)
	// MaxAttemptCount returns the maximum attempt count over the
	// instance's orchestrator-queue messages.
	MaxAttemptCount(t *testing.T, p duroxide.Provider, instance string) uint32
}

// LongPoller is implemented by factories whose providers honour
// pollTimeout by blocking until work arrives. Only when
// SupportsLongPolling returns true are the two long-poll-only tests
// (test_long_poll_waits_for_timeout and
// test_long_poll_work_item_waits_for_timeout) run; for other providers
// they are not registered at all, as in Rust's SQLite and pg wiring.
type LongPoller interface {
	SupportsLongPolling() bool
}

// Test is one validation behaviour. Name is the exact snake_case name of
// the Rust test function.
type Test struct {
	Name string
	Func func(t *testing.T, f Factory)
	// Applies, when non-nil, decides whether the behaviour is defined for
	// f. A behaviour that does not apply is not run; the module's log says
	// it was left out, and why (LeftOut).
	Applies func(f Factory) bool
	// LeftOut says why the behaviour is left out when Applies is false.
	LeftOut string
}

// module is one Rust validation module and its behaviours in source order.
type module struct {
	name  string
	tests []Test
}

// findModule returns the named module.
func findModule(name string) (module, bool) {
	for _, m := range modules {
		if m.name == name {
			return m, true
		}
	}
	return module{}, false
}

// Modules returns the names of all modules, in the suite's order (sorted).
func Modules() []string {
	names := make([]string, 0, len(modules))
	for _, m := range modules {
		names = append(names, m.name)
	}
	return names
}

// Tests returns the names of a module's tests in Rust source order, or nil
// for an unknown module.
func Tests(module string) []string {
	m, _ := findModule(module)
	var names []string
	for _, tc := range m.tests {
		names = append(names, tc.Name)
	}
	return names
}

// Run runs every module against f, one subtest per module and one per
// behaviour: <module>/<rust_test_name>.
func Run(t *testing.T, f Factory) {
	t.Helper()
	RunModules(t, f, Modules()...)
}

// RunModules runs the named modules against f. An unknown module name
// fails the test. Modules and tests run in parallel; each test gets its
// own provider from f. Behaviours that do not apply to f are named in the
// module's log with the reason.
func RunModules(t *testing.T, f Factory, names ...string) {
	t.Helper()
	for _, name := range names {
		m, ok := findModule(name)
		if !ok {
			t.Errorf("providertest: unknown module %q (known: %v)", name, Modules())
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range m.tests {
				if tc.Applies != nil && !tc.Applies(f) {
					t.Logf("left out %s: %s", tc.Name, tc.LeftOut)
					continue
				}
				t.Run(tc.Name, func(t *testing.T) { tc.Func(t, f) })
			}
		})
	}
}

// supportsLongPolling reports whether f declares long-polling support.
func supportsLongPolling(f Factory) bool {
	lp, ok := f.(LongPoller)
	return ok && lp.SupportsLongPolling()
}

// shortPollingOnly is the Applies condition of tests that Rust defines
// for short-polling providers only.
func shortPollingOnly(f Factory) bool { return !supportsLongPolling(f) }
