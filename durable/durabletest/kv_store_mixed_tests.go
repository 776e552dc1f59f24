package durabletest

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
)

// --- mixed with other work ---------------------------------------------------------------

func kvInterleavedWithActivitiesAndTimers(e *env) {
	r := durable.NewRegistry()
	noop(e.t, r, "Work", "worked")
	orch(e.t, r, "Interleave", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("step", "1")
		if _, err := durable.CallActivity[string](ctx, "Work", "").Await(); err != nil {
			return "", err
		}
		ctx.SetKVValue("step", "2")
		_, _ = durable.NewTimer(ctx, time.Millisecond).Await()
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
			futs = append(futs, durable.CallActivity[string](ctx, "Process", strconv.Itoa(i)))
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
		if _, err := durable.CallActivity[string](ctx, "Noop", "").Await(); err != nil {
			return "", err
		}
		v, err := ctx.KVValueFromInstance("kv-self", "key").Await()
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
		v, ok, err := durable.KVValue[map[string]string](ctx, "data")
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
		if _, err := durable.CallActivity[string](ctx, "Task", "").Await(); err != nil {
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
		//durablecheck:ignore counts executions across continue-as-new, as the Rust test's AtomicU32 does
		if iteration.Add(1)-1 == 0 {
			ctx.SetKVValue("count", "1")
			return "", durable.ContinueAsNew(ctx, "next")
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
