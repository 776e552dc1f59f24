package durabletest

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// versioningTests ports tests/versioning_tests.rs.
func versioningTests() []sample {
	return []sample{
		{name: "runtime_start_versioned_string_uses_explicit_version", run: runtimeStartVersionedStringUsesExplicitVersion},
		{name: "runtime_start_versioned_typed_uses_explicit_version", run: runtimeStartVersionedTypedUsesExplicitVersion},
		{name: "sub_orchestration_versioned_explicit_and_policy", run: subOrchestrationVersionedExplicitAndPolicy},
		{name: "detached_versioned_uses_policy_latest", run: detachedVersionedUsesPolicyLatest},
		{name: "continue_as_new_versioned_typed_explicit", run: continueAsNewVersionedTypedExplicit},
		{name: "start_uses_latest_version", run: startUsesLatestVersion},
		{name: "policy_exact_pins_start", run: policyExactPinsStart},
		{name: "sub_orchestration_uses_latest_by_default_and_pinned_when_set", run: subOrchestrationUsesLatestByDefaultAndPinnedWhenSet},
		{name: "parent_calls_child_upgrade_child_and_verify_latest_used", run: parentCallsChildUpgradeChildAndVerifyLatestUsed},
		{name: "continue_as_new_upgrades_version_deterministically", run: continueAsNewUpgradesVersionDeterministically},
		{name: "register_default_is_1_0_0_and_list_versions", run: registerDefaultIs100AndListVersions},
		{name: "register_multiple_versions_latest_is_highest", run: registerMultipleVersionsLatestIsHighest},
		{name: "policy_exact_pins_resolve_handler", run: policyExactPinsResolveHandler},
		{name: "duplicate_default_version_returns_error", run: duplicateDefaultVersionReturnsError},
		{name: "duplicate_specific_version_returns_error", run: duplicateSpecificVersionReturnsError},
		{name: "non_monotonic_registration_panics", run: nonMonotonicRegistrationPanics},
		{name: "resolve_handler_exact_missing_returns_none", run: resolveHandlerExactMissingReturnsNone},
		{name: "serde_boundary_v2_events", run: serdeBoundaryV2Events},
	}
}

// constOrch returns an orchestration that outputs out.
func constOrch(out string) durable.OrchestrationFunc {
	return func(*durable.OrchestrationContext, string) (string, error) { return out, nil }
}

// prefixOrch returns an orchestration that outputs prefix+input.
func prefixOrch(prefix string) durable.OrchestrationFunc {
	return func(_ *durable.OrchestrationContext, in string) (string, error) { return prefix + in, nil }
}

func echoOrch(_ *durable.OrchestrationContext, in string) (string, error) { return in, nil }

func runtimeStartVersionedStringUsesExplicitVersion(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "S", constOrch("v1"))
	must(e.t, r.AddOrchestrationVersion("S", "2.0.0", constOrch("v2")))
	must(e.t, r.SetVersionPolicy("S", durable.Latest))
	e.start(r, nil)
	require.NoError(e.t, e.client().StartOrchestration(e.ctx, "i1", "S", "", durable.StartOptions{Version: "1.0.0"}))
	require.Equal(e.t, "v1", e.completed("i1"))
}

func runtimeStartVersionedTypedUsesExplicitVersion(e *env) {
	r := durable.NewRegistry()
	must(e.t, durable.RegisterOrchestration(r, "T", func(*durable.OrchestrationContext, int32) (int32, error) { return 1, nil }))
	must(e.t, r.AddOrchestrationVersion("T", "2.0.0", func(*durable.OrchestrationContext, string) (string, error) { return "2", nil }))
	e.start(r, nil)
	require.NoError(e.t, e.client().StartOrchestration(e.ctx, "i2", "T", int32(0), durable.StartOptions{Version: "1.0.0"}))
	st := e.wait("i2")
	out, err := durable.DecodeOutput[int32](st)
	require.NoError(e.t, err, "orchestration failed")
	require.Equal(e.t, int32(1), out)
}

func subOrchestrationVersionedExplicitAndPolicy(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "P1", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.CallSubOrchestration[string](ctx, "C", "A", durable.SubOrchestrationOptions{Version: "1.0.0"}).Await()
	})
	orch(e.t, r, "P2", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.CallSubOrchestration[string](ctx, "C", "B").Await()
	})
	orch(e.t, r, "C", constOrch("c1"))
	must(e.t, r.AddOrchestrationVersion("C", "2.0.0", constOrch("c2")))
	e.start(r, nil)
	e.startOrch("i3-1", "P1", "")
	require.Equal(e.t, "c1", e.completed("i3-1"))
	e.startOrch("i3-2", "P2", "")
	require.Equal(e.t, "c2", e.completed("i3-2"))
}

func detachedVersionedUsesPolicyLatest(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Parent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		durable.StartOrchestration(ctx, "Leaf", "child-1", "")
		return "ok", nil
	})
	orch(e.t, r, "Leaf", constOrch("l1"))
	must(e.t, r.AddOrchestrationVersion("Leaf", "2.0.0", constOrch("l2")))
	e.start(r, nil)
	e.startOrch("i4", "Parent", "")
	require.Equal(e.t, "ok", e.completed("i4"))
	e.startOrch("i4::child-1", "Leaf", "")
	require.Equal(e.t, "l2", e.completed("i4::child-1"))
}

func continueAsNewVersionedTypedExplicit(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Up", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return "", durable.ContinueAsNew(ctx, "payload", durable.ContinueAsNewOptions{Version: "2.0.0"})
	})
	must(e.t, r.AddOrchestrationVersion("Up", "2.0.0", constOrch("done")))
	e.start(r, nil)
	e.startOrch("i5", "Up", "")
	require.Equal(e.t, "done", e.completed("i5"))
}

func orderFlowRegistry(e *env) *durable.Registry {
	r := durable.NewRegistry()
	orch(e.t, r, "OrderFlow", prefixOrch("v1:"))
	must(e.t, r.AddOrchestrationVersion("OrderFlow", "1.1.0", prefixOrch("v1.1:")))
	return r
}

func startUsesLatestVersion(e *env) {
	e.start(orderFlowRegistry(e), nil)
	e.startOrch("inst-vlatest", "OrderFlow", "X")
	require.Equal(e.t, "v1.1:X", e.completed("inst-vlatest"))
	h := e.executionHistory("inst-vlatest", 1)
	require.True(e.t, isKind[duroxide.OrchestrationCompleted](h[len(h)-1]))
}

func policyExactPinsStart(e *env) {
	r := orderFlowRegistry(e)
	must(e.t, r.SetVersionPolicy("OrderFlow", durable.Exact("1.0.0")))
	e.start(r, nil)
	e.startOrch("inst-vpin", "OrderFlow", "Y")
	require.Equal(e.t, "v1:Y", e.completed("inst-vpin"))
}

func subOrchestrationUsesLatestByDefaultAndPinnedWhenSet(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "ParentFlow", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallSubOrchestration[string](ctx, "ChildFlow", in).Await()
	})
	orch(e.t, r, "ChildFlow", prefixOrch("c1:"))
	must(e.t, r.AddOrchestrationVersion("ChildFlow", "1.1.0", prefixOrch("c1.1:")))
	e.start(r, nil)
	e.startOrch("inst-child-latest", "ParentFlow", "Z")
	require.Equal(e.t, "c1.1:Z", e.completed("inst-child-latest"))
	must(e.t, r.SetVersionPolicy("ChildFlow", durable.Exact("1.0.0")))
	e.startOrch("inst-child-pinned", "ParentFlow", "Q")
	require.Equal(e.t, "c1:Q", e.completed("inst-child-pinned"))
}

func parentCallsChildUpgradeChildAndVerifyLatestUsed(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Parent", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallSubOrchestration[string](ctx, "Child", in).Await()
	})
	orch(e.t, r, "Child", prefixOrch("cv1:"))
	must(e.t, r.AddOrchestrationVersion("Child", "1.1.0", prefixOrch("cv1.1:")))
	e.start(r, nil)
	e.startOrch("inst-parent-child-upgrade", "Parent", "inp")
	require.Equal(e.t, "cv1.1:inp", e.completed("inst-parent-child-upgrade"))
	h := e.executionHistory("inst-parent-child-upgrade", 1)
	require.True(e.t, isKind[duroxide.OrchestrationCompleted](h[len(h)-1]))
	require.True(e.t, anyKind[duroxide.SubOrchestrationCompleted](h))
}

func continueAsNewUpgradesVersionDeterministically(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Upgrader", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return "", durable.ContinueAsNew(ctx, "from_v1_to_v2", durable.ContinueAsNewOptions{Version: "2.0.0"})
	})
	must(e.t, r.AddOrchestrationVersion("Upgrader", "2.0.0", prefixOrch("v2_done:")))
	must(e.t, r.SetVersionPolicy("Upgrader", durable.Exact("1.0.0")))
	e.start(r, nil)
	e.startOrch("inst-can-upgrade", "Upgrader", "seed")
	require.Equal(e.t, "v2_done:from_v1_to_v2", e.completed("inst-can-upgrade"))
	require.NotEmpty(e.t, e.executionHistory("inst-can-upgrade", 1), "Expected non-empty history")
	require.Equal(e.t, "v2_done:from_v1_to_v2", e.completed("inst-can-upgrade"))
}

// Rust's list_names has no Go counterpart; Versions of an unregistered
// name is empty, of a registered one lists it.
func registerDefaultIs100AndListVersions(e *env) {
	r := durable.NewRegistry()
	must(e.t, r.AddOrchestration("OrderFlow", echoOrch))
	require.Equal(e.t, []string{"1.0.0"}, r.Versions("OrderFlow"))
	require.Empty(e.t, r.Versions("Other"))
}

func registerMultipleVersionsLatestIsHighest(e *env) {
	r := durable.NewRegistry()
	must(e.t, r.AddOrchestration("OrderFlow", echoOrch))
	must(e.t, r.AddOrchestrationVersion("OrderFlow", "1.1.0", echoOrch))
	must(e.t, r.AddOrchestrationVersion("OrderFlow", "2.0.0", echoOrch))
	require.Equal(e.t, []string{"1.0.0", "1.1.0", "2.0.0"}, r.Versions("OrderFlow"))
}

// Go's handler resolution is internal; what it resolves shows in the
// version a new instance starts at (OrchestrationStarted.version), which
// is checked for Latest, Exact(1.0.0) and Latest again.
func policyExactPinsResolveHandler(e *env) {
	r := durable.NewRegistry()
	versionOut := func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return ctx.OrchestrationVersion(), nil
	}
	must(e.t, r.AddOrchestration("OrderFlow", versionOut))
	must(e.t, r.AddOrchestrationVersion("OrderFlow", "1.1.0", versionOut))
	e.start(r, nil)
	startedVersion := func(instance string) string {
		e.startOrch(instance, "OrderFlow", "")
		out := e.completed(instance)
		s, ok := e.executionHistory(instance, 1)[0].Kind.(duroxide.OrchestrationStarted)
		require.True(e.t, ok)
		require.Equal(e.t, out, s.Version)
		return s.Version
	}
	require.Equal(e.t, "1.1.0", startedVersion("resolve-latest"))
	must(e.t, r.SetVersionPolicy("OrderFlow", durable.Exact("1.0.0")))
	require.Equal(e.t, "1.0.0", startedVersion("resolve-pinned"))
	must(e.t, r.SetVersionPolicy("OrderFlow", durable.Latest))
	require.Equal(e.t, "1.1.0", startedVersion("resolve-unpinned"))
}

// requireRegistrationError requires err to be an orchestration
// RegistrationError whose text contains want (Rust's texts: "duplicate
// orchestration registration", "non-monotonic orchestration version").
func requireRegistrationError(e *env, err error, want string) {
	e.t.Helper()
	var re *durable.RegistrationError
	require.True(e.t, errors.As(err, &re), "expected a RegistrationError, got %v", err)
	require.Equal(e.t, "orchestration", re.Kind)
	require.Contains(e.t, err.Error(), want)
}

func duplicateDefaultVersionReturnsError(e *env) {
	r := durable.NewRegistry()
	must(e.t, r.AddOrchestration("OrderFlow", echoOrch))
	requireRegistrationError(e, r.AddOrchestration("OrderFlow", echoOrch), "duplicate registration")
}

func duplicateSpecificVersionReturnsError(e *env) {
	r := durable.NewRegistry()
	must(e.t, r.AddOrchestrationVersion("OrderFlow", "1.2.0", echoOrch))
	requireRegistrationError(e, r.AddOrchestrationVersion("OrderFlow", "1.2.0", echoOrch), "duplicate registration")
}

// Rust's builder panics; Go's registry returns the error.
func nonMonotonicRegistrationPanics(e *env) {
	r := durable.NewRegistry()
	must(e.t, r.AddOrchestrationVersion("OrderFlow", "2.0.0", echoOrch))
	requireRegistrationError(e, r.AddOrchestrationVersion("OrderFlow", "1.1.0", echoOrch), "non-monotonic")
}

// Go's exact resolution is internal; its inputs are the registered
// versions: 9.9.9 of OrderFlow and any version of Missing are absent.
func resolveHandlerExactMissingReturnsNone(e *env) {
	r := durable.NewRegistry()
	must(e.t, r.AddOrchestration("OrderFlow", echoOrch))
	require.NotContains(e.t, r.Versions("OrderFlow"), "9.9.9")
	require.Empty(e.t, r.Versions("Missing"))
}

// The replay-version-test feature's v2 events are not part of the wire
// format: decoding them fails, while the v1 event they extend decodes.
func serdeBoundaryV2Events(e *env) {
	for _, c := range []struct {
		v1   duroxide.EventKind
		from string
		add  string
	}{
		{duroxide.ExternalSubscribed{Name: "x"}, `"ExternalSubscribed"`, `"topic":"y",`},
		{duroxide.ExternalEvent{Name: "x", Data: "payload"}, `"ExternalEvent"`, `"topic":"y",`},
	} {
		raw, err := json.Marshal(duroxide.Event{EventID: 2, InstanceID: "i", ExecutionID: 1, DuroxideVersion: "0.1.29", Kind: c.v1})
		require.NoError(e.t, err)
		_, err = duroxide.UnmarshalEvent(raw)
		require.NoError(e.t, err, "the v1 event must decode")
		v2 := strings.Replace(string(raw), c.from, strings.TrimSuffix(c.from, `"`)+`2"`, 1)
		require.NotEqual(e.t, string(raw), v2)
		v2 = strings.Replace(v2, "{", "{"+c.add, 1)
		_, err = duroxide.UnmarshalEvent([]byte(v2))
		require.Error(e.t, err, "%s should fail deserialization", v2)
	}
}
