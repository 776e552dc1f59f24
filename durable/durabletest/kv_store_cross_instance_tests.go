package durabletest

import (
	"strconv"
	"strings"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
)

// --- cross-instance reads ---------------------------------------------------------------

func kvGetValueFromInstanceKeyMissing(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Writer2", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("exists", "yes")
		_, _ = durable.WaitEvent[string](ctx, "done").Await()
		return "done", nil
	})
	orch(e.t, r, "Reader2", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v, err := ctx.KVValueFromInstance("kv-writer2", "nonexistent").Await()
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
		v, err := ctx.KVValueFromInstance("no-such-inst", "key").Await()
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
		_, _ = durable.WaitEvent[string](ctx, "done").Await()
		return "done", nil
	})
	orch(e.t, r, "TypedReader", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v, err := durable.KVValueFromInstance[[]uint32](ctx, "kv-tw", "config").Await()
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
		_, _ = durable.WaitEvent[string](ctx, "done").Await()
		return "done", nil
	})
	orch(e.t, r, "ReplayReader", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v, err := ctx.KVValueFromInstance("kv-source", "data").Await()
		if err != nil {
			return "", err
		}
		if _, err := durable.CallActivity[string](ctx, "Noop", "").Await(); err != nil {
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
		_, _ = durable.WaitEvent[string](ctx, "update").Await()
		ctx.SetKVValue("v", "2")
		_, _ = durable.WaitEvent[string](ctx, "done").Await()
		return "done", nil
	})
	orch(e.t, r, "LiveReader", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v1, err := ctx.KVValueFromInstance("kv-lsrc", "v").Await()
		if err != nil {
			return "", err
		}
		ctx.SetKVValue("read1", strOr(v1, ""))
		_, _ = durable.WaitEvent[string](ctx, "source_updated").Await()
		v2, err := ctx.KVValueFromInstance("kv-lsrc", "v").Await()
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
		return durable.CallSubOrchestration[string](ctx, "Child", "").Await()
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
		if _, err := durable.CallSubOrchestration[string](ctx, "ChildDel", "").Await(); err != nil {
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
