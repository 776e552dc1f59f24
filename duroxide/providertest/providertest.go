package providertest

import (
	"fmt"
	"slices"
	"sync"
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
	// f. A test that does not apply is not run and not reported.
	Applies func(f Factory) bool
}

var (
	registryMu sync.Mutex
	registry   = map[string][]Test{}
)

// register adds a module's tests. Each module file calls it from init.
// Registering a module twice, or a test name twice, panics.
func register(module string, tests ...Test) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[module]; dup {
		panic(fmt.Sprintf("providertest: module %q registered twice", module))
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		if tc.Name == "" || tc.Func == nil {
			panic(fmt.Sprintf("providertest: module %q has a test without a name or func", module))
		}
		if seen[tc.Name] {
			panic(fmt.Sprintf("providertest: test %s/%s registered twice", module, tc.Name))
		}
		seen[tc.Name] = true
	}
	registry[module] = slices.Clone(tests)
}

// Modules returns the names of all registered modules, sorted.
func Modules() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	names := make([]string, 0, len(registry))
	for name := range registry {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Tests returns the names of a module's tests in registration order
// (Rust source order), or nil for an unknown module.
func Tests(module string) []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	var names []string
	for _, tc := range registry[module] {
		names = append(names, tc.Name)
	}
	return names
}

// Run runs every registered module against f, one subtest per module
// and one per behaviour: <module>/<rust_test_name>.
func Run(t *testing.T, f Factory) {
	t.Helper()
	RunModules(t, f, Modules()...)
}

// RunModules runs the named modules against f. An unknown module name
// fails the test. Modules and tests run in parallel; each test gets its
// own provider from f.
func RunModules(t *testing.T, f Factory, modules ...string) {
	t.Helper()
	for _, module := range modules {
		registryMu.Lock()
		tests, ok := registry[module]
		registryMu.Unlock()
		if !ok {
			t.Errorf("providertest: unknown module %q (known: %v)", module, Modules())
			continue
		}
		t.Run(module, func(t *testing.T) {
			t.Parallel()
			for _, tc := range tests {
				if tc.Applies != nil && !tc.Applies(f) {
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
