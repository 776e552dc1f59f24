package durabletest

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
)

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
			statuses[i], errs[i] = c.WaitForOrchestration(e.ctx, id, durable.WaitOptions{Timeout: waitTimeout})
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
		//durablecheck:ignore counts turns, as the Rust test's AtomicU32 does
		if turns.Add(1)-1 < 5 {
			if _, err := durable.CallActivity[string](ctx, "Noop", "").Await(); err != nil {
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
		_, _ = durable.WaitEvent[string](ctx, "done").Await()
		return "done", nil
	})
	orch(e.t, r, "ConcReader", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v, err := ctx.KVValueFromInstance("kv-shared-src", "shared").Await()
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
		//durablecheck:ignore counts executions across continue-as-new, as the Rust test's AtomicU32 does
		i := iteration.Add(1) - 1
		ctx.SetKVValue("iter", strconv.FormatUint(uint64(i), 10))
		if i < 4 {
			return "", durable.ContinueAsNew(ctx, fmt.Sprintf("iter_%d", i+1))
		}
		return "done", nil
	})
	e.requireCompleted(e.runOne(r, "kv-can-tput", "CANThroughput", ""))
	e.requireKV("kv-can-tput", "iter", "4")
}

// --- client get-all ----------------------------------------------------------------------------

func (e *env) kvAll(instance string) map[string]string {
	e.t.Helper()
	all, err := e.client().KVValues(e.ctx, instance)
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
			return "", durable.ContinueAsNew(ctx, strconv.FormatUint(n+1, 10))
		}
		return "done", nil
	})
	e.runOne(r, "kv-all-can", "CANKV", "0")
	require.Equal(e.t, map[string]string{"key_0": "val_0", "key_1": "val_1", "key_2": "val_2"}, e.kvAll("kv-all-can"))
}

// --- prune_kv_values_updated_before ------------------------------------------------------------

func utcNowMs(ctx *durable.OrchestrationContext) (uint64, error) {
	now, err := ctx.UTCNow().Await()
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
			return "", durable.ContinueAsNew(ctx, "1")
		}
		_, _ = durable.NewTimer(ctx, 50*time.Millisecond).Await()
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
			return "", durable.ContinueAsNew(ctx, "1")
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
		//durablecheck:ignore deliberate wall-clock read, as in Rust (see above)
		time.Sleep(time.Millisecond)
		//durablecheck:ignore deliberate wall-clock read, as in Rust (see above)
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
			return "", durable.ContinueAsNew(ctx, "1")
		case 1:
			_, _ = durable.NewTimer(ctx, 50*time.Millisecond).Await()
			boundary, err := utcNowMs(ctx)
			if err != nil {
				return "", err
			}
			ctx.SetKVValue("recent_key", "recent_val")
			return "", durable.ContinueAsNew(ctx, fmt.Sprintf("2:%d", boundary))
		default:
			boundary, err := strconv.ParseUint(parts[1], 10, 64)
			if err != nil {
				return "", err
			}
			_, _ = durable.NewTimer(ctx, 10*time.Millisecond).Await()
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
		if _, err := durable.CallActivity[string](ctx, "Noop", "").Await(); err != nil {
			return "", err
		}
		if v := kvOr(ctx, "counter", "missing"); v != "1" {
			return "", fmt.Errorf("Turn 2 should see value from turn 1, got %q", v)
		}
		if _, err := durable.CallActivity[string](ctx, "Noop", "").Await(); err != nil {
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
			if _, err := durable.CallActivity[string](ctx, "Noop", "").Await(); err != nil {
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
		//durablecheck:ignore counts executions across continue-as-new, as the Rust test's AtomicU32 does
		if iteration.Add(1)-1 == 0 {
			ctx.SetKVValue("old_key", "old_val")
			ctx.SetKVValue("shared", "from_exec_1")
			return "", durable.ContinueAsNew(ctx, "next")
		}
		ctx.ClearAllKVValues()
		ctx.SetKVValue("new_key", "new_val")
		if _, err := durable.CallActivity[string](ctx, "Noop", "").Await(); err != nil {
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
		//durablecheck:ignore counts executions across continue-as-new, as the Rust test's AtomicU32 does
		if iteration.Add(1)-1 == 0 {
			ctx.SetKVValue("session_token", "abc123")
			ctx.SetKVValue("keep_me", "alive")
			return "", durable.ContinueAsNew(ctx, "next")
		}
		ctx.ClearKVValue("session_token")
		if _, err := durable.CallActivity[string](ctx, "Noop", "").Await(); err != nil {
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
		//durablecheck:ignore counts executions across continue-as-new, as the Rust test's AtomicU32 does
		if iteration.Add(1)-1 == 0 {
			ctx.SetKVValue("counter", "5")
			return "", durable.ContinueAsNew(ctx, "next")
		}
		for i := 0; i < 3; i++ {
			if err := incrementCounter(ctx); err != nil {
				return "", err
			}
			if _, err := durable.CallActivity[string](ctx, "Noop", "").Await(); err != nil {
				return "", err
			}
		}
		return kvOr(ctx, "counter", "0"), nil
	})
	require.Equal(e.t, "8", e.requireCompleted(e.runOne(r, "kv-rmw-can", "RmwCan", "")), "CAN carry-over 5 + 3 RMW increments = 8")
	e.requireKV("kv-rmw-can", "counter", "8")
}
