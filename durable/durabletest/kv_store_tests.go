package durabletest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
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
	v, ok, err := e.client().KVValue(e.ctx, instance, key)
	require.NoError(e.t, err)
	require.True(e.t, ok, "%s: key %q should exist", instance, key)
	require.Equal(e.t, want, v, "%s: key %q", instance, key)
}

// requireNoKV asserts instance has no key (Rust: None).
func (e *env) requireNoKV(instance, key string) {
	e.t.Helper()
	v, ok, err := e.client().KVValue(e.ctx, instance, key)
	if errors.Is(err, durable.ErrInstanceNotFound) {
		return // Go's client reports a deleted instance's KV as not found
	}
	require.NoError(e.t, err)
	require.False(e.t, ok, "%s: key %q should be absent, has %q", instance, key, v)
}

// waitKV waits until instance's key exists and returns its value; it
// stands in for Rust's fixed sleeps "until the writer has set its value".
func (e *env) waitKV(instance, key string) string {
	e.t.Helper()
	v, err := e.client().WaitForKVValue(e.ctx, instance, key, durable.WaitOptions{Timeout: waitTimeout})
	require.NoError(e.t, err, "waiting for %s's key %q", instance, key)
	return v
}

// waitKVEquals waits until instance's key holds want.
func (e *env) waitKVEquals(instance, key, want string) {
	e.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		v, ok, err := e.client().KVValue(e.ctx, instance, key)
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
	v, ok := ctx.KVValue(key)
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
	if v, ok := ctx.KVValue(key); ok {
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
		_, _ = durable.CallActivity[string](ctx, "DoWork", "").Await()
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
		v, ok, err := durable.KVValue[int32](ctx, "count")
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
	v, ok, err := e.client().KVValue(e.ctx, instance, key)
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
		//durablecheck:ignore counts executions across continue-as-new, as the Rust test's AtomicU32 does
		if iteration.Add(1)-1 == 0 {
			ctx.SetKVValue("counter", "1")
			return "", durable.ContinueAsNew(ctx, "next")
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
		_, _ = durable.WaitEvent[string](ctx, "done").Await()
		return "done", nil
	})
	orch(e.t, r, "Reader", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v, err := ctx.KVValueFromInstance("kv-writer", "secret").Await()
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
		timer := durable.NewTimer(ctx, 60*time.Second)
		activity := durable.CallActivity[string](ctx, "FastTask", "")
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
		if _, err := durable.CallActivity[string](ctx, "FailActivity", "").Await(); err != nil {
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
