package durabletest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// kvStoreTests ports duroxide 0.1.29's tests/kv_store_tests.rs: the
// instance-scoped KV store seen from orchestrations (set, get, clear,
// prune, cross-instance reads) and from the client, across turns,
// continue-as-new, deletion and pruning. Where a Rust orchestration
// asserts inside its body (a panic fails it), the Go body returns an error
// instead, which fails the orchestration the same way. Rust's fixed sleeps
// before a cross-instance read wait here for the KV value they wait for.
func kvStoreTests() []sample {
	return []sample{
		{"kv_set_value_visible_via_client", kvSetValueVisibleViaClient},
		{"kv_get_missing_key_returns_none", kvGetMissingKeyReturnsNone},
		{"kv_set_multiple_values_same_turn", kvSetMultipleValuesSameTurn},
		{"kv_overwrite_same_key", kvOverwriteSameKey},
		{"kv_clear_single_value", kvClearSingleValue},
		{"kv_clear_all_values", kvClearAllValues},
		{"kv_persists_across_turns", kvPersistsAcrossTurns},
		{"kv_typed_round_trip", kvTypedRoundTrip},
		{"kv_get_value_reads_local_state", kvGetValueReadsLocalState},
		{"kv_survives_continue_as_new", kvSurvivesContinueAsNew},
		{"kv_get_value_from_instance", kvGetValueFromInstance},
		{"kv_deleted_with_instance", kvDeletedWithInstance},
		{"kv_exceeding_key_limit_fails_orchestration", kvExceedingKeyLimitFailsOrchestration},
		{"kv_exceeding_value_size_limit_fails_orchestration", kvExceedingValueSizeLimitFailsOrchestration},
		{"kv_at_key_limit_succeeds", kvAtKeyLimitSucceeds},
		{"kv_clear_all_resets_key_count", kvClearAllResetsKeyCount},
		{"kv_works_in_select_branch", kvWorksInSelectBranch},
		{"kv_accessible_after_completion", kvAccessibleAfterCompletion},
		{"kv_accessible_after_failure", kvAccessibleAfterFailure},
		{"kv_not_accessible_after_deletion", kvNotAccessibleAfterDeletion},
		{"kv_prune_execution_removes_orphan_keys", kvPruneExecutionRemovesOrphanKeys},
		{"kv_delete_instance_removes_all_kv", kvDeleteInstanceRemovesAllKV},
		{"kv_update_across_turns", kvUpdateAcrossTurns},
		{"kv_clear_value_then_reset", kvClearValueThenReset},
		{"kv_overwrite_after_can", kvOverwriteAfterCAN},
		{"kv_clear_after_can", kvClearAfterCAN},
		{"kv_can_chain_accumulation", kvCANChainAccumulation},
		{"kv_bulk_prune", kvBulkPrune},
		{"client_get_value_running", clientGetValueRunning},
		{"kv_get_value_from_instance_key_missing", kvGetValueFromInstanceKeyMissing},
		{"kv_get_value_from_instance_unknown_instance", kvGetValueFromInstanceUnknownInstance},
		{"kv_get_value_from_instance_typed_e2e", kvGetValueFromInstanceTypedE2E},
		{"kv_get_value_from_instance_replay_safe", kvGetValueFromInstanceReplaySafe},
		{"kv_get_value_from_instance_after_source_update", kvGetValueFromInstanceAfterSourceUpdate},
		{"kv_parent_child_isolation", kvParentChildIsolation},
		{"kv_delete_parent_cascades_child_kv", kvDeleteParentCascadesChildKV},
		{"kv_interleaved_with_activities_and_timers", kvInterleavedWithActivitiesAndTimers},
		{"kv_in_fan_out_fan_in", kvInFanOutFanIn},
		{"kv_json_value", kvJSONValue},
		{"kv_empty_key", kvEmptyKey},
		{"kv_clear_value_then_set_same_key", kvClearValueThenSetSameKey},
		{"kv_get_value_from_instance_self", kvGetValueFromInstanceSelf},
		{"kv_get_value_typed_wrong_type", kvGetValueTypedWrongType},
		{"kv_single_thread_basic", kvSingleThreadBasic},
		{"kv_single_thread_can_with_kv", kvSingleThreadCANWithKV},
		{"kv_stress_concurrent_writes", kvStressConcurrentWrites},
		{"kv_stress_high_key_count", kvStressHighKeyCount},
		{"kv_stress_cross_instance_reads", kvStressCrossInstanceReads},
		{"kv_stress_can_throughput", kvStressCANThroughput},
		{"kv_client_get_all_values", kvClientGetAllValues},
		{"kv_client_get_all_values_empty", kvClientGetAllValuesEmpty},
		{"kv_client_get_all_values_after_overwrite", kvClientGetAllValuesAfterOverwrite},
		{"kv_client_get_all_values_after_clear", kvClientGetAllValuesAfterClear},
		{"kv_client_get_all_values_across_can", kvClientGetAllValuesAcrossCAN},
		{"kv_prune_old_values_by_timestamp", kvPruneOldValuesByTimestamp},
		{"kv_prune_with_zero_threshold_does_nothing", kvPruneWithZeroThresholdDoesNothing},
		{"kv_prune_empty_returns_zero", kvPruneEmptyReturnsZero},
		{"kv_prune_current_turn_keys_with_max_threshold", kvPruneCurrentTurnKeysWithMaxThreshold},
		{"kv_prune_unpersisted_current_turn_key_with_wall_clock", kvPruneUnpersistedCurrentTurnKeyWithWallClock},
		{"kv_prune_selective_by_age", kvPruneSelectiveByAge},
		{"kv_read_modify_write_across_turns", kvReadModifyWriteAcrossTurns},
		{"kv_read_modify_write_every_turn", kvReadModifyWriteEveryTurn},
		{"kv_clear_all_then_set_across_turns", kvClearAllThenSetAcrossTurns},
		{"kv_clear_single_with_prior_execution_value", kvClearSingleWithPriorExecutionValue},
		{"kv_rmw_across_can_boundary", kvRMWAcrossCANBoundary},
	}
}

// --- helpers ---------------------------------------------------------------

// requireKV asserts instance's key holds want (Rust: Some(want)).
func (e *env) requireKV(instance, key, want string) {
	e.t.Helper()
	v, ok, err := e.client().GetKVValue(e.ctx, instance, key)
	require.NoError(e.t, err)
	require.True(e.t, ok, "%s: key %q should exist", instance, key)
	require.Equal(e.t, want, v, "%s: key %q", instance, key)
}

// requireNoKV asserts instance has no key (Rust: None).
func (e *env) requireNoKV(instance, key string) {
	e.t.Helper()
	v, ok, err := e.client().GetKVValue(e.ctx, instance, key)
	require.NoError(e.t, err)
	require.False(e.t, ok, "%s: key %q should be absent, has %q", instance, key, v)
}

// waitKV waits until instance's key exists and returns its value; it
// stands in for Rust's fixed sleeps "until the writer has set its value".
func (e *env) waitKV(instance, key string) string {
	e.t.Helper()
	v, err := e.client().WaitForKVValue(e.ctx, instance, key, waitTimeout)
	require.NoError(e.t, err, "waiting for %s's key %q", instance, key)
	return v
}

// waitKVEquals waits until instance's key holds want.
func (e *env) waitKVEquals(instance, key, want string) {
	e.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		v, ok, err := e.client().GetKVValue(e.ctx, instance, key)
		require.NoError(e.t, err)
		if ok && v == want {
			return
		}
		require.True(e.t, time.Now().Before(deadline), "%s: key %q never became %q (last %q, found %v)", instance, key, want, v, ok)
		time.Sleep(5 * time.Millisecond)
	}
}

// expectKV is the Go form of an assert_eq! on a KV read inside an
// orchestration: a mismatch fails the orchestration with the message.
func expectKV(ctx *durable.OrchestrationContext, key string, want *string, msg string) error {
	v, ok := ctx.GetKVValue(key)
	switch {
	case want == nil && ok:
		return fmt.Errorf("%s: key %q = %q, want none", msg, key, v)
	case want != nil && !ok:
		return fmt.Errorf("%s: key %q missing, want %q", msg, key, *want)
	case want != nil && v != *want:
		return fmt.Errorf("%s: key %q = %q, want %q", msg, key, v, *want)
	}
	return nil
}

func some(s string) *string { return &s }

// kvOr is Rust's get_kv_value(key).unwrap_or(def).
func kvOr(ctx *durable.OrchestrationContext, key, def string) string {
	if v, ok := ctx.GetKVValue(key); ok {
		return v
	}
	return def
}

// strOr is Rust's Option<String>::unwrap_or(def).
func strOr(v *string, def string) string {
	if v == nil {
		return def
	}
	return *v
}

// noop registers the activity Rust's tests call "Noop".
func noop(t *testing.T, r *durable.Registry, name string, out string) {
	t.Helper()
	require.NoError(t, r.AddActivity(name, func(durable.ActivityContext, string) (string, error) { return out, nil }))
}

// runOne registers reg, starts the runtime, starts instance and waits for
// it to finish.
func (e *env) runOne(reg *durable.Registry, instance, name, input string) *durable.OrchestrationStatus {
	e.t.Helper()
	e.start(reg, nil)
	e.startOrch(instance, name, input)
	return e.wait(instance)
}

// requireCompleted asserts st is Completed and returns its output.
func (e *env) requireCompleted(st *durable.OrchestrationStatus) string {
	e.t.Helper()
	require.Equal(e.t, durable.StateCompleted, st.State, "expected Completed, got %s: %s", st.State, st.FailureMessage())
	return st.Output
}

// --- basic set / get ---------------------------------------------------------

func kvSetValueVisibleViaClient(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "SetKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("progress", "50%")
		return "done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-set-1", "SetKV", ""))
	e.requireKV("kv-set-1", "progress", "50%")
}

func kvGetMissingKeyReturnsNone(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "NoKV", func(*durable.OrchestrationContext, string) (string, error) { return "done", nil })
	e.runOne(r, "kv-miss", "NoKV", "")
	e.requireNoKV("kv-miss", "nope")
}

func kvSetMultipleValuesSameTurn(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "MultiKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("a", "1")
		ctx.SetKVValue("b", "2")
		ctx.SetKVValue("c", "3")
		return "done", nil
	})
	e.runOne(r, "kv-multi", "MultiKV", "")
	e.requireKV("kv-multi", "a", "1")
	e.requireKV("kv-multi", "b", "2")
	e.requireKV("kv-multi", "c", "3")
}

func kvOverwriteSameKey(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "OverwriteKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("k", "first")
		ctx.SetKVValue("k", "second")
		return "done", nil
	})
	e.runOne(r, "kv-ow", "OverwriteKV", "")
	e.requireKV("kv-ow", "k", "second")
}

func kvClearSingleValue(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "ClearKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("x", "10")
		ctx.ClearKVValue("x")
		return "done", nil
	})
	e.runOne(r, "kv-clr", "ClearKV", "")
	e.requireNoKV("kv-clr", "x")
}

func kvClearAllValues(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "ClearAllKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("a", "1")
		ctx.SetKVValue("b", "2")
		ctx.ClearAllKVValues()
		return "done", nil
	})
	e.runOne(r, "kv-clra", "ClearAllKV", "")
	e.requireNoKV("kv-clra", "a")
	e.requireNoKV("kv-clra", "b")
}

func kvPersistsAcrossTurns(e *env) {
	r := durable.NewRegistry()
	noop(e.t, r, "DoWork", "result")
	orch(e.t, r, "KVTurns", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("step", "before_activity")
		_, _ = ctx.ScheduleActivity("DoWork", "").Await()
		if err := expectKV(ctx, "step", some("before_activity"), "after the activity turn"); err != nil {
			return "", err
		}
		ctx.SetKVValue("step", "after_activity")
		return "done", nil
	})
	e.runOne(r, "kv-turns", "KVTurns", "")
	e.requireKV("kv-turns", "step", "after_activity")
}

func kvTypedRoundTrip(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TypedKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		durable.SetKVValue(ctx, "count", int32(42))
		v, ok, err := durable.GetKVValue[int32](ctx, "count")
		if err != nil {
			return "", err
		}
		if !ok || v != 42 {
			return "", fmt.Errorf("typed read: %v %v, want Some(42)", v, ok)
		}
		return "done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-typed", "TypedKV", ""))
	// Rust's typed client read (get_kv_value_typed) is a JSON decode of
	// the raw read; Go's client has only the raw read, so decode here.
	raw := e.kvValue("kv-typed", "count")
	require.NotNil(e.t, raw)
	var n int32
	require.NoError(e.t, json.Unmarshal([]byte(*raw), &n))
	require.Equal(e.t, int32(42), n)
}

// kvValue is a client read as an option (nil: absent).
func (e *env) kvValue(instance, key string) *string {
	e.t.Helper()
	v, ok, err := e.client().GetKVValue(e.ctx, instance, key)
	require.NoError(e.t, err)
	if !ok {
		return nil
	}
	return &v
}

func kvGetValueReadsLocalState(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "LocalKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if err := expectKV(ctx, "x", nil, "before set"); err != nil {
			return "", err
		}
		ctx.SetKVValue("x", "hello")
		if err := expectKV(ctx, "x", some("hello"), "after set"); err != nil {
			return "", err
		}
		ctx.ClearKVValue("x")
		if err := expectKV(ctx, "x", nil, "after clear"); err != nil {
			return "", err
		}
		return "done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-local", "LocalKV", ""))
}

func kvSurvivesContinueAsNew(e *env) {
	var iteration atomic.Uint32
	r := durable.NewRegistry()
	orch(e.t, r, "CANKVV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if iteration.Add(1)-1 == 0 {
			ctx.SetKVValue("counter", "1")
			return "", ctx.ContinueAsNew("next")
		}
		if err := expectKV(ctx, "counter", some("1"), "KV should survive continue_as_new"); err != nil {
			return "", err
		}
		return "done", nil
	})
	require.Equal(e.t, "done", e.requireCompleted(e.runOne(r, "kv-can", "CANKVV", "")))
	e.requireKV("kv-can", "counter", "1")
}

func kvGetValueFromInstance(e *env) {
	r := durable.NewRegistry()
	noop(e.t, r, "Noop", "ok")
	orch(e.t, r, "Writer", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("secret", "42")
		_, _ = ctx.ScheduleWait("done").Await()
		return "done", nil
	})
	orch(e.t, r, "Reader", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v, err := ctx.GetKVValueFromInstance("kv-writer", "secret").Await()
		if err != nil {
			return "", err
		}
		return strOr(v, "missing"), nil
	})
	e.start(r, nil)
	e.startOrch("kv-writer", "Writer", "")
	e.waitKV("kv-writer", "secret")
	e.startOrch("kv-reader", "Reader", "")
	require.Equal(e.t, "42", e.completed("kv-reader"))
	e.raise("kv-writer", "done", "")
	e.wait("kv-writer")
}

func kvDeletedWithInstance(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "KVDel", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("foo", "bar")
		return "done", nil
	})
	e.runOne(r, "kv-del", "KVDel", "")
	e.requireKV("kv-del", "foo", "bar")
	_, err := e.client().DeleteInstance(e.ctx, "kv-del", true)
	require.NoError(e.t, err)
	e.requireNoKV("kv-del", "foo")
}

// --- limits --------------------------------------------------------------------

func kvExceedingKeyLimitFailsOrchestration(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TooManyKeys", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		for i := 0; i <= durable.MaxKVKeys; i++ {
			ctx.SetKVValue(fmt.Sprintf("key_%d", i), fmt.Sprintf("val_%d", i))
		}
		return "done", nil
	})
	st := e.runOne(r, "kv-limit", "TooManyKeys", "")
	require.Equal(e.t, durable.StateFailed, st.State, "expected Failed, got output %q", st.Output)
	msg := fmt.Sprintf("%+v", st.Details)
	require.Contains(e.t, msg, "KV key count", "Expected KV key count error")
}

func kvExceedingValueSizeLimitFailsOrchestration(e *env) {
	oversized := strings.Repeat("x", durable.MaxKVValueBytes+1)
	r := durable.NewRegistry()
	orch(e.t, r, "BigValue", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("big", oversized)
		return "done", nil
	})
	st := e.runOne(r, "kv-big", "BigValue", "")
	require.Equal(e.t, durable.StateFailed, st.State, "expected Failed, got output %q", st.Output)
	msg := fmt.Sprintf("%+v", st.Details)
	require.True(e.t, strings.Contains(msg, "KV value") && strings.Contains(msg, "exceeds limit"), "Expected KV value size error, got: %s", msg)
}

func kvAtKeyLimitSucceeds(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "ExactKeys", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		for i := 0; i < durable.MaxKVKeys; i++ {
			ctx.SetKVValue(fmt.Sprintf("key_%d", i), fmt.Sprintf("val_%d", i))
		}
		return "done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-exact", "ExactKeys", ""))
}

func kvClearAllResetsKeyCount(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "ClearAndRefill", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		for i := 0; i < durable.MaxKVKeys; i++ {
			ctx.SetKVValue(fmt.Sprintf("old_%d", i), "v")
		}
		ctx.ClearAllKVValues()
		for i := 0; i < durable.MaxKVKeys; i++ {
			ctx.SetKVValue(fmt.Sprintf("new_%d", i), "v")
		}
		return "done", nil
	})
	st := e.runOne(r, "kv-clr-refill", "ClearAndRefill", "")
	require.Equal(e.t, durable.StateCompleted, st.State, "Expected Completed after clear_all + refill, got: %s %s", st.State, st.FailureMessage())
}

func kvWorksInSelectBranch(e *env) {
	r := durable.NewRegistry()
	noop(e.t, r, "FastTask", "fast")
	orch(e.t, r, "SelectKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		timer := ctx.ScheduleTimer(60 * time.Second)
		activity := ctx.ScheduleActivity("FastTask", "")
		if ctx.Select(timer, activity) == 0 {
			ctx.SetKVValue("winner", "timer")
		} else {
			if _, err := activity.Await(); err != nil {
				return "", err
			}
			ctx.SetKVValue("winner", "activity")
		}
		return kvOr(ctx, "winner", ""), nil
	})
	require.Equal(e.t, "activity", e.requireCompleted(e.runOne(r, "kv-sel", "SelectKV", "")), "Activity should win the select2")
	e.requireKV("kv-sel", "winner", "activity")
}

// --- terminal states -------------------------------------------------------------

func kvAccessibleAfterCompletion(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Completer", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("status", "done")
		ctx.SetKVValue("result", "42")
		return "completed", nil
	})
	e.requireCompleted(e.runOne(r, "kv-complete", "Completer", ""))
	e.requireKV("kv-complete", "status", "done")
	e.requireKV("kv-complete", "result", "42")
}

func kvAccessibleAfterFailure(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "FailActivity", func(durable.ActivityContext, string) (string, error) { return "", errors.New("boom") })
	orch(e.t, r, "Failer", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("progress", "started")
		ctx.SetKVValue("step", "pre-activity")
		if _, err := ctx.ScheduleActivity("FailActivity", "").Await(); err != nil {
			return "", err
		}
		return "unreachable", nil
	})
	st := e.runOne(r, "kv-fail", "Failer", "")
	require.Equal(e.t, durable.StateFailed, st.State, "output %q", st.Output)
	e.requireKV("kv-fail", "progress", "started")
	e.requireKV("kv-fail", "step", "pre-activity")
}

func kvNotAccessibleAfterDeletion(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "KvOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("important", "data")
		ctx.SetKVValue("other", "stuff")
		return "done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-del", "KvOrch", ""))
	e.requireKV("kv-del", "important", "data")
	res, err := e.client().DeleteInstance(e.ctx, "kv-del", false)
	require.NoError(e.t, err)
	require.GreaterOrEqual(e.t, res.InstancesDeleted, uint64(1))
	e.requireNoKV("kv-del", "important")
	e.requireNoKV("kv-del", "other")
}

// --- pruning and deletion ------------------------------------------------------------

func keepLast(n uint32) duroxide.PruneOptions { return duroxide.PruneOptions{KeepLast: &n} }

func kvPruneExecutionRemovesOrphanKeys(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "PruneKv", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if exec, _ := strconv.ParseUint(in, 10, 32); exec == 0 {
			ctx.SetKVValue("ephemeral", "from_exec_1")
			ctx.SetKVValue("persistent", "from_exec_1")
			return "", ctx.ContinueAsNew("1")
		}
		ctx.SetKVValue("persistent", "from_exec_2")
		return "done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-prune", "PruneKv", "0"))
	e.requireKV("kv-prune", "ephemeral", "from_exec_1")
	e.requireKV("kv-prune", "persistent", "from_exec_2")
	res, err := e.client().PruneExecutions(e.ctx, "kv-prune", keepLast(1))
	require.NoError(e.t, err)
	require.GreaterOrEqual(e.t, res.ExecutionsDeleted, uint64(1))
	// KV is instance-scoped: a key last written by a pruned execution stays.
	e.requireKV("kv-prune", "ephemeral", "from_exec_1")
	e.requireKV("kv-prune", "persistent", "from_exec_2")
}

func kvDeleteInstanceRemovesAllKV(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "KvDelInst", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if exec, _ := strconv.ParseUint(in, 10, 32); exec == 0 {
			ctx.SetKVValue("a", "1")
			ctx.SetKVValue("b", "2")
			return "", ctx.ContinueAsNew("1")
		}
		ctx.SetKVValue("c", "3")
		return "done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-delinst", "KvDelInst", "0"))
	e.requireKV("kv-delinst", "a", "1")
	e.requireKV("kv-delinst", "b", "2")
	e.requireKV("kv-delinst", "c", "3")
	res, err := e.client().DeleteInstance(e.ctx, "kv-delinst", false)
	require.NoError(e.t, err)
	require.GreaterOrEqual(e.t, res.InstancesDeleted, uint64(1))
	e.requireNoKV("kv-delinst", "a")
	e.requireNoKV("kv-delinst", "b")
	e.requireNoKV("kv-delinst", "c")
}

// --- across turns and continue-as-new -----------------------------------------------

func kvUpdateAcrossTurns(e *env) {
	r := durable.NewRegistry()
	noop(e.t, r, "Noop", "ok")
	orch(e.t, r, "UpdateAcross", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("counter", "1")
		if _, err := ctx.ScheduleActivity("Noop", "").Await(); err != nil {
			return "", err
		}
		if err := expectKV(ctx, "counter", some("1"), "turn 2"); err != nil {
			return "", err
		}
		ctx.SetKVValue("counter", "2")
		if _, err := ctx.ScheduleActivity("Noop", "").Await(); err != nil {
			return "", err
		}
		if err := expectKV(ctx, "counter", some("2"), "turn 3"); err != nil {
			return "", err
		}
		return "done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-upd", "UpdateAcross", ""))
	e.requireKV("kv-upd", "counter", "2")
}

func kvClearValueThenReset(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "ClearReset", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("key", "old")
		ctx.ClearKVValue("key")
		ctx.SetKVValue("key", "new")
		return "done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-clreset", "ClearReset", ""))
	e.requireKV("kv-clreset", "key", "new")
}

func kvOverwriteAfterCAN(e *env) {
	var iteration atomic.Uint32
	r := durable.NewRegistry()
	orch(e.t, r, "CanOverwrite", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if iteration.Add(1)-1 == 0 {
			ctx.SetKVValue("A", "old")
			return "", ctx.ContinueAsNew("next")
		}
		ctx.SetKVValue("A", "new")
		return "done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-canovr", "CanOverwrite", ""))
	e.requireKV("kv-canovr", "A", "new")
}

func kvClearAfterCAN(e *env) {
	var iteration atomic.Uint32
	r := durable.NewRegistry()
	orch(e.t, r, "CanClear", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if iteration.Add(1)-1 == 0 {
			ctx.SetKVValue("A", "val_a")
			ctx.SetKVValue("B", "val_b")
			return "", ctx.ContinueAsNew("next")
		}
		ctx.ClearAllKVValues()
		return "done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-canclr", "CanClear", ""))
	e.requireNoKV("kv-canclr", "A")
	e.requireNoKV("kv-canclr", "B")
}

func kvCANChainAccumulation(e *env) {
	var iteration atomic.Uint32
	r := durable.NewRegistry()
	orch(e.t, r, "CanAccum", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		switch iteration.Add(1) - 1 {
		case 0:
			ctx.SetKVValue("count", "1")
			return "", ctx.ContinueAsNew("next")
		case 1:
			n, err := strconv.ParseUint(kvOr(ctx, "count", "0"), 10, 32)
			if err != nil {
				return "", err
			}
			ctx.SetKVValue("count", strconv.FormatUint(n+1, 10))
			return "", ctx.ContinueAsNew("next2")
		default:
			if err := expectKV(ctx, "count", some("2"), "third execution"); err != nil {
				return "", err
			}
			return "done", nil
		}
	})
	e.requireCompleted(e.runOne(r, "kv-accum", "CanAccum", ""))
	e.requireKV("kv-accum", "count", "2")
}

func kvBulkPrune(e *env) {
	var iteration atomic.Uint32
	r := durable.NewRegistry()
	orch(e.t, r, "BulkPruneKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if iteration.Add(1)-1 == 0 {
			ctx.SetKVValue("first_only", "exec1")
			ctx.SetKVValue("shared", "exec1")
			return "", ctx.ContinueAsNew("next")
		}
		ctx.SetKVValue("shared", "exec2")
		return "done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-bprune", "BulkPruneKV", ""))
	res, err := e.client().PruneExecutions(e.ctx, "kv-bprune", keepLast(1))
	require.NoError(e.t, err)
	require.GreaterOrEqual(e.t, res.ExecutionsDeleted, uint64(1))
	e.requireKV("kv-bprune", "first_only", "exec1")
	e.requireKV("kv-bprune", "shared", "exec2")
}

func clientGetValueRunning(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "RunningKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("progress", "initialized")
		_, _ = ctx.ScheduleWait("finish").Await()
		return "done", nil
	})
	e.start(r, nil)
	e.startOrch("kv-running", "RunningKV", "")
	require.Equal(e.t, "initialized", e.waitKV("kv-running", "progress"))
	e.raise("kv-running", "finish", "")
	e.wait("kv-running")
}

// --- cross-instance reads ---------------------------------------------------------------

func kvGetValueFromInstanceKeyMissing(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Writer2", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("exists", "yes")
		_, _ = ctx.ScheduleWait("done").Await()
		return "done", nil
	})
	orch(e.t, r, "Reader2", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v, err := ctx.GetKVValueFromInstance("kv-writer2", "nonexistent").Await()
		if err != nil {
			return "", err
		}
		return strOr(v, "none"), nil
	})
	e.start(r, nil)
	e.startOrch("kv-writer2", "Writer2", "")
	e.waitKV("kv-writer2", "exists")
	e.startOrch("kv-reader2", "Reader2", "")
	require.Equal(e.t, "none", e.completed("kv-reader2"))
	e.raise("kv-writer2", "done", "")
	e.wait("kv-writer2")
}

func kvGetValueFromInstanceUnknownInstance(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "ReaderUnknown", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v, err := ctx.GetKVValueFromInstance("no-such-inst", "key").Await()
		if err != nil {
			return "", err
		}
		return strOr(v, "none"), nil
	})
	require.Equal(e.t, "none", e.requireCompleted(e.runOne(r, "kv-unknown", "ReaderUnknown", "")))
}

// rustDebugOptionVec formats an Option<Vec<u32>> as Rust's {:?} does.
func rustDebugOptionVec(v *[]uint32) string {
	if v == nil {
		return "None"
	}
	parts := make([]string, len(*v))
	for i, n := range *v {
		parts[i] = strconv.FormatUint(uint64(n), 10)
	}
	return "Some([" + strings.Join(parts, ", ") + "])"
}

func kvGetValueFromInstanceTypedE2E(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TypedWriter", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		durable.SetKVValue(ctx, "config", []uint32{1, 2, 3})
		_, _ = ctx.ScheduleWait("done").Await()
		return "done", nil
	})
	orch(e.t, r, "TypedReader", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v, err := durable.GetKVValueFromInstance[[]uint32](ctx, "kv-tw", "config").Await()
		if err != nil {
			return "", err
		}
		return rustDebugOptionVec(v), nil
	})
	e.start(r, nil)
	e.startOrch("kv-tw", "TypedWriter", "")
	e.waitKV("kv-tw", "config")
	e.startOrch("kv-tr", "TypedReader", "")
	require.Equal(e.t, "Some([1, 2, 3])", e.completed("kv-tr"))
	e.raise("kv-tw", "done", "")
	e.wait("kv-tw")
}

func kvGetValueFromInstanceReplaySafe(e *env) {
	r := durable.NewRegistry()
	noop(e.t, r, "Noop", "ok")
	orch(e.t, r, "SourceOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("data", "source_value")
		_, _ = ctx.ScheduleWait("done").Await()
		return "done", nil
	})
	orch(e.t, r, "ReplayReader", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v, err := ctx.GetKVValueFromInstance("kv-source", "data").Await()
		if err != nil {
			return "", err
		}
		if _, err := ctx.ScheduleActivity("Noop", "").Await(); err != nil {
			return "", err
		}
		return strOr(v, "missing"), nil
	})
	e.start(r, nil)
	e.startOrch("kv-source", "SourceOrch", "")
	e.waitKV("kv-source", "data")
	e.startOrch("kv-replayer", "ReplayReader", "")
	require.Equal(e.t, "source_value", e.completed("kv-replayer"))
	e.raise("kv-source", "done", "")
	e.wait("kv-source")
}

func kvGetValueFromInstanceAfterSourceUpdate(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "LiveSource", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("v", "1")
		_, _ = ctx.ScheduleWait("update").Await()
		ctx.SetKVValue("v", "2")
		_, _ = ctx.ScheduleWait("done").Await()
		return "done", nil
	})
	orch(e.t, r, "LiveReader", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v1, err := ctx.GetKVValueFromInstance("kv-lsrc", "v").Await()
		if err != nil {
			return "", err
		}
		ctx.SetKVValue("read1", strOr(v1, ""))
		_, _ = ctx.ScheduleWait("source_updated").Await()
		v2, err := ctx.GetKVValueFromInstance("kv-lsrc", "v").Await()
		if err != nil {
			return "", err
		}
		ctx.SetKVValue("read2", strOr(v2, ""))
		return strOr(v1, "") + "," + strOr(v2, ""), nil
	})
	e.start(r, nil)
	e.startOrch("kv-lsrc", "LiveSource", "")
	e.waitKVEquals("kv-lsrc", "v", "1")
	e.startOrch("kv-lrdr", "LiveReader", "")
	// Rust sleeps 500 ms for the first read; wait for its record instead.
	e.waitKV("kv-lrdr", "read1")
	require.True(e.t, e.waitSubscription("kv-lsrc", "update"))
	e.raise("kv-lsrc", "update", "")
	e.waitKVEquals("kv-lsrc", "v", "2")
	require.True(e.t, e.waitSubscription("kv-lrdr", "source_updated"))
	e.raise("kv-lrdr", "source_updated", "")
	require.Equal(e.t, "1,2", e.completed("kv-lrdr"))
	e.raise("kv-lsrc", "done", "")
	e.wait("kv-lsrc")
}

// --- sub-orchestrations -----------------------------------------------------------------

func kvParentChildIsolation(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Parent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("role", "parent")
		return ctx.ScheduleSubOrchestration("Child", "").Await()
	})
	orch(e.t, r, "Child", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if err := expectKV(ctx, "role", nil, "child should not see parent KV"); err != nil {
			return "", err
		}
		ctx.SetKVValue("role", "child")
		return "child_done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-parent-iso", "Parent", ""))
	e.requireKV("kv-parent-iso", "role", "parent")
}

func kvDeleteParentCascadesChildKV(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "ParentDel", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("parent_key", "parent_val")
		if _, err := ctx.ScheduleSubOrchestration("ChildDel", "").Await(); err != nil {
			return "", err
		}
		return "done", nil
	})
	orch(e.t, r, "ChildDel", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("child_key", "child_val")
		return "done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-pdel", "ParentDel", ""))
	del, err := e.client().DeleteInstance(e.ctx, "kv-pdel", false)
	require.NoError(e.t, err)
	require.GreaterOrEqual(e.t, del.InstancesDeleted, uint64(1))
	e.requireNoKV("kv-pdel", "parent_key")
}

// --- mixed with other work ---------------------------------------------------------------

func kvInterleavedWithActivitiesAndTimers(e *env) {
	r := durable.NewRegistry()
	noop(e.t, r, "Work", "worked")
	orch(e.t, r, "Interleave", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("step", "1")
		if _, err := ctx.ScheduleActivity("Work", "").Await(); err != nil {
			return "", err
		}
		ctx.SetKVValue("step", "2")
		_, _ = ctx.ScheduleTimer(time.Millisecond).Await()
		ctx.ClearAllKVValues()
		ctx.SetKVValue("step", "final")
		return kvOr(ctx, "step", ""), nil
	})
	require.Equal(e.t, "final", e.requireCompleted(e.runOne(r, "kv-interl", "Interleave", "")))
	e.requireKV("kv-interl", "step", "final")
}

func kvInFanOutFanIn(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Process", func(_ durable.ActivityContext, in string) (string, error) { return "result_" + in, nil })
	orch(e.t, r, "FanOutKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		var futs []*durable.Future[string]
		for i := 0; i < 5; i++ {
			futs = append(futs, ctx.ScheduleActivity("Process", strconv.Itoa(i)))
		}
		for i, res := range durable.Join(ctx, futs...) {
			if res.Err == nil {
				ctx.SetKVValue(fmt.Sprintf("result_%d", i), res.Value)
			}
		}
		return "done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-fanout", "FanOutKV", ""))
	for i := 0; i < 5; i++ {
		e.requireKV("kv-fanout", fmt.Sprintf("result_%d", i), fmt.Sprintf("result_%d", i))
	}
}

func kvJSONValue(e *env) {
	const data = `{"nested": [1,2,3]}`
	r := durable.NewRegistry()
	orch(e.t, r, "JsonKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("data", data)
		return "done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-json", "JsonKV", ""))
	e.requireKV("kv-json", "data", data)
}

func kvEmptyKey(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "EmptyKeyKV", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("", "value_for_empty_key")
		return "done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-emptykey", "EmptyKeyKV", ""))
	e.requireKV("kv-emptykey", "", "value_for_empty_key")
}

func kvClearValueThenSetSameKey(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "ClearSetSame", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("A", "1")
		ctx.ClearKVValue("A")
		ctx.SetKVValue("A", "2")
		return kvOr(ctx, "A", ""), nil
	})
	require.Equal(e.t, "2", e.requireCompleted(e.runOne(r, "kv-clrset", "ClearSetSame", "")))
	e.requireKV("kv-clrset", "A", "2")
}

func kvGetValueFromInstanceSelf(e *env) {
	r := durable.NewRegistry()
	noop(e.t, r, "Noop", "ok")
	orch(e.t, r, "SelfRead", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("key", "local_val")
		if _, err := ctx.ScheduleActivity("Noop", "").Await(); err != nil {
			return "", err
		}
		v, err := ctx.GetKVValueFromInstance("kv-self", "key").Await()
		if err != nil {
			return "", err
		}
		return strOr(v, "missing"), nil
	})
	require.Equal(e.t, "local_val", e.requireCompleted(e.runOne(r, "kv-self", "SelfRead", "")))
}

func kvGetValueTypedWrongType(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TypeMismatch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		durable.SetKVValue(ctx, "data", []uint32{1, 2, 3})
		v, ok, err := durable.GetKVValue[map[string]string](ctx, "data")
		switch {
		case err != nil:
			return "error_caught", nil
		case !ok:
			return "none", nil
		default:
			return fmt.Sprintf("unexpected: %v", v), nil
		}
	})
	require.Equal(e.t, "error_caught", e.requireCompleted(e.runOne(r, "kv-typemis", "TypeMismatch", "")))
}

// singleSlot is Rust's RuntimeOptions{orchestration_concurrency: 1,
// worker_concurrency: 1} (the Rust tests also pin tokio to one thread,
// which has no Go counterpart; one slot of each kind is the part that
// shapes the runtime's behaviour).
func singleSlot() *durable.Options {
	return &durable.Options{OrchestrationConcurrency: 1, WorkerConcurrency: 1}
}

func kvSingleThreadBasic(e *env) {
	r := durable.NewRegistry()
	noop(e.t, r, "Task", "ok")
	orch(e.t, r, "STKv", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("key", "val")
		if _, err := ctx.ScheduleActivity("Task", "").Await(); err != nil {
			return "", err
		}
		return kvOr(ctx, "key", ""), nil
	})
	e.start(r, singleSlot())
	e.startOrch("kv-st", "STKv", "")
	require.Equal(e.t, "val", e.completed("kv-st"))
	e.requireKV("kv-st", "key", "val")
}

func kvSingleThreadCANWithKV(e *env) {
	var iteration atomic.Uint32
	r := durable.NewRegistry()
	orch(e.t, r, "STCAN", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if iteration.Add(1)-1 == 0 {
			ctx.SetKVValue("count", "1")
			return "", ctx.ContinueAsNew("next")
		}
		if err := expectKV(ctx, "count", some("1"), "second execution"); err != nil {
			return "", err
		}
		return "done", nil
	})
	e.start(r, singleSlot())
	e.startOrch("kv-stcan", "STCAN", "")
	e.completed("kv-stcan")
	e.requireKV("kv-stcan", "count", "1")
}

// --- stress --------------------------------------------------------------------------------

func kvStressConcurrentWrites(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "ConcWrite", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		for i := 0; i < 5; i++ {
			ctx.SetKVValue(fmt.Sprintf("key_%d", i), fmt.Sprintf("val_%s_%d", in, i))
		}
		return "wrote_" + in, nil
	})
	e.start(r, nil)
	completed := e.startAndWaitConcurrently(10, func(i int) (string, string, string) {
		return fmt.Sprintf("kv-conc-%d", i), "ConcWrite", strconv.Itoa(i)
	}, func(int, *durable.OrchestrationStatus) {})
	require.Equal(e.t, 10, completed, "All 10 orchestrations should complete")
	for _, i := range []int{0, 3, 7, 9} {
		e.requireKV(fmt.Sprintf("kv-conc-%d", i), "key_0", fmt.Sprintf("val_%d_0", i))
	}
}

// startAndWaitConcurrently starts n instances from n goroutines, each with
// its own client (as the Rust tests spawn n tasks), waits for all and
// returns how many completed; check sees each completed status.
func (e *env) startAndWaitConcurrently(n int, spec func(i int) (instance, name, input string), check func(i int, st *durable.OrchestrationStatus)) int {
	e.t.Helper()
	statuses := make([]*durable.OrchestrationStatus, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := durable.NewClient(e.p)
			id, name, in := spec(i)
			if errs[i] = c.StartOrchestration(e.ctx, id, name, in); errs[i] != nil {
				return
			}
			statuses[i], errs[i] = c.WaitForOrchestration(e.ctx, id, waitTimeout)
		}()
	}
	wg.Wait()
	completed := 0
	for i := 0; i < n; i++ {
		require.NoError(e.t, errs[i], "instance %d", i)
		if statuses[i].State == durable.StateCompleted {
			check(i, statuses[i])
			completed++
		}
	}
	return completed
}

func kvStressHighKeyCount(e *env) {
	var turns atomic.Uint32
	r := durable.NewRegistry()
	noop(e.t, r, "Noop", "ok")
	orch(e.t, r, "ManyKeys", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		for i := 0; i < durable.MaxKVKeys; i++ {
			ctx.SetKVValue(fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i))
		}
		if turns.Add(1)-1 < 5 {
			if _, err := ctx.ScheduleActivity("Noop", "").Await(); err != nil {
				return "", err
			}
			for i := 0; i < durable.MaxKVKeys; i++ {
				ctx.SetKVValue(fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i))
			}
		}
		return "done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-manykeys", "ManyKeys", ""))
	for i := 0; i < durable.MaxKVKeys; i++ {
		require.NotNil(e.t, e.kvValue("kv-manykeys", fmt.Sprintf("k%d", i)), "key k%d should exist", i)
	}
}

func kvStressCrossInstanceReads(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "SharedWriter", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("shared", "producer_value")
		_, _ = ctx.ScheduleWait("done").Await()
		return "done", nil
	})
	orch(e.t, r, "ConcReader", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v, err := ctx.GetKVValueFromInstance("kv-shared-src", "shared").Await()
		if err != nil {
			return "", err
		}
		return strOr(v, "missing"), nil
	})
	e.start(r, nil)
	e.startOrch("kv-shared-src", "SharedWriter", "")
	e.waitKV("kv-shared-src", "shared")
	completed := e.startAndWaitConcurrently(10, func(i int) (string, string, string) {
		return fmt.Sprintf("kv-reader-%d", i), "ConcReader", ""
	}, func(i int, st *durable.OrchestrationStatus) {
		require.Equal(e.t, "producer_value", st.Output, "reader %d", i)
	})
	require.Equal(e.t, 10, completed, "All 10 readers should complete")
	e.raise("kv-shared-src", "done", "")
}

func kvStressCANThroughput(e *env) {
	var iteration atomic.Uint32
	r := durable.NewRegistry()
	orch(e.t, r, "CANThroughput", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		i := iteration.Add(1) - 1
		ctx.SetKVValue("iter", strconv.FormatUint(uint64(i), 10))
		if i < 4 {
			return "", ctx.ContinueAsNew(fmt.Sprintf("iter_%d", i+1))
		}
		return "done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-can-tput", "CANThroughput", ""))
	e.requireKV("kv-can-tput", "iter", "4")
}

// --- client get-all ----------------------------------------------------------------------------

func (e *env) kvAll(instance string) map[string]string {
	e.t.Helper()
	all, err := e.client().GetKVAllValues(e.ctx, instance)
	require.NoError(e.t, err)
	return all
}

func kvClientGetAllValues(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "SetMulti", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("a", "1")
		ctx.SetKVValue("b", "2")
		ctx.SetKVValue("c", "3")
		return "done", nil
	})
	e.runOne(r, "kv-all-1", "SetMulti", "")
	require.Equal(e.t, map[string]string{"a": "1", "b": "2", "c": "3"}, e.kvAll("kv-all-1"))
}

func kvClientGetAllValuesEmpty(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "NoKV", func(*durable.OrchestrationContext, string) (string, error) { return "done", nil })
	e.runOne(r, "kv-all-empty", "NoKV", "")
	require.Empty(e.t, e.kvAll("kv-all-empty"))
}

func kvClientGetAllValuesAfterOverwrite(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Overwrite", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("x", "old")
		ctx.SetKVValue("y", "keep")
		ctx.SetKVValue("x", "new")
		return "done", nil
	})
	e.runOne(r, "kv-all-ow", "Overwrite", "")
	require.Equal(e.t, map[string]string{"x": "new", "y": "keep"}, e.kvAll("kv-all-ow"))
}

func kvClientGetAllValuesAfterClear(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "ClearSome", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("a", "1")
		ctx.SetKVValue("b", "2")
		ctx.SetKVValue("c", "3")
		ctx.ClearKVValue("b")
		return "done", nil
	})
	e.runOne(r, "kv-all-clr", "ClearSome", "")
	all := e.kvAll("kv-all-clr")
	require.Equal(e.t, map[string]string{"a": "1", "c": "3"}, all)
	require.NotContains(e.t, all, "b")
}

func kvClientGetAllValuesAcrossCAN(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "CANKV", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		n, _ := strconv.ParseUint(in, 10, 32)
		ctx.SetKVValue(fmt.Sprintf("key_%d", n), fmt.Sprintf("val_%d", n))
		if n < 2 {
			return "", ctx.ContinueAsNew(strconv.FormatUint(n+1, 10))
		}
		return "done", nil
	})
	e.runOne(r, "kv-all-can", "CANKV", "0")
	require.Equal(e.t, map[string]string{"key_0": "val_0", "key_1": "val_1", "key_2": "val_2"}, e.kvAll("kv-all-can"))
}

// --- prune_kv_values_updated_before ------------------------------------------------------------

func utcNowMs(ctx *durable.OrchestrationContext) (uint64, error) {
	now, err := ctx.UtcNow().Await()
	if err != nil {
		return 0, err
	}
	return uint64(now.UnixMilli()), nil
}

func kvPruneOldValuesByTimestamp(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "PruneTS", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if n, _ := strconv.ParseUint(in, 10, 32); n == 0 {
			ctx.SetKVValue("old1", "v1")
			ctx.SetKVValue("old2", "v2")
			return "", ctx.ContinueAsNew("1")
		}
		_, _ = ctx.ScheduleTimer(50 * time.Millisecond).Await()
		now, err := utcNowMs(ctx)
		if err != nil {
			return "", err
		}
		ctx.SetKVValue("fresh", "v3")
		return fmt.Sprintf("removed:%d", ctx.PruneKVValuesUpdatedBefore(now)), nil
	})
	require.Equal(e.t, "removed:2", e.requireCompleted(e.runOne(r, "kv-prune-ts", "PruneTS", "0")))
	e.requireNoKV("kv-prune-ts", "old1")
	e.requireNoKV("kv-prune-ts", "old2")
	e.requireKV("kv-prune-ts", "fresh", "v3")
}

func kvPruneWithZeroThresholdDoesNothing(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "PruneZero", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if n, _ := strconv.ParseUint(in, 10, 32); n == 0 {
			ctx.SetKVValue("a", "1")
			ctx.SetKVValue("b", "2")
			return "", ctx.ContinueAsNew("1")
		}
		removed := ctx.PruneKVValuesUpdatedBefore(0)
		return fmt.Sprintf("removed:%d,a:%s,b:%s", removed, kvOr(ctx, "a", ""), kvOr(ctx, "b", "")), nil
	})
	require.Equal(e.t, "removed:0,a:1,b:2", e.requireCompleted(e.runOne(r, "kv-prune-0", "PruneZero", "0")))
}

func kvPruneEmptyReturnsZero(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "PruneEmpty", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return fmt.Sprintf("removed:%d", ctx.PruneKVValuesUpdatedBefore(^uint64(0))), nil
	})
	require.Equal(e.t, "removed:0", e.requireCompleted(e.runOne(r, "kv-prune-empty", "PruneEmpty", "")))
}

func kvPruneCurrentTurnKeysWithMaxThreshold(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "PruneMax", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("x", "1")
		ctx.SetKVValue("y", "2")
		removed := ctx.PruneKVValuesUpdatedBefore(^uint64(0))
		return fmt.Sprintf("removed:%d,x:%s,y:%s", removed, kvOr(ctx, "x", "gone"), kvOr(ctx, "y", "gone")), nil
	})
	require.Equal(e.t, "removed:2,x:gone,y:gone", e.requireCompleted(e.runOne(r, "kv-prune-max", "PruneMax", "")))
}

func kvPruneUnpersistedCurrentTurnKeyWithWallClock(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "PruneWall", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("ephemeral", "will_be_pruned")
		// As in Rust, a deliberate non-deterministic wall-clock read (never
		// do this in real code): a timestamp at or after the key's, proving
		// unpersisted current-turn keys are prunable by real timestamps.
		time.Sleep(time.Millisecond)
		wallNow := uint64(time.Now().UnixMilli())
		removed := ctx.PruneKVValuesUpdatedBefore(wallNow)
		return fmt.Sprintf("removed:%d,ephemeral:%s", removed, kvOr(ctx, "ephemeral", "gone")), nil
	})
	require.Equal(e.t, "removed:1,ephemeral:gone", e.requireCompleted(e.runOne(r, "kv-prune-wall", "PruneWall", "")))
	e.requireNoKV("kv-prune-wall", "ephemeral")
}

func kvPruneSelectiveByAge(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "PruneSel", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		parts := strings.SplitN(in, ":", 2)
		phase, _ := strconv.ParseUint(parts[0], 10, 32)
		switch phase {
		case 0:
			ctx.SetKVValue("old_key", "old_val")
			return "", ctx.ContinueAsNew("1")
		case 1:
			_, _ = ctx.ScheduleTimer(50 * time.Millisecond).Await()
			boundary, err := utcNowMs(ctx)
			if err != nil {
				return "", err
			}
			ctx.SetKVValue("recent_key", "recent_val")
			return "", ctx.ContinueAsNew(fmt.Sprintf("2:%d", boundary))
		default:
			boundary, err := strconv.ParseUint(parts[1], 10, 64)
			if err != nil {
				return "", err
			}
			_, _ = ctx.ScheduleTimer(10 * time.Millisecond).Await()
			removed := ctx.PruneKVValuesUpdatedBefore(boundary)
			return fmt.Sprintf("removed:%d,old:%s,recent:%s", removed, kvOr(ctx, "old_key", "gone"), kvOr(ctx, "recent_key", "gone")), nil
		}
	})
	require.Equal(e.t, "removed:1,old:gone,recent:recent_val", e.requireCompleted(e.runOne(r, "kv-prune-sel", "PruneSel", "0")))
}

// --- read-modify-write -------------------------------------------------------------------------

func kvReadModifyWriteAcrossTurns(e *env) {
	r := durable.NewRegistry()
	noop(e.t, r, "Noop", "ok")
	orch(e.t, r, "ReadModifyWrite", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("counter", "1")
		if _, err := ctx.ScheduleActivity("Noop", "").Await(); err != nil {
			return "", err
		}
		if v := kvOr(ctx, "counter", "missing"); v != "1" {
			return "", fmt.Errorf("Turn 2 should see value from turn 1, got %q", v)
		}
		if _, err := ctx.ScheduleActivity("Noop", "").Await(); err != nil {
			return "", err
		}
		n, err := strconv.ParseUint(kvOr(ctx, "counter", "missing"), 10, 32)
		if err != nil {
			return "", fmt.Errorf("counter should be a valid u32: %v", err)
		}
		ctx.SetKVValue("counter", strconv.FormatUint(n+1, 10))
		return strconv.FormatUint(n+1, 10), nil
	})
	require.Equal(e.t, "2", e.requireCompleted(e.runOne(r, "kv-rmw", "ReadModifyWrite", "")), "Should have incremented counter from 1 to 2")
	e.requireKV("kv-rmw", "counter", "2")
}

// incrementCounter is one read-modify-write step of the counter key.
func incrementCounter(ctx *durable.OrchestrationContext) error {
	n, err := strconv.ParseUint(kvOr(ctx, "counter", "0"), 10, 32)
	if err != nil {
		return fmt.Errorf("counter should be a valid u32: %v", err)
	}
	ctx.SetKVValue("counter", strconv.FormatUint(n+1, 10))
	return nil
}

func kvReadModifyWriteEveryTurn(e *env) {
	r := durable.NewRegistry()
	noop(e.t, r, "Noop", "ok")
	orch(e.t, r, "RMWEveryTurn", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		for i := 0; i < 5; i++ {
			if err := incrementCounter(ctx); err != nil {
				return "", err
			}
			if _, err := ctx.ScheduleActivity("Noop", "").Await(); err != nil {
				return "", err
			}
		}
		return kvOr(ctx, "counter", "0"), nil
	})
	require.Equal(e.t, "5", e.requireCompleted(e.runOne(r, "kv-rmw-every", "RMWEveryTurn", "")), "5 increments from 0 should yield 5")
	e.requireKV("kv-rmw-every", "counter", "5")
}

func kvClearAllThenSetAcrossTurns(e *env) {
	var iteration atomic.Uint32
	r := durable.NewRegistry()
	noop(e.t, r, "Noop", "ok")
	orch(e.t, r, "ClearAllRMW", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if iteration.Add(1)-1 == 0 {
			ctx.SetKVValue("old_key", "old_val")
			ctx.SetKVValue("shared", "from_exec_1")
			return "", ctx.ContinueAsNew("next")
		}
		ctx.ClearAllKVValues()
		ctx.SetKVValue("new_key", "new_val")
		if _, err := ctx.ScheduleActivity("Noop", "").Await(); err != nil {
			return "", err
		}
		for _, c := range []struct {
			key  string
			want *string
			msg  string
		}{{"old_key", nil, "old_key should be cleared"}, {"shared", nil, "shared should be cleared"}, {"new_key", some("new_val"), "new_key"}} {
			if err := expectKV(ctx, c.key, c.want, c.msg); err != nil {
				return "", err
			}
		}
		ctx.SetKVValue("final", "done")
		return fmt.Sprintf("old=%s,shared=%s,new=%s", kvOr(ctx, "old_key", "none"), kvOr(ctx, "shared", "none"), kvOr(ctx, "new_key", "none")), nil
	})
	require.Equal(e.t, "old=none,shared=none,new=new_val", e.requireCompleted(e.runOne(r, "kv-ca-rmw", "ClearAllRMW", "")))
	e.requireNoKV("kv-ca-rmw", "old_key")
	e.requireKV("kv-ca-rmw", "final", "done")
	e.requireKV("kv-ca-rmw", "new_key", "new_val")
}

func kvClearSingleWithPriorExecutionValue(e *env) {
	var iteration atomic.Uint32
	r := durable.NewRegistry()
	noop(e.t, r, "Noop", "ok")
	orch(e.t, r, "ClearSinglePrior", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if iteration.Add(1)-1 == 0 {
			ctx.SetKVValue("session_token", "abc123")
			ctx.SetKVValue("keep_me", "alive")
			return "", ctx.ContinueAsNew("next")
		}
		ctx.ClearKVValue("session_token")
		if _, err := ctx.ScheduleActivity("Noop", "").Await(); err != nil {
			return "", err
		}
		return fmt.Sprintf("token=%s,kept=%s", kvOr(ctx, "session_token", "none"), kvOr(ctx, "keep_me", "none")), nil
	})
	require.Equal(e.t, "token=none,kept=alive", e.requireCompleted(e.runOne(r, "kv-csp", "ClearSinglePrior", "")))
}

func kvRMWAcrossCANBoundary(e *env) {
	var iteration atomic.Uint32
	r := durable.NewRegistry()
	noop(e.t, r, "Noop", "ok")
	orch(e.t, r, "RmwCan", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if iteration.Add(1)-1 == 0 {
			ctx.SetKVValue("counter", "5")
			return "", ctx.ContinueAsNew("next")
		}
		for i := 0; i < 3; i++ {
			if err := incrementCounter(ctx); err != nil {
				return "", err
			}
			if _, err := ctx.ScheduleActivity("Noop", "").Await(); err != nil {
				return "", err
			}
		}
		return kvOr(ctx, "counter", "0"), nil
	})
	require.Equal(e.t, "8", e.requireCompleted(e.runOne(r, "kv-rmw-can", "RmwCan", "")), "CAN carry-over 5 + 3 RMW increments = 8")
	e.requireKV("kv-rmw-can", "counter", "8")
}
