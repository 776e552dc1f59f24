package durabletest

import (
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// capabilityFilteringTests ports tests/capability_filtering_tests.rs.
//
// Several Rust tests assert that an instance pinned to an unsupported
// duroxide version is left alone: they run the runtime for a fixed time
// (2 s, or 0.5 s) and then check it is still Running. Nothing can be
// waited for there, so those sleeps are kept.
func capabilityFilteringTests() []sample {
	return []sample{
		{name: "runtime_abandons_incompatible_execution", run: func(e *env) {
			incompatibleStaysRunning(e, "incompat-12", "TestOrch", semver(99, 0, 0), 3, nil, 2*time.Second)
		}},
		{name: "runtime_processes_compatible_execution_normally", run: func(e *env) {
			startedCompletes(e, "compat-13", "CompatOrch", "compatible-ok")
		}},
		{name: "runtime_abandon_reaches_max_attempts_and_poisons", run: func(e *env) {
			incompatibleStaysRunning(e, "poison-14", "TestOrch", semver(99, 0, 0), 3, nil, 2*time.Second)
		}},
		{name: "runtime_abandon_uses_short_delay", run: func(e *env) {
			incompatibleStaysRunning(e, "delay-15", "TestOrch", semver(99, 0, 0), 100, nil, 500*time.Millisecond)
		}},
		{name: "execution_metadata_includes_pinned_version_on_new_orchestration", run: executionMetadataIncludesPinnedVersion},
		{name: "existing_executions_without_pinned_version_remain_fetchable", run: existingExecutionsWithoutPinnedVersionRemainFetchable},
		{name: "default_supported_range_includes_current_and_older_versions", run: func(e *env) {
			startedCompletes(e, "range-26", "RangeOrch", "range-ok")
		}},
		{name: "default_supported_range_excludes_future_versions", run: func(e *env) {
			incompatibleStaysRunning(e, "future-27", "FutureOrch", semver(99, 0, 0), 3, nil, 2*time.Second)
		}},
		{name: "custom_supported_replay_versions_narrows_range", run: func(e *env) {
			incompatibleStaysRunning(e, "narrow-28", "NarrowOrch", semver(1, 0, 0), 3,
				&duroxide.SemVerRange{Min: semver(2, 0, 0), Max: semver(2, 99, 99)}, 2*time.Second)
		}},
		{name: "two_runtimes_different_version_ranges_route_correctly", run: twoRuntimesDifferentVersionRangesRouteCorrectly},
		{name: "sub_orchestration_gets_own_pinned_version", run: subOrchestrationGetsOwnPinnedVersion},
		{name: "runtime_logs_capability_declaration_at_startup", run: runtimeLogsCapabilityDeclarationAtStartup},
		{name: "overlapping_version_ranges_both_can_process", run: overlappingVersionRangesBothCanProcess},
		{name: "mixed_cluster_compatible_and_incompatible_items", run: mixedClusterCompatibleAndIncompatibleItems},
		{name: "pinned_version_extracted_from_orchestration_started_event", run: pinnedVersionExtractedFromOrchestrationStartedEvent},
		{name: "activity_completion_after_continue_as_new_is_discarded", run: activityCompletionAfterContinueAsNewIsDiscarded},
		{name: "wide_supported_range_drains_stuck_items_via_deserialization_error", run: wideSupportedRangeDrainsStuckItems},
		{name: "runtime_logs_warning_on_incompatible_abandon", run: runtimeLogsWarningOnIncompatibleAbandon},
	}
}

// capOptions is Rust's options in this file: 10 ms polls, maxAttempts
// (0 = default) and an optional supported range.
func capOptions(maxAttempts uint32, supported *duroxide.SemVerRange) *durable.Options {
	return &durable.Options{MinPollInterval: 10 * time.Millisecond, MaxAttempts: maxAttempts, SupportedReplayVersions: supported}
}

func rangeOf(min, max duroxide.SemVer) *duroxide.SemVerRange {
	return &duroxide.SemVerRange{Min: min, Max: max}
}

// incompatibleStaysRunning seeds instance pinned to pinned, runs a runtime
// for d and requires the instance to be still Running.
func incompatibleStaysRunning(e *env, instance, name string, pinned duroxide.SemVer, maxAttempts uint32, supported *duroxide.SemVerRange, d time.Duration) {
	e.seedPinnedInstance(instance, name, pinned)
	r := durable.NewRegistry()
	orch(e.t, r, name, constOrch("should-not-reach"))
	rt := e.start(r, capOptions(maxAttempts, supported))
	time.Sleep(d)
	shutdownRuntime(e, rt)
	require.Equal(e.t, durable.StateRunning, e.status(instance).State,
		"incompatible instance should remain Running (invisible to the filtered runtime)")
}

// startedCompletes starts instance of a one-line orchestration returning
// out and requires it to complete with out.
func startedCompletes(e *env, instance, name, out string) {
	r := durable.NewRegistry()
	orch(e.t, r, name, constOrch(out))
	e.start(r, capOptions(0, nil))
	e.startOrch(instance, name, "{}")
	require.Contains(e.t, e.completed(instance), out)
}

// startedEvent returns the OrchestrationStarted event of h.
func startedEvent(e *env, h []duroxide.Event) duroxide.Event {
	e.t.Helper()
	i := indexOfKind[duroxide.OrchestrationStarted](h)
	require.GreaterOrEqual(e.t, i, 0, "Should have OrchestrationStarted event")
	return h[i]
}

func executionMetadataIncludesPinnedVersion(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "MetaOrch", constOrch("meta-ok"))
	rt := e.start(r, capOptions(0, nil))
	e.startOrch("meta-19", "MetaOrch", "{}")
	e.completed("meta-19")
	shutdownRuntime(e, rt)
	pinned, err := duroxide.ParseSemVer(startedEvent(e, e.history("meta-19")).DuroxideVersion)
	require.NoError(e.t, err, "Should be parseable semver")
	require.Equal(e.t, duroxide.MustParseSemVer(durable.DuroxideVersion), pinned, "Pinned version should match current build version")
}

func existingExecutionsWithoutPinnedVersionRemainFetchable(e *env) {
	v := durable.DefaultVersion
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.StartOrchestrationItem{
		Instance: "null-20", Orchestration: "NullOrch", Input: "{}", Version: &v, ExecutionID: 1,
	}, 0))
	r := durable.NewRegistry()
	orch(e.t, r, "NullOrch", constOrch("null-ok"))
	e.start(r, capOptions(0, nil))
	require.True(e.t, e.waitCompletedEvent("null-20"), "Instance with NULL pinned version should be processed")
}

func twoRuntimesDifferentVersionRangesRouteCorrectly(e *env) {
	e.seedPinnedInstance("v1-inst", "RoutingOrch", semver(1, 0, 0))
	e.seedPinnedInstance("v2-inst", "RoutingOrch", semver(2, 0, 0))
	r := durable.NewRegistry()
	orch(e.t, r, "RoutingOrch", constOrch("routed"))
	e.start(r, capOptions(50, rangeOf(semver(1, 0, 0), semver(1, 99, 99))))
	e.start(r, capOptions(50, rangeOf(semver(2, 0, 0), semver(2, 99, 99))))
	require.True(e.t, e.waitCompletedEvent("v1-inst"), "v1 instance should complete on Runtime A")
	require.True(e.t, e.waitCompletedEvent("v2-inst"), "v2 instance should complete on Runtime B")
}

func subOrchestrationGetsOwnPinnedVersion(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "ParentOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		res, err := durable.CallSubOrchestration[string](ctx, "ChildOrch", "child-input").Await()
		return "parent-done:" + res, err
	})
	orch(e.t, r, "ChildOrch", constOrch("child-done"))
	rt := e.start(r, capOptions(0, nil))
	e.startOrch("parent-24", "ParentOrch", "{}")
	require.Contains(e.t, e.completed("parent-24"), "child-done")
	shutdownRuntime(e, rt)
	var child string
	for _, ev := range e.history("parent-24") {
		if k, ok := ev.Kind.(duroxide.SubOrchestrationScheduled); ok {
			child = k.Instance
			break
		}
	}
	require.NotEmpty(e.t, child, "Parent should have scheduled a sub-orchestration")
	h, _ := e.p.Read(e.ctx, child)
	if i := indexOfKind[duroxide.OrchestrationStarted](h); i >= 0 {
		v, err := duroxide.ParseSemVer(h[i].DuroxideVersion)
		require.NoError(e.t, err, "Child pinned version should be parseable")
		require.Equal(e.t, duroxide.MustParseSemVer(durable.DuroxideVersion), v, "Sub-orchestration should be pinned at current build version")
	}
}

// Rust captures tracing; Go captures the runtime's slog records.
func runtimeLogsCapabilityDeclarationAtStartup(e *env) {
	logs := &logCapture{}
	r := durable.NewRegistry()
	orch(e.t, r, "LogOrch", constOrch("ok"))
	rt := e.start(r, &durable.Options{MinPollInterval: 10 * time.Millisecond, Logger: slog.New(logs)})
	shutdownRuntime(e, rt)
	_, ok := logs.find(slog.LevelInfo, "capability", "supported_range")
	require.True(e.t, ok, "Runtime should log capability filter at startup")
}

func overlappingVersionRangesBothCanProcess(e *env) {
	e.seedPinnedInstance("overlap-17", "OverlapOrch", semver(2, 5, 0))
	r := durable.NewRegistry()
	orch(e.t, r, "OverlapOrch", constOrch("overlap-ok"))
	e.start(r, capOptions(50, rangeOf(semver(1, 0, 0), semver(2, 99, 99))))
	e.start(r, capOptions(50, rangeOf(semver(2, 0, 0), semver(3, 99, 99))))
	require.True(e.t, e.waitCompletedEvent("overlap-17"), "v2.5.0 instance should complete on either runtime")
}

func mixedClusterCompatibleAndIncompatibleItems(e *env) {
	for i := uint64(0); i < 3; i++ {
		e.seedPinnedInstance("v1-mixed-"+itoa(i), "MixedOrch", semver(1, i, 0))
	}
	for i := uint64(0); i < 2; i++ {
		e.seedPinnedInstance("v2-mixed-"+itoa(i), "MixedOrch", semver(2, i, 0))
	}
	r := durable.NewRegistry()
	orch(e.t, r, "MixedOrch", constOrch("mixed-ok"))
	e.start(r, capOptions(50, rangeOf(semver(1, 0, 0), semver(1, 99, 99))))
	e.start(r, capOptions(50, rangeOf(semver(2, 0, 0), semver(2, 99, 99))))
	for i := uint64(0); i < 3; i++ {
		require.True(e.t, e.waitCompletedEvent("v1-mixed-"+itoa(i)), "v1-mixed-%d should complete on Runtime A", i)
	}
	for i := uint64(0); i < 2; i++ {
		require.True(e.t, e.waitCompletedEvent("v2-mixed-"+itoa(i)), "v2-mixed-%d should complete on Runtime B", i)
	}
}

func itoa(i uint64) string { return strconv.FormatUint(i, 10) }

func pinnedVersionExtractedFromOrchestrationStartedEvent(e *env) {
	e.seedPinnedInstance("pinned-21", "PinnedOrch", semver(3, 1, 4))
	r := durable.NewRegistry()
	orch(e.t, r, "PinnedOrch", constOrch("pinned-ok"))
	rt := e.start(r, capOptions(0, rangeOf(semver(0, 0, 0), semver(99, 99, 99))))
	require.True(e.t, e.waitCompletedEvent("pinned-21"), "Pinned v3.1.4 instance should complete")
	shutdownRuntime(e, rt)
	v, err := duroxide.ParseSemVer(startedEvent(e, e.history("pinned-21")).DuroxideVersion)
	require.NoError(e.t, err, "Should parse pinned version")
	require.Equal(e.t, semver(3, 1, 4), v)
}

// Rust waits 200 ms after enqueueing the stale completion before reading
// history; here the wait is for the stale message to be consumed (the
// instance's orchestrator queue drained), then history is read.
func activityCompletionAfterContinueAsNewIsDiscarded(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "SlowActivity", func(durable.ActivityContext, string) (string, error) { return "slow-result", nil })
	orch(e.t, r, "CANOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if in == "start" {
			return "", durable.ContinueAsNew(ctx, "second")
		}
		if _, err := durable.WaitEvent[string](ctx, "done_signal").Await(); err != nil {
			return "", err
		}
		return "can-complete", nil
	})
	e.start(r, capOptions(0, nil))
	e.startOrch("can-25", "CANOrch", "start")
	require.True(e.t, e.waitSubscription("can-25", "done_signal"), "Second execution should subscribe to done_signal")
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.ActivityCompletedItem{
		Instance: "can-25", ExecutionID: 1, ID: 999, Result: "stale-result",
	}, 0))
	if a := e.p.Admin(); a != nil {
		require.True(e.t, eventually(func() bool {
			d, err := a.QueueDepths(e.ctx)
			return err == nil && d.OrchestratorQueue == 0
		}), "the stale completion should be consumed")
	} else {
		time.Sleep(200 * time.Millisecond)
	}
	stale := countEvents(e.history("can-25"), func(ev duroxide.Event) bool {
		k, ok := ev.Kind.(duroxide.ActivityCompleted)
		return ok && k.Result == "stale-result"
	})
	require.Zero(e.t, stale, "Stale activity completion from old execution should be discarded")
	require.NoError(e.t, e.client().RaiseEvent(e.ctx, "can-25", "done_signal", "go"))
	require.Equal(e.t, durable.StateCompleted, e.wait("can-25").State, "Orchestration should complete normally after CAN")
}

func wideSupportedRangeDrainsStuckItems(e *env) {
	e.seedPinnedInstance("drain-29", "DrainOrch", semver(99, 0, 0))
	e.f.CorruptInstanceHistory(e.t, e.p, "drain-29")
	r := durable.NewRegistry()
	orch(e.t, r, "DrainOrch", constOrch("should-not-reach"))
	e.start(r, &durable.Options{MaxAttempts: 3, MinPollInterval: 10 * time.Millisecond, OrchestratorLockTimeout: 500 * time.Millisecond,
		SupportedReplayVersions: rangeOf(semver(0, 0, 0), semver(99, 99, 99))})
	a := e.admin()
	require.True(e.t, eventually(func() bool {
		info, err := a.InstanceInfo(e.ctx, "drain-29")
		return err == nil && info.Status == "Failed"
	}), "Drain procedure should terminate the orchestration as Failed via poison path")
}

// Rust runs 3 s and then looks for the warning; here the wait is for the
// warning itself.
func runtimeLogsWarningOnIncompatibleAbandon(e *env) {
	e.seedPinnedInstance("warn-30", "WarnOrch", semver(99, 0, 0))
	fp := e.faulty()
	fp.SetBypassCapabilityFilter(true)
	logs := &logCapture{}
	r := durable.NewRegistry()
	orch(e.t, r, "WarnOrch", constOrch("should-not-reach"))
	e.start(r, &durable.Options{MaxAttempts: 5, MinPollInterval: 10 * time.Millisecond, Logger: slog.New(logs)})
	var rec capturedLog
	require.True(e.t, eventually(func() bool {
		var ok bool
		rec, ok = logs.find(slog.LevelWarn, "incompatible version")
		return ok
	}), "Runtime should log a warning when abandoning an incompatible item")
	all := rec.msg
	for k, v := range rec.attrs {
		all += " " + k + "=" + v
	}
	require.True(e.t, strings.Contains(all, "warn-30"), "Warning should reference instance ID 'warn-30', got: %s", all)
}
