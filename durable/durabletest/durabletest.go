// Package durabletest is a reusable end-to-end suite for the durable
// runtime: duroxide's 35 end-to-end samples (tests/e2e_samples.rs at
// 0.1.29) and its runtime behaviour tests (tests/*.rs, one Go file per
// Rust file; modules.go lists them), each running real Go orchestrations
// and activities on a Runtime and a Client over the provider under test,
// and asserting what the Rust test asserts. It also holds duroxide's
// provider validations that need a runtime (race_replay, from
// src/provider_validation/race_replay.rs after 0.1.29).
//
// Start with [Run]; modules.go lists the modules and where each came from.
//
// Run it from a test of the provider's package with the same
// providertest.Factory that runs the provider validation suite:
//
//	func TestE2E(t *testing.T) {
//		t.Run("memprovider", func(t *testing.T) {
//			durabletest.Run(t, factory{}) // factory implements providertest.Factory
//		})
//	}
//
// Subtests are named <Rust file stem>/<Rust test name>, e.g.
// e2e_samples/sample_hello_world_fs or cancellation_tests/<name>.
//
// FaultyProvider (faulty.go) wraps any provider to inject faults.
package durabletest

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/duroxide/providertest"
)

// sample is one ported Rust test.
type sample struct {
	name string
	run  func(e *env)
}

// Run runs every module's tests as subtests <module>/<Rust test name>
// (modules.go lists them). Tests run in parallel with each other, each on
// its own provider.
func Run(t *testing.T, f providertest.Factory) {
	RunModules(t, f, Modules()...)
}

// RunModules runs the named modules only (an unknown name fails t), so a
// slow or remote backend can run, say, the e2e samples while a fast one
// runs everything.
func RunModules(t *testing.T, f providertest.Factory, names ...string) {
	for _, name := range names {
		m, ok := findModule(name)
		if !ok {
			t.Errorf("durabletest: unknown module %q (known: %v)", name, Modules())
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			for _, s := range m.tests() {
				t.Run(s.name, func(t *testing.T) {
					t.Parallel()
					s.run(&env{t: t, p: f.NewProvider(t), ctx: t.Context(), f: f})
				})
			}
		})
	}
}

// Modules lists the modules' names (the Rust test files' stems) in order.
func Modules() []string {
	var out []string
	for _, m := range modules() {
		out = append(out, m.name)
	}
	return out
}

func findModule(name string) (module, bool) {
	for _, m := range modules() {
		if m.name == name {
			return m, true
		}
	}
	return module{}, false
}

// Tests returns the names of a module's tests (the Rust test names) in
// file order, or nil for an unknown module, as providertest.Tests does.
func Tests(module string) []string {
	m, ok := findModule(module)
	if !ok {
		return nil
	}
	var out []string
	for _, s := range m.tests() {
		out = append(out, s.name)
	}
	return out
}

// Generous bounds: the machine running the suite may be loaded. Rust waits
// 5 s; nothing here depends on these being tight.
const (
	waitTimeout     = 90 * time.Second
	shutdownTimeout = 60 * time.Second
)

// testOptions keeps the dispatchers' idle polling short so work enqueued
// outside the process's wake-ups (there is none in these samples, but a
// provider may delay visibility) is picked up quickly.
func testOptions(o *durable.Options) *durable.Options {
	r := durable.Options{}
	if o != nil {
		r = *o
	}
	if r.MinPollInterval == 0 {
		r.MinPollInterval = 10 * time.Millisecond
	}
	if r.MaxIdlePollInterval == 0 {
		r.MaxIdlePollInterval = 200 * time.Millisecond
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	// The ported Rust tests expect duroxide's behaviour: nondeterminism
	// fails the instance.
	r.Nondeterminism = durable.NondeterminismFail
	return &r
}

// env is one sample's world: a provider, its client and the runtimes.
type env struct {
	t   *testing.T
	p   duroxide.Provider
	ctx context.Context
	// cMu guards c: helpers such as raiseWhenSubscribed call client from
	// their own goroutine while the sample calls it too.
	cMu sync.Mutex
	c   *durable.Client
	// f makes further, independent stores (a "fresh database").
	f providertest.Factory
}

func (e *env) client() *durable.Client {
	e.cMu.Lock()
	defer e.cMu.Unlock()
	if e.c == nil {
		e.c = durable.NewClient(e.p)
	}
	return e.c
}

// start starts a runtime over the env's provider, shut down at cleanup.
func (e *env) start(reg *durable.Registry, o *durable.Options) *durable.Runtime {
	e.t.Helper()
	rt, err := durable.Start(e.ctx, e.p, reg, testOptions(o))
	require.NoError(e.t, err)
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		require.NoError(e.t, rt.Shutdown(ctx))
	})
	return rt
}

func (e *env) startOrch(instance, name string, input any) {
	e.t.Helper()
	require.NoError(e.t, e.client().StartOrchestration(e.ctx, instance, name, input))
}

// wait waits for instance to finish.
func (e *env) wait(instance string) *durable.OrchestrationStatus {
	e.t.Helper()
	st, err := e.client().WaitForOrchestration(e.ctx, instance, durable.WaitOptions{Timeout: waitTimeout})
	require.NoError(e.t, err, "waiting for %s", instance)
	return st
}

// completed waits for instance and returns its output; a failure fails
// the test with the failure's message.
func (e *env) completed(instance string) string {
	e.t.Helper()
	st := e.wait(instance)
	require.Equal(e.t, durable.StateCompleted, st.State, "orchestration %s failed: %s", instance, st.FailureMessage())
	return st.Output
}

// failed waits for instance and returns its failure message.
func (e *env) failed(instance string) string {
	e.t.Helper()
	st := e.wait(instance)
	require.Equal(e.t, durable.StateFailed, st.State, "expected %s to fail, got output %q", instance, st.Output)
	return st.FailureMessage()
}

// waitHistory polls instance's history until pred holds.
func (e *env) waitHistory(instance string, pred func([]duroxide.Event) bool) bool {
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		if h, err := e.p.Read(e.ctx, instance); err == nil && pred(h) {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// waitSubscription waits until instance subscribed to name.
func (e *env) waitSubscription(instance, name string) bool {
	return e.waitHistory(instance, func(h []duroxide.Event) bool {
		for _, ev := range h {
			switch k := ev.Kind.(type) {
			case duroxide.ExternalSubscribed:
				if k.Name == name {
					return true
				}
			case duroxide.ExternalSubscribedPersistent:
				if k.Name == name {
					return true
				}
			}
		}
		return false
	})
}

func (e *env) admin() duroxide.ProviderAdmin {
	e.t.Helper()
	a := e.p.Admin()
	require.NotNil(e.t, a, "ProviderAdmin required")
	return a
}

// must fails the test on a registration error.
func must(t *testing.T, err error) {
	t.Helper()
	require.NoError(t, err)
}

// act registers a string activity.
func act(t *testing.T, r *durable.Registry, name string, fn func(durable.ActivityContext, string) (string, error)) {
	t.Helper()
	must(t, r.AddActivity(name, fn))
}

// orch registers a string orchestration as 1.0.0.
func orch(t *testing.T, r *durable.Registry, name string, fn durable.OrchestrationFunc) {
	t.Helper()
	must(t, r.AddOrchestration(name, fn))
}

// sleepCtx sleeps d unless ctx ends first (an activity's cancellation).
func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}
