package durabletest

import (
	"strconv"
	"sync/atomic"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// --- pruning and deletion ------------------------------------------------------------

func keepLast(n uint32) duroxide.PruneOptions { return duroxide.PruneOptions{KeepLast: &n} }

func kvPruneExecutionRemovesOrphanKeys(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "PruneKv", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if exec, _ := strconv.ParseUint(in, 10, 32); exec == 0 {
			ctx.SetKVValue("ephemeral", "from_exec_1")
			ctx.SetKVValue("persistent", "from_exec_1")
			return "", durable.ContinueAsNew(ctx, "1")
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
			return "", durable.ContinueAsNew(ctx, "1")
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
		if _, err := durable.CallActivity[string](ctx, "Noop", "").Await(); err != nil {
			return "", err
		}
		if err := expectKV(ctx, "counter", some("1"), "turn 2"); err != nil {
			return "", err
		}
		ctx.SetKVValue("counter", "2")
		if _, err := durable.CallActivity[string](ctx, "Noop", "").Await(); err != nil {
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
		//durablecheck:ignore counts executions across continue-as-new, as the Rust test's AtomicU32 does
		if iteration.Add(1)-1 == 0 {
			ctx.SetKVValue("A", "old")
			return "", durable.ContinueAsNew(ctx, "next")
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
		//durablecheck:ignore counts executions across continue-as-new, as the Rust test's AtomicU32 does
		if iteration.Add(1)-1 == 0 {
			ctx.SetKVValue("A", "val_a")
			ctx.SetKVValue("B", "val_b")
			return "", durable.ContinueAsNew(ctx, "next")
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
		//durablecheck:ignore counts executions across continue-as-new, as the Rust test's AtomicU32 does
		switch iteration.Add(1) - 1 {
		case 0:
			ctx.SetKVValue("count", "1")
			return "", durable.ContinueAsNew(ctx, "next")
		case 1:
			n, err := strconv.ParseUint(kvOr(ctx, "count", "0"), 10, 32)
			if err != nil {
				return "", err
			}
			ctx.SetKVValue("count", strconv.FormatUint(n+1, 10))
			return "", durable.ContinueAsNew(ctx, "next2")
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
		//durablecheck:ignore counts executions across continue-as-new, as the Rust test's AtomicU32 does
		if iteration.Add(1)-1 == 0 {
			ctx.SetKVValue("first_only", "exec1")
			ctx.SetKVValue("shared", "exec1")
			return "", durable.ContinueAsNew(ctx, "next")
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
		_, _ = durable.WaitEvent[string](ctx, "finish").Await()
		return "done", nil
	})
	e.start(r, nil)
	e.startOrch("kv-running", "RunningKV", "")
	require.Equal(e.t, "initialized", e.waitKV("kv-running", "progress"))
	e.raise("kv-running", "finish", "")
	e.wait("kv-running")
}
