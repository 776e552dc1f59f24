package durabletest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

func cancelledWith(reason string) func(duroxide.OrchestrationFailed) bool {
	return func(f duroxide.OrchestrationFailed) bool {
		a, ok := f.Details.(duroxide.ApplicationError)
		return ok && a.Kind.Type == duroxide.AppCancelled && a.Kind.Reason == reason
	}
}

// The Rust sample sleeps 50 ms before cancelling; here the cancel waits
// until the child exists, so the cascade is what is tested however slow
// the machine.
func sampleCancellationParentCascadesToChildren(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "ChildSample", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_, _ = durable.WaitEvent[string](ctx, "Go").Await()
		return "done", nil
	})
	orch(e.t, r, "ParentSample", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if _, err := durable.CallSubOrchestration[string](ctx, "ChildSample", "seed").Await(); err != nil {
			return "", err
		}
		return "parent_done", nil
	})
	e.start(r, nil)
	e.startOrch("inst-sample-cancel", "ParentSample", "")
	require.True(e.t, e.waitHistory("inst-sample-cancel", func(h []duroxide.Event) bool {
		return hasKind[duroxide.SubOrchestrationScheduled](h, nil)
	}), "parent never scheduled its child")
	require.NoError(e.t, e.client().CancelInstance(e.ctx, "inst-sample-cancel", "user_request"))
	ok := e.waitHistory("inst-sample-cancel", func(h []duroxide.Event) bool {
		return hasKind(h, cancelledWith("user_request"))
	})
	require.True(e.t, ok, "timeout waiting for parent cancel failure")
	hist, err := e.p.Read(e.ctx, "inst-sample-cancel")
	require.NoError(e.t, err)
	var failed *duroxide.Event
	for i := len(hist) - 1; i >= 0; i-- {
		if _, ok := hist[i].Kind.(duroxide.OrchestrationFailed); ok {
			failed = &hist[i]
			break
		}
	}
	require.NotNil(e.t, failed, "parent history should contain OrchestrationFailed")
	require.Equal(e.t, "inst-sample-cancel", failed.InstanceID, "OrchestrationFailed must carry the instance_id")
	require.NotZero(e.t, failed.ExecutionID, "OrchestrationFailed must carry a non-placeholder execution_id")
	all, err := e.admin().ListInstances(e.ctx)
	require.NoError(e.t, err)
	var children []string
	for _, i := range all {
		if strings.HasPrefix(i, "inst-sample-cancel::") {
			children = append(children, i)
		}
	}
	require.NotEmpty(e.t, children)
	for _, child := range children {
		ok := e.waitHistory(child, func(h []duroxide.Event) bool {
			return hasKind[duroxide.OrchestrationCancelRequested](h, nil) && hasKind(h, cancelledWith("parent canceled"))
		})
		require.True(e.t, ok, "timeout waiting for child cancel for %s", child)
	}
}

func sampleBasicErrorHandling(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "ValidateInput", func(_ durable.ActivityContext, in string) (string, error) {
		if in == "" {
			return "", errors.New("Input cannot be empty")
		}
		return "Valid: " + in, nil
	})
	orch(e.t, r, "BasicErrorHandling", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		ctx.TraceInfo("Starting validation")
		return durable.CallActivity[string](ctx, "ValidateInput", in).Await()
	})
	e.start(r, nil)
	e.startOrch("inst-basic-error-1", "BasicErrorHandling", "test")
	require.Equal(e.t, "Valid: test", e.completed("inst-basic-error-1"))
	e.startOrch("inst-basic-error-2", "BasicErrorHandling", "")
	require.Contains(e.t, e.failed("inst-basic-error-2"), "Input cannot be empty")
}

func processDataActivity(_ durable.ActivityContext, in string) (string, error) {
	if strings.Contains(in, "error") {
		return "", errors.New("Processing failed")
	}
	return "Processed: " + in, nil
}

func sampleNestedFunctionErrorHandling(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "ProcessData", processDataActivity)
	act(e.t, r, "FormatOutput", func(_ durable.ActivityContext, in string) (string, error) { return "Final: " + in, nil })
	processAndFormat := func(ctx *durable.OrchestrationContext, data string) (string, error) {
		processed, err := durable.CallActivity[string](ctx, "ProcessData", data).Await()
		if err != nil {
			return "", err
		}
		return durable.CallActivity[string](ctx, "FormatOutput", processed).Await()
	}
	orch(e.t, r, "NestedErrorHandling", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return processAndFormat(ctx, in)
	})
	e.start(r, nil)
	e.startOrch("inst-nested-error-1", "NestedErrorHandling", "test")
	require.Equal(e.t, "Final: Processed: test", e.completed("inst-nested-error-1"))
	e.startOrch("inst-nested-error-2", "NestedErrorHandling", "error")
	require.Contains(e.t, e.failed("inst-nested-error-2"), "Processing failed")
}

func sampleErrorRecovery(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "ProcessData", processDataActivity)
	act(e.t, r, "LogError", func(_ durable.ActivityContext, in string) (string, error) { return "Logged: " + in, nil })
	orch(e.t, r, "ErrorRecovery", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		res, err := durable.CallActivity[string](ctx, "ProcessData", in).Await()
		if err == nil {
			return res, nil
		}
		_, _ = durable.CallActivity[string](ctx, "LogError", err.Error()).Await()
		return "", fmt.Errorf("Failed to process '%s': %s", in, err.Error())
	})
	e.start(r, nil)
	e.startOrch("inst-recovery-1", "ErrorRecovery", "test")
	require.Equal(e.t, "Processed: test", e.completed("inst-recovery-1"))
	e.startOrch("inst-recovery-2", "ErrorRecovery", "error")
	msg := e.failed("inst-recovery-2")
	require.Contains(e.t, msg, "Failed to process 'error'")
	require.Contains(e.t, msg, "Processing failed")
}

func sampleSelfPruningEternalOrchestration(e *env) {
	var prunes, pruned atomic.Uint64
	r := durable.NewRegistry()
	act(e.t, r, "ProcessBatch", func(_ durable.ActivityContext, in string) (string, error) { return "Processed batch " + in, nil })
	act(e.t, r, "PruneSelf", func(ctx durable.ActivityContext, _ string) (string, error) {
		keep := uint32(1)
		res, err := ctx.Client().PruneExecutions(ctx, ctx.InstanceID(), duroxide.PruneOptions{KeepLast: &keep})
		if err != nil {
			return "", err
		}
		prunes.Add(1)
		pruned.Add(res.ExecutionsDeleted)
		return fmt.Sprintf("Pruned %d executions", res.ExecutionsDeleted), nil
	})
	type state struct {
		BatchNum     uint32 `json:"batch_num"`
		TotalBatches uint32 `json:"total_batches"`
	}
	orch(e.t, r, "SelfPruningOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		var s state
		if json.Unmarshal([]byte(in), &s) != nil || s.TotalBatches == 0 {
			s = state{BatchNum: 0, TotalBatches: 5}
		}
		if _, err := durable.CallActivity[string](ctx, "ProcessBatch", strconv.Itoa(int(s.BatchNum))).Await(); err != nil {
			return "", err
		}
		if _, err := durable.CallActivity[string](ctx, "PruneSelf", "").Await(); err != nil {
			return "", err
		}
		if s.BatchNum >= s.TotalBatches-1 {
			return fmt.Sprintf("Completed %d batches", s.TotalBatches), nil
		}
		next, _ := json.Marshal(state{BatchNum: s.BatchNum + 1, TotalBatches: s.TotalBatches})
		return "", durable.ContinueAsNew(ctx, string(next))
	})
	e.start(r, nil)
	e.startOrch("inst-self-prune", "SelfPruningOrch", "{}")
	require.Contains(e.t, e.completed("inst-self-prune"), "Completed 5 batches")
	require.GreaterOrEqual(e.t, prunes.Load(), uint64(4), "Should have pruned at least 4 times")
	require.GreaterOrEqual(e.t, pruned.Load(), uint64(3), "Should have pruned at least 3 executions total")
	execs, err := e.client().ListExecutions(e.ctx, "inst-self-prune")
	require.NoError(e.t, err)
	require.Len(e.t, execs, 1, "Only final execution should remain after self-pruning")
}

func sampleConfigHotReloadPersistentEvents(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "ApplyConfig", func(_ durable.ActivityContext, in string) (string, error) { return "applied:" + in, nil })
	orch(e.t, r, "ConfigHotReload", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		var log []string
		drain := func() error {
			for {
				cfg := durable.DequeueEvent[string](ctx, "ConfigUpdate")
				timeout := durable.NewTimer(ctx, 100*time.Millisecond)
				if ctx.Select(cfg, timeout) != 0 {
					return nil // no more pending updates
				}
				v, err := cfg.Await()
				if err != nil {
					return err
				}
				res, err := durable.CallActivity[string](ctx, "ApplyConfig", v).Await()
				if err != nil {
					return err
				}
				log = append(log, res)
			}
		}
		for cycle := 0; cycle < 3; cycle++ {
			if err := drain(); err != nil {
				return "", err
			}
			if _, err := durable.NewTimer(ctx, time.Second).Await(); err != nil {
				return "", err
			}
			if _, err := durable.CallActivity[string](ctx, "ApplyConfig", fmt.Sprintf("cycle_%d", cycle)).Await(); err != nil {
				return "", err
			}
			log = append(log, fmt.Sprintf("cycle:%d", cycle))
		}
		if err := drain(); err != nil {
			return "", err
		}
		return strings.Join(log, ","), nil
	})
	e.start(r, nil)
	c := e.client()
	e.startOrch("inst-hot-reload", "ConfigHotReload", "")
	require.NoError(e.t, c.EnqueueEvent(e.ctx, "inst-hot-reload", "ConfigUpdate", "v1"))
	require.NoError(e.t, c.EnqueueEvent(e.ctx, "inst-hot-reload", "ConfigUpdate", "v2"))
	require.True(e.t, e.waitHistory("inst-hot-reload", func(h []duroxide.Event) bool {
		return hasKind(h, func(a duroxide.ActivityScheduled) bool { return a.Input == "cycle_0" })
	}), "Timed out waiting for cycle:0 to progress past its drain phase")
	require.NoError(e.t, c.EnqueueEvent(e.ctx, "inst-hot-reload", "ConfigUpdate", "v3"))
	out := e.completed("inst-hot-reload")
	entries := strings.Split(out, ",")
	pos := func(s string) int {
		for i, x := range entries {
			if x == s {
				return i
			}
		}
		e.t.Fatalf("%s missing from output: %s", s, out)
		return -1
	}
	v1, v2, v3, c0 := pos("applied:v1"), pos("applied:v2"), pos("applied:v3"), pos("cycle:0")
	require.Less(e.t, v1, v2, "v1 should come before v2 (FIFO), got: %s", out)
	require.Less(e.t, v2, v3, "v2 should come before v3 (FIFO), got: %s", out)
	require.Greater(e.t, v3, c0, "v3 arrived mid-flight, should be drained after cycle:0, got: %s", out)
}

func scheduledTags(h []duroxide.Event) (names []string, tags []*string) {
	for _, ev := range h {
		if a, ok := ev.Kind.(duroxide.ActivityScheduled); ok {
			names, tags = append(names, a.Name), append(tags, a.Tag)
		}
	}
	return names, tags
}

func strp(s string) *string { return &s }

func sampleHeterogeneousWorkersWithTags(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Render", func(_ durable.ActivityContext, in string) (string, error) { return "rendered:" + in, nil })
	act(e.t, r, "Encode", func(_ durable.ActivityContext, in string) (string, error) { return "encoded:" + in, nil })
	act(e.t, r, "Upload", func(_ durable.ActivityContext, in string) (string, error) { return "uploaded:" + in, nil })
	orch(e.t, r, "VideoPipeline", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		rendered, err := durable.CallActivity[string](ctx, "Render", "frame42", durable.ActivityOptions{Tag: "gpu"}).Await()
		if err != nil {
			return "", err
		}
		encoded, err := durable.CallActivity[string](ctx, "Encode", rendered, durable.ActivityOptions{Tag: "cpu"}).Await()
		if err != nil {
			return "", err
		}
		return durable.CallActivity[string](ctx, "Upload", encoded).Await()
	})
	filter, err := duroxide.DefaultAnd("gpu", "cpu")
	require.NoError(e.t, err)
	e.start(r, &durable.Options{WorkerTagFilter: filter})
	e.startOrch("video-1", "VideoPipeline", "")
	require.Equal(e.t, "uploaded:encoded:rendered:frame42", e.completed("video-1"))
	h, err := e.p.Read(e.ctx, "video-1")
	require.NoError(e.t, err)
	_, tags := scheduledTags(h)
	require.Equal(e.t, []*string{strp("gpu"), strp("cpu"), nil}, tags, "History should preserve per-activity tags")
}

func sampleStarvationSafeTaggedActivity(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "GpuInference", func(_ durable.ActivityContext, in string) (string, error) { return "inference:" + in, nil })
	act(e.t, r, "CpuFallback", func(_ durable.ActivityContext, in string) (string, error) { return "cpu_fallback:" + in, nil })
	orch(e.t, r, "InferenceWithFallback", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		gpu := durable.CallActivity[string](ctx, "GpuInference", in, durable.ActivityOptions{Tag: "gpu"})
		timeout := durable.NewTimer(ctx, 500*time.Millisecond)
		if ctx.Select(gpu, timeout) == 0 {
			return gpu.Await()
		}
		return durable.CallActivity[string](ctx, "CpuFallback", in).Await()
	})
	e.start(r, &durable.Options{WorkerTagFilter: duroxide.DefaultOnly()})
	e.startOrch("infer-1", "InferenceWithFallback", "model-v3")
	require.Equal(e.t, "cpu_fallback:model-v3", e.completed("infer-1"))
}

func sampleDualRuntimeTagCooperation(e *env) {
	registry := func() *durable.Registry {
		r := durable.NewRegistry()
		act(e.t, r, "PreProcess", func(_ durable.ActivityContext, in string) (string, error) { return "preprocessed:" + in, nil })
		act(e.t, r, "GpuTrain", func(_ durable.ActivityContext, in string) (string, error) { return "trained:" + in, nil })
		act(e.t, r, "SaveModel", func(_ durable.ActivityContext, in string) (string, error) { return "saved:" + in, nil })
		orch(e.t, r, "MLPipeline", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			pre, err := durable.CallActivity[string](ctx, "PreProcess", in).Await()
			if err != nil {
				return "", err
			}
			model, err := durable.CallActivity[string](ctx, "GpuTrain", pre, durable.ActivityOptions{Tag: "gpu"}).Await()
			if err != nil {
				return "", err
			}
			return durable.CallActivity[string](ctx, "SaveModel", model).Await()
		})
		return r
	}
	gpu, err := duroxide.Tags("gpu")
	require.NoError(e.t, err)
	e.start(registry(), &durable.Options{WorkerTagFilter: duroxide.DefaultOnly()})
	e.start(registry(), &durable.Options{OrchestrationConcurrency: durable.NoSlots, WorkerTagFilter: gpu})
	e.startOrch("ml-1", "MLPipeline", "dataset-v5")
	require.Equal(e.t, "saved:trained:preprocessed:dataset-v5", e.completed("ml-1"))
	h, err := e.p.Read(e.ctx, "ml-1")
	require.NoError(e.t, err)
	names, tags := scheduledTags(h)
	require.Equal(e.t, []string{"PreProcess", "GpuTrain", "SaveModel"}, names, "History should show correct tag routing")
	require.Equal(e.t, []*string{nil, strp("gpu"), nil}, tags, "History should show correct tag routing")
}

func sampleKVRequestResponse(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "ProcessCommand", func(_ durable.ActivityContext, in string) (string, error) { return reverse(in), nil })
	orch(e.t, r, "RequestServer", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("status", "ready")
		for i := 0; i < 3; i++ {
			raw, err := durable.WaitEvent[string](ctx, "request").Await()
			if err != nil {
				return "", err
			}
			var req struct {
				OpID    string `json:"op_id"`
				Command string `json:"command"`
			}
			if err := json.Unmarshal([]byte(raw), &req); err != nil {
				return "", err
			}
			ctx.SetKVValue("status", "processing")
			result, err := durable.CallActivity[string](ctx, "ProcessCommand", req.Command).Await()
			if err != nil {
				result = "error: " + err.Error()
			}
			ctx.SetKVValue("response:"+req.OpID, result)
			ctx.SetKVValue("status", "ready")
		}
		ctx.SetKVValue("status", "shutdown")
		return "served 3 requests", nil
	})
	e.start(r, nil)
	c := e.client()
	e.startOrch("req-resp-server", "RequestServer", "")
	status, err := c.WaitForKVValue(e.ctx, "req-resp-server", "status", durable.WaitOptions{Timeout: waitTimeout})
	require.NoError(e.t, err, "Server never became ready")
	require.Equal(e.t, "ready", status)
	for _, rq := range [][2]string{{"op-1", "hello"}, {"op-2", "world"}, {"op-3", "rust"}} {
		data, _ := json.Marshal(map[string]string{"op_id": rq[0], "command": rq[1]})
		require.NoError(e.t, c.RaiseEvent(e.ctx, "req-resp-server", "request", string(data)))
		resp, err := c.WaitForKVValue(e.ctx, "req-resp-server", "response:"+rq[0], durable.WaitOptions{Timeout: waitTimeout})
		require.NoError(e.t, err, "Timed out waiting for response to %s", rq[0])
		require.Equal(e.t, reverse(rq[1]), resp, "Response for %s should be the reversed command", rq[0])
	}
	require.Equal(e.t, "served 3 requests", e.completed("req-resp-server"))
	for key, want := range map[string]string{"status": "shutdown", "response:op-1": "olleh", "response:op-2": "dlrow", "response:op-3": "tsur"} {
		v, ok, err := c.KVValue(e.ctx, "req-resp-server", key)
		require.NoError(e.t, err)
		require.True(e.t, ok, key)
		require.Equal(e.t, want, v, key)
	}
}

func sampleKVCrossOrchestrationRead(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "ComputeResult", func(_ durable.ActivityContext, in string) (string, error) {
		n, err := strconv.ParseInt(in, 10, 64)
		if err != nil {
			return "", fmt.Errorf("parse: %v", err)
		}
		return strconv.FormatInt(n*n, 10), nil
	})
	orch(e.t, r, "Producer", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		ctx.SetKVValue("status", "computing")
		sq, err := durable.CallActivity[string](ctx, "ComputeResult", in).Await()
		if err != nil {
			return "", err
		}
		ctx.SetKVValue("result", sq)
		ctx.SetKVValue("status", "done")
		_, _ = durable.WaitEvent[string](ctx, "ack").Await()
		return "produced:" + sq, nil
	})
	orch(e.t, r, "Consumer", func(ctx *durable.OrchestrationContext, producer string) (string, error) {
		for attempts := 0; ; {
			status, err := ctx.KVValueFromInstance(producer, "status").Await()
			if err != nil {
				return "", fmt.Errorf("read status: %v", err)
			}
			if status != nil && *status == "done" {
				break
			}
			if attempts++; attempts > 20 {
				return "", errors.New("producer never finished")
			}
			if _, err := durable.NewTimer(ctx, 100*time.Millisecond).Await(); err != nil {
				return "", err
			}
		}
		res, err := ctx.KVValueFromInstance(producer, "result").Await()
		if err != nil {
			return "", fmt.Errorf("read result: %v", err)
		}
		if res == nil {
			return "", errors.New("result key missing")
		}
		return "consumed:" + *res, nil
	})
	e.start(r, nil)
	c := e.client()
	e.startOrch("producer-1", "Producer", "7")
	res, err := c.WaitForKVValue(e.ctx, "producer-1", "result", durable.WaitOptions{Timeout: waitTimeout})
	require.NoError(e.t, err, "Producer never set result")
	require.Equal(e.t, "49", res)
	e.startOrch("consumer-1", "Consumer", "producer-1")
	require.Equal(e.t, "consumed:49", e.completed("consumer-1"))
	require.NoError(e.t, c.RaiseEvent(e.ctx, "producer-1", "ack", ""))
	require.Equal(e.t, "produced:49", e.completed("producer-1"))
	for key, want := range map[string]string{"result": "49", "status": "done"} {
		v, ok, err := c.KVValue(e.ctx, "producer-1", key)
		require.NoError(e.t, err)
		require.True(e.t, ok, key)
		require.Equal(e.t, want, v, key)
	}
}

func sampleKVReadModifyWriteCounter(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "ProcessBatch", func(_ durable.ActivityContext, in string) (string, error) { return "processed:" + in, nil })
	orch(e.t, r, "BatchProcessor", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		for _, batch := range []string{"alpha", "beta", "gamma"} {
			processed, ok := ctx.KVValue("batches_processed")
			if !ok {
				processed = "0"
			}
			count, err := strconv.Atoi(processed)
			if err != nil {
				return "", err
			}
			res, err := durable.CallActivity[string](ctx, "ProcessBatch", batch).Await()
			if err != nil {
				return "", err
			}
			ctx.SetKVValue("batches_processed", strconv.Itoa(count+1))
			ctx.SetKVValue("last_result", res)
		}
		if v, ok := ctx.KVValue("batches_processed"); ok {
			return v, nil
		}
		return "0", nil
	})
	e.start(r, nil)
	e.startOrch("batch-proc", "BatchProcessor", "")
	require.Equal(e.t, "3", e.completed("batch-proc"), "Should have processed 3 batches")
	c := e.client()
	for key, want := range map[string]string{"batches_processed": "3", "last_result": "processed:gamma"} {
		v, ok, err := c.KVValue(e.ctx, "batch-proc", key)
		require.NoError(e.t, err)
		require.True(e.t, ok, key)
		require.Equal(e.t, want, v, key)
	}
}

func sampleOrchestrationStats(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "FetchData", func(_ durable.ActivityContext, in string) (string, error) { return "data from " + in, nil })
	orch(e.t, r, "DataPipeline", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		res, err := durable.CallActivity[string](ctx, "FetchData", "https://api.example.com").Await()
		if err != nil {
			return "", err
		}
		ctx.SetKVValue("last_fetch", res)
		ctx.SetKVValue("status", "complete")
		return res, nil
	})
	e.start(r, nil)
	c := e.client()
	missing, err := c.Stats(e.ctx, "missing")
	require.NoError(e.t, err)
	require.Nil(e.t, missing)
	e.startOrch("pipeline-1", "DataPipeline", "")
	e.wait("pipeline-1")
	stats, err := c.Stats(e.ctx, "pipeline-1")
	require.NoError(e.t, err)
	require.NotNil(e.t, stats, "stats should exist after completion")
	require.GreaterOrEqual(e.t, stats.HistoryEventCount, uint64(4))
	require.Greater(e.t, stats.HistorySizeBytes, uint64(0))
	require.Equal(e.t, uint64(2), stats.KVUserKeyCount)
	require.Greater(e.t, stats.KVTotalValueBytes, uint64(0))
	require.Equal(e.t, uint64(0), stats.QueuePendingCount)
}
