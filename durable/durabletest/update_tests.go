package durabletest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// updateTests are Go-only (issue 33 item 5): durable.Update sends a named
// request to a running instance and waits for its handler's result,
// recorded in the instance's KV store under the update's id.
func updateTests() []sample {
	return []sample{
		{"an_update_returns_its_handlers_result_once_per_id", anUpdateReturnsItsHandlersResultOncePerID},
		{"a_validator_refuses_before_anything_runs", aValidatorRefusesBeforeAnythingRuns},
		{"an_unknown_update_and_a_failing_handler_are_typed_errors", anUnknownUpdateAndAFailingHandlerAreTypedErrors},
		{"an_update_of_a_missing_instance_is_not_found", anUpdateOfAMissingInstanceIsNotFound},
		{"an_update_to_a_suspended_instance_waits_for_resume", anUpdateToASuspendedInstanceWaitsForResume},
		{"cancel_before_the_answer_is_unanswered", cancelBeforeTheAnswerIsUnanswered},
		{"delete_before_the_answer_is_unanswered", deleteBeforeTheAnswerIsUnanswered},
		{"completion_before_the_answer_is_unanswered", completionBeforeTheAnswerIsUnanswered},
		{"a_request_not_yet_taken_carries_across_continue_as_new", aRequestNotYetTakenCarriesAcrossContinueAsNew},
		{"an_accepted_update_stopped_by_continue_as_new_is_unanswered", anAcceptedUpdateStoppedByContinueAsNewIsUnanswered},
		{"a_runtime_restart_mid_update_answers_once", aRuntimeRestartMidUpdateAnswersOnce},
		{"callers_of_one_update_id_share_one_execution", callersOfOneUpdateIDShareOneExecution},
		{"update_with_start_starts_one_instance_for_concurrent_callers", updateWithStartStartsOneInstanceForConcurrentCallers},
		{"a_child_orchestration_takes_updates_and_signals", aChildOrchestrationTakesUpdatesAndSignals},
		{"old_answers_are_cleared_past_the_retention_and_a_panicking_validator_rejects", oldAnswersAreClearedPastTheRetention},
		{"a_rewind_after_updates_replays_their_answers", aRewindAfterUpdatesReplaysTheirAnswers},
		{"a_rewind_replays_kv_reads_of_its_prefix", aRewindReplaysKVReadsOfItsPrefix},
		{"a_rewind_of_a_rewind_replays_kv_reads_of_its_prefix", aRewindOfARewindReplaysKVReadsOfItsPrefix},
	}
}

// updatable registers "Account": handler "deposit" (int, validator
// refuses amounts below 1) adds to a balance and returns it, calling
// activity "Ledger" (counted in ledger); "slow" waits for queue "go",
// then returns "slow:"+its data; "boom" fails with "boom". The
// orchestration waits for queue "stop" and returns the balance; input
// "can" instead continues as new with "" when "stop" arrives.
func updatable(e *env, ledger *atomic.Int32) *durable.Registry {
	r := durable.NewRegistry()
	counted(e, r, "Ledger", ledger, nil)
	orch(e.t, r, "Account", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		balance := 0
		durable.SetUpdateHandler(ctx, "deposit", func(ctx *durable.OrchestrationContext, n int) (int, error) {
			if _, err := durable.CallActivity[string](ctx, "Ledger", fmt.Sprint(n)).Await(); err != nil {
				return 0, err
			}
			balance += n
			return balance, nil
		}, durable.UpdateHandlerOptions[int]{Validator: func(_ *durable.OrchestrationContext, n int) error {
			if n < 1 {
				return fmt.Errorf("amount %d is below 1", n)
			}
			return nil
		}})
		durable.SetUpdateHandler(ctx, "slow", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			v, err := durable.DequeueEvent[string](ctx, "go").Await()
			return "slow:" + v, err
		})
		durable.SetUpdateHandler(ctx, "boom", func(*durable.OrchestrationContext, string) (string, error) {
			return "", errors.New("boom")
		})
		if _, err := durable.DequeueEvent[string](ctx, "stop").Await(); err != nil {
			return "", err
		}
		if in == "can" {
			return "", durable.ContinueAsNew(ctx, "")
		}
		return fmt.Sprint(balance), nil
	})
	return r
}

// updateAsync runs an Update in its own goroutine; the channel gets its
// outcome.
func updateAsync[T any](e *env, instance, name string, input any, o durable.UpdateOptions) <-chan updateOutcome[T] {
	ch := make(chan updateOutcome[T], 1)
	go func() {
		v, err := durable.Update[T](e.ctx, e.client(), instance, name, input, o)
		ch <- updateOutcome[T]{v, err}
	}()
	return ch
}

type updateOutcome[T any] struct {
	v   T
	err error
}

// outcome waits for ch.
func outcome[T any](e *env, ch <-chan updateOutcome[T]) updateOutcome[T] {
	e.t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(waitTimeout):
		e.t.Fatal("the update did not return")
	}
	return updateOutcome[T]{}
}

// waitUpdateAccepted waits until the instance accepted update id.
func (e *env) waitUpdateAccepted(instance, id string) {
	e.t.Helper()
	e.waitFor("update "+id+" accepted", func() bool {
		v, found, err := e.p.KVValue(e.ctx, instance, "__duroxide_update:"+id)
		return err == nil && found && strings.Contains(v, `"accepted"`)
	})
}

// updateKeySets counts the KeyValueSet events of update id in h.
func updateKeySets(h []duroxide.Event, id string) int {
	return countEvents(h, func(ev duroxide.Event) bool {
		k, ok := ev.Kind.(duroxide.KeyValueSet)
		return ok && k.Key == "__duroxide_update:"+id
	})
}

func anUpdateReturnsItsHandlersResultOncePerID(e *env) {
	var ledger atomic.Int32
	e.start(updatable(e, &ledger), nil)
	e.startOrch("upd-basic", "Account", "")
	c := e.client()
	v, err := durable.Update[int](e.ctx, c, "upd-basic", "deposit", 5, durable.UpdateOptions{ID: "d1"})
	require.NoError(e.t, err)
	require.Equal(e.t, 5, v)
	v, err = durable.Update[int](e.ctx, c, "upd-basic", "deposit", 3, durable.UpdateOptions{ID: "d2"})
	require.NoError(e.t, err)
	require.Equal(e.t, 8, v)
	// A retry of d1, even with other input, is answered from its record.
	v, err = durable.Update[int](e.ctx, c, "upd-basic", "deposit", 100, durable.UpdateOptions{ID: "d1"})
	require.NoError(e.t, err)
	require.Equal(e.t, 5, v)
	// A request that reaches the instance twice runs once.
	require.NoError(e.t, c.EnqueueEvent(e.ctx, "upd-basic", "__duroxide_update", `{"id":"d2","name":"deposit","input":"50"}`))
	e.enqueue("upd-basic", "stop", "")
	require.Equal(e.t, "8", e.completed("upd-basic"))
	require.EqualValues(e.t, 2, ledger.Load(), "each update ran its handler once")
	h := e.history("upd-basic")
	require.Equal(e.t, 2, updateKeySets(h, "d1"), "accepted, then the result: %s", kinds(h))
	require.Equal(e.t, 2, updateKeySets(h, "d2"))
}

func aValidatorRefusesBeforeAnythingRuns(e *env) {
	var ledger atomic.Int32
	e.start(updatable(e, &ledger), nil)
	e.startOrch("upd-reject", "Account", "")
	_, err := durable.Update[int](e.ctx, e.client(), "upd-reject", "deposit", -4, durable.UpdateOptions{ID: "neg"})
	require.ErrorIs(e.t, err, durable.ErrUpdateRejected)
	require.Contains(e.t, err.Error(), "amount -4 is below 1")
	var ue *durable.UpdateError
	require.ErrorAs(e.t, err, &ue)
	require.Equal(e.t, "neg", ue.ID)
	// The rejection is durable: a retry gets it without a second judgement.
	_, err = durable.Update[int](e.ctx, e.client(), "upd-reject", "deposit", 9, durable.UpdateOptions{ID: "neg"})
	require.ErrorIs(e.t, err, durable.ErrUpdateRejected)
	_, err = durable.Update[int](e.ctx, e.client(), "upd-reject", "deposit", "not a number", durable.UpdateOptions{ID: "nan"})
	require.ErrorIs(e.t, err, durable.ErrUpdateRejected)
	e.enqueue("upd-reject", "stop", "")
	require.Equal(e.t, "0", e.completed("upd-reject"))
	require.Zero(e.t, ledger.Load())
	h := e.history("upd-reject")
	require.Equal(e.t, 1, updateKeySets(h, "neg"), "one record, the rejection; no acceptance: %s", kinds(h))
	require.Zero(e.t, countKind[duroxide.ActivityScheduled](h))
}

func anUnknownUpdateAndAFailingHandlerAreTypedErrors(e *env) {
	r := updatable(e, new(atomic.Int32))
	orch(e.t, r, "Idle", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.DequeueEvent[string](ctx, "stop").Await()
	})
	e.start(r, nil)
	e.startOrch("upd-errs", "Account", "")
	_, err := durable.Update[string](e.ctx, e.client(), "upd-errs", "withdraw", 1)
	require.ErrorIs(e.t, err, durable.ErrUnknownUpdate)
	require.NotErrorIs(e.t, err, durable.ErrUpdateRejected)
	_, err = durable.Update[string](e.ctx, e.client(), "upd-errs", "boom", "")
	require.ErrorIs(e.t, err, durable.ErrUpdateFailed)
	require.Contains(e.t, err.Error(), "boom")
	_, err = durable.Update[string](e.ctx, e.client(), "upd-errs", "", "")
	require.ErrorIs(e.t, err, durable.ErrInvalidInput)
	_, err = durable.Update[string](e.ctx, e.client(), "upd-errs", "boom", "", durable.UpdateOptions{Timeout: -1})
	require.ErrorIs(e.t, err, durable.ErrInvalidInput)
	// An execution without handlers takes no requests: the caller's
	// Timeout ends the wait.
	e.startOrch("upd-nohandlers", "Idle", "")
	_, err = durable.Update[string](e.ctx, e.client(), "upd-nohandlers", "any", "", durable.UpdateOptions{Timeout: 200 * time.Millisecond})
	require.ErrorIs(e.t, err, durable.ErrTimeout)
}

func anUpdateOfAMissingInstanceIsNotFound(e *env) {
	e.start(updatable(e, new(atomic.Int32)), nil)
	_, err := durable.Update[int](e.ctx, e.client(), "upd-none", "deposit", 1)
	require.ErrorIs(e.t, err, durable.ErrInstanceNotFound)
}

func anUpdateToASuspendedInstanceWaitsForResume(e *env) {
	var ledger atomic.Int32
	e.start(updatable(e, &ledger), fastOptions(nil))
	e.startOrch("upd-susp", "Account", "")
	e.waitSubscription("upd-susp", "stop")
	e.suspend("upd-susp", "maintenance")
	ch := updateAsync[int](e, "upd-susp", "deposit", 2, durable.UpdateOptions{ID: "s1"})
	time.Sleep(300 * time.Millisecond)
	select {
	case o := <-ch:
		e.t.Fatalf("a suspended instance answered: %v %v", o.v, o.err)
	default:
	}
	require.Zero(e.t, ledger.Load())
	require.NoError(e.t, e.client().Resume(e.ctx, "upd-susp", "done"))
	o := outcome(e, ch)
	require.NoError(e.t, o.err)
	require.Equal(e.t, 2, o.v)
}

func cancelBeforeTheAnswerIsUnanswered(e *env) {
	e.start(updatable(e, new(atomic.Int32)), nil)
	e.startOrch("upd-cancel", "Account", "")
	ch := updateAsync[string](e, "upd-cancel", "slow", "", durable.UpdateOptions{ID: "c1"})
	e.waitUpdateAccepted("upd-cancel", "c1")
	e.cancel("upd-cancel", "stop it")
	o := outcome(e, ch)
	require.ErrorIs(e.t, o.err, durable.ErrUpdateUnanswered)
	// A retry meets the same end.
	_, err := durable.Update[string](e.ctx, e.client(), "upd-cancel", "slow", "", durable.UpdateOptions{ID: "c1"})
	require.ErrorIs(e.t, err, durable.ErrUpdateUnanswered)
}

func deleteBeforeTheAnswerIsUnanswered(e *env) {
	e.start(updatable(e, new(atomic.Int32)), nil)
	e.startOrch("upd-del", "Account", "")
	ch := updateAsync[string](e, "upd-del", "slow", "", durable.UpdateOptions{ID: "x1"})
	e.waitUpdateAccepted("upd-del", "x1")
	_, err := e.client().DeleteInstance(e.ctx, "upd-del", durable.DeleteOptions{Force: true})
	require.NoError(e.t, err)
	o := outcome(e, ch)
	require.ErrorIs(e.t, o.err, durable.ErrUpdateUnanswered)
	require.ErrorIs(e.t, o.err, durable.ErrInstanceNotFound)
}

func completionBeforeTheAnswerIsUnanswered(e *env) {
	e.start(updatable(e, new(atomic.Int32)), nil)
	e.startOrch("upd-done", "Account", "")
	ch := updateAsync[string](e, "upd-done", "slow", "", durable.UpdateOptions{ID: "e1"})
	e.waitUpdateAccepted("upd-done", "e1")
	e.enqueue("upd-done", "stop", "")
	o := outcome(e, ch)
	require.ErrorIs(e.t, o.err, durable.ErrUpdateUnanswered)
	require.Equal(e.t, "0", e.completed("upd-done"))
}

func aRequestNotYetTakenCarriesAcrossContinueAsNew(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Later", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if in == "first" {
			// No handlers in this execution: requests wait in the queue.
			if _, err := durable.DequeueEvent[string](ctx, "next").Await(); err != nil {
				return "", err
			}
			return "", durable.ContinueAsNew(ctx, "second")
		}
		durable.SetUpdateHandler(ctx, "echo", func(ctx *durable.OrchestrationContext, s string) (string, error) {
			return fmt.Sprintf("%s@%d", s, ctx.ExecutionID()), nil
		})
		_, err := durable.DequeueEvent[string](ctx, "stop").Await()
		return in, err
	})
	e.start(r, nil)
	e.startOrch("upd-carry", "Later", "first")
	ch := updateAsync[string](e, "upd-carry", "echo", "hi", durable.UpdateOptions{ID: "k1"})
	e.waitHistory("upd-carry", func(h []duroxide.Event) bool { return anyKind[duroxide.ExternalEventPersistent](h) })
	e.enqueue("upd-carry", "next", "")
	o := outcome(e, ch)
	require.NoError(e.t, o.err)
	require.Equal(e.t, "hi@2", o.v)
	e.enqueue("upd-carry", "stop", "")
	require.Equal(e.t, "second", e.completed("upd-carry"))
}

func anAcceptedUpdateStoppedByContinueAsNewIsUnanswered(e *env) {
	var ledger atomic.Int32
	e.start(updatable(e, &ledger), nil)
	e.startOrch("upd-can", "Account", "can")
	ch := updateAsync[string](e, "upd-can", "slow", "", durable.UpdateOptions{ID: "a1"})
	e.waitUpdateAccepted("upd-can", "a1")
	e.enqueue("upd-can", "stop", "")
	o := outcome(e, ch)
	require.ErrorIs(e.t, o.err, durable.ErrUpdateUnanswered)
	require.Contains(e.t, o.err.Error(), "continued as new")
	// The next execution serves new updates; the stopped one is not run
	// again by a retry.
	v, err := durable.Update[int](e.ctx, e.client(), "upd-can", "deposit", 4)
	require.NoError(e.t, err)
	require.Equal(e.t, 4, v)
	e.enqueue("upd-can", "go", "late")
	_, err = durable.Update[string](e.ctx, e.client(), "upd-can", "slow", "", durable.UpdateOptions{ID: "a1"})
	require.ErrorIs(e.t, err, durable.ErrUpdateUnanswered)
}

func aRuntimeRestartMidUpdateAnswersOnce(e *env) {
	var ledger atomic.Int32
	reg := updatable(e, &ledger)
	rt := e.startOn(e.p, reg, nil)
	e.startOrch("upd-restart", "Account", "")
	ch := updateAsync[string](e, "upd-restart", "slow", "", durable.UpdateOptions{ID: "r1"})
	e.waitUpdateAccepted("upd-restart", "r1")
	shutdownRuntime(e, rt)
	e.start(reg, nil)
	e.enqueue("upd-restart", "go", "after")
	o := outcome(e, ch)
	require.NoError(e.t, o.err)
	require.Equal(e.t, "slow:after", o.v)
	again, err := durable.Update[string](e.ctx, e.client(), "upd-restart", "slow", "", durable.UpdateOptions{ID: "r1"})
	require.NoError(e.t, err)
	require.Equal(e.t, "slow:after", again)
	h := e.history("upd-restart")
	require.Equal(e.t, 2, updateKeySets(h, "r1"), "accepted once, answered once: %s", kinds(h))
}

func updateWithStartStartsOneInstanceForConcurrentCallers(e *env) {
	const n = 6
	var ledger atomic.Int32
	e.start(updatable(e, &ledger), nil)
	start := &durable.UpdateStart{Orchestration: "Account", Input: ""}
	var wg sync.WaitGroup
	results := make([]int, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			results[i], errs[i] = durable.Update[int](e.ctx, e.client(), "upd-start", "deposit", 1,
				durable.UpdateOptions{ID: fmt.Sprintf("u%d", i), Start: start})
		})
	}
	wg.Wait()
	seen := map[int]bool{}
	for i := range n {
		require.NoError(e.t, errs[i])
		seen[results[i]] = true
	}
	require.Len(e.t, seen, n, "each deposit saw its own balance: %v", results)
	e.enqueue("upd-start", "stop", "")
	require.Equal(e.t, fmt.Sprint(n), e.completed("upd-start"))
	h := e.history("upd-start")
	require.Equal(e.t, 1, countKind[duroxide.OrchestrationStarted](h))
	require.Equal(e.t, uint64(1), h[0].ExecutionID)
}

func aChildOrchestrationTakesUpdatesAndSignals(e *env) {
	var ledger atomic.Int32
	r := updatable(e, &ledger)
	orch(e.t, r, "Parent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		out, err := durable.CallSubOrchestration[string](ctx, "Account", "", durable.SubOrchestrationOptions{InstanceID: "upd-child"}).Await()
		return "child:" + out, err
	})
	e.start(r, nil)
	e.startOrch("upd-parent", "Parent", "")
	e.waitSubscription("upd-child", "stop")
	v, err := durable.Update[int](e.ctx, e.client(), "upd-child", "deposit", 7)
	require.NoError(e.t, err)
	require.Equal(e.t, 7, v)
	started, err := e.client().SignalWithStart(e.ctx, "upd-child", "Account", "", durable.Signal{Queue: "stop"})
	require.NoError(e.t, err)
	require.False(e.t, started, "the running child is signalled, not started again")
	require.Equal(e.t, "child:7", e.completed("upd-parent"))
}

func oldAnswersAreClearedPastTheRetention(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Echo", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		ctx.SetKVValue("mine", "kept")
		if in == "crowded" {
			for i := range 119 {
				ctx.SetKVValue(fmt.Sprintf("own%03d", i+1), "kept")
			}
		}
		durable.SetUpdateHandler(ctx, "echo", func(_ *durable.OrchestrationContext, s string) (string, error) {
			return s, nil
		}, durable.UpdateHandlerOptions[string]{Validator: func(_ *durable.OrchestrationContext, s string) error {
			if s == "panic" {
				panic("no panics here")
			}
			return nil
		}})
		_, err := durable.DequeueEvent[string](ctx, "stop").Await()
		return "done", err
	})
	e.start(r, nil)
	e.startOrch("upd-retain", "Echo", "")
	_, err := durable.Update[string](e.ctx, e.client(), "upd-retain", "echo", "panic")
	require.ErrorIs(e.t, err, durable.ErrUpdateRejected)
	require.Contains(e.t, err.Error(), "no panics here")
	const n = 70
	for i := range n {
		v, err := durable.Update[string](e.ctx, e.client(), "upd-retain", "echo", fmt.Sprint(i), durable.UpdateOptions{ID: fmt.Sprintf("id%02d", i)})
		require.NoError(e.t, err)
		require.Equal(e.t, fmt.Sprint(i), v)
	}
	kv, err := e.client().KVValues(e.ctx, "upd-retain")
	require.NoError(e.t, err)
	updates := 0
	for k := range kv {
		if strings.HasPrefix(k, "__duroxide_update:") {
			updates++
		}
	}
	require.Equal(e.t, 64, updates, "the last 64 answers are kept")
	require.Equal(e.t, "kept", kv["mine"], "the orchestration's own keys are never cleared")
	require.Contains(e.t, kv, "__duroxide_update:id69")
	require.NotContains(e.t, kv, "__duroxide_update:id00")
	e.enqueue("upd-retain", "stop", "")
	require.Equal(e.t, "done", e.completed("upd-retain"))

	// An orchestration with many keys of its own keeps fewer answers: its
	// KV store never passes MaxKVKeys.
	orchCrowded := "upd-crowded"
	e.startOrch(orchCrowded, "Echo", "crowded")
	for i := range 40 {
		_, err := durable.Update[string](e.ctx, e.client(), orchCrowded, "echo", fmt.Sprint(i))
		require.NoError(e.t, err)
	}
	kv, err = e.client().KVValues(e.ctx, orchCrowded)
	require.NoError(e.t, err)
	require.Len(e.t, kv, durable.MaxKVKeys)
	require.Equal(e.t, "kept", kv["own119"])
	e.enqueue(orchCrowded, "stop", "")
	require.Equal(e.t, "done", e.completed(orchCrowded))
}

func callersOfOneUpdateIDShareOneExecution(e *env) {
	e.start(updatable(e, new(atomic.Int32)), nil)
	e.startOrch("upd-shared", "Account", "")
	first := updateAsync[string](e, "upd-shared", "slow", "", durable.UpdateOptions{ID: "same"})
	e.waitUpdateAccepted("upd-shared", "same")
	second := updateAsync[string](e, "upd-shared", "slow", "", durable.UpdateOptions{ID: "same"})
	// The second caller's request is the first's (same key), or dropped
	// by the orchestration as a duplicate: give it time to arrive.
	time.Sleep(100 * time.Millisecond)
	e.enqueue("upd-shared", "go", "once")
	for _, ch := range []<-chan updateOutcome[string]{first, second} {
		o := outcome(e, ch)
		require.NoError(e.t, o.err)
		require.Equal(e.t, "slow:once", o.v)
	}
	e.enqueue("upd-shared", "stop", "")
	e.completed("upd-shared")
	h := e.history("upd-shared")
	require.Equal(e.t, 2, updateKeySets(h, "same"), "accepted once, answered once: %s", kinds(h))
	require.Equal(e.t, 1, countEvents(h, func(ev duroxide.Event) bool {
		k, ok := ev.Kind.(duroxide.ExternalEventPersistent)
		return ok && k.Name == "__duroxide_update"
	}), "the second send was the first's: one request reached the instance")
}

// The chaos soak's kitchen sink found it: an execution that took a
// rejected and an accepted update, then failed, is rewound; its new
// execution replays both answers from the prefix and runs neither
// handler again.
func aRewindAfterUpdatesReplaysTheirAnswers(e *env) {
	var ledger, flaky atomic.Int32
	var fixed atomic.Bool
	r := updatable(e, &ledger)
	counted(e, r, "Flaky", &flaky, &fixed)
	orch(e.t, r, "FailsAfterUpdates", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		balance := 0
		durable.SetUpdateHandler(ctx, "deposit", func(_ *durable.OrchestrationContext, n int) (int, error) {
			balance += n
			return balance, nil
		}, durable.UpdateHandlerOptions[int]{Validator: func(_ *durable.OrchestrationContext, n int) error {
			if n < 1 {
				return errors.New("below 1")
			}
			return nil
		}})
		if _, err := durable.WaitEvent[string](ctx, "go").Await(); err != nil {
			return "", err
		}
		if _, err := durable.CallActivity[string](ctx, "Flaky", in).Await(); err != nil {
			return "", err
		}
		return fmt.Sprint(balance), nil
	})
	const instance = "upd-rewind"
	e.start(r, fastOptions(nil))
	e.startOrch(instance, "FailsAfterUpdates", "x")
	c := e.client()
	_, err := durable.Update[int](e.ctx, c, instance, "deposit", 0, durable.UpdateOptions{ID: "bad"})
	require.ErrorIs(e.t, err, durable.ErrUpdateRejected)
	v, err := durable.Update[int](e.ctx, c, instance, "deposit", 7, durable.UpdateOptions{ID: "good"})
	require.NoError(e.t, err)
	require.Equal(e.t, 7, v)
	e.raise(instance, "go", "")
	e.requireBroken(instance)
	e.fixAndRewind(instance, &fixed, durable.RewindOptions{Reason: "fixed"})
	require.Equal(e.t, "7", e.completed(instance))
	v, err = durable.Update[int](e.ctx, c, instance, "deposit", 100, durable.UpdateOptions{ID: "good"})
	require.NoError(e.t, err)
	require.Equal(e.t, 7, v, "the answer outlives the rewind")
	e.requireExecutions(instance, []uint64{1, 2})
}

// The cause of the update case above, without updates: a rewound
// execution must replay its prefix's KV reads against the KV its prefix
// saw, not against what the failed execution left.
func aRewindReplaysKVReadsOfItsPrefix(e *env) {
	var flaky atomic.Int32
	var fixed atomic.Bool
	const instance = "kv-rewind"
	e.startBroken(setOnce(e, &flaky, &fixed), instance, "SetOnce", "x")
	e.fixAndRewind(instance, &fixed, durable.RewindOptions{Reason: "fixed"})
	require.Equal(e.t, "done", e.completed(instance))
}

// setOnce registers SetOnce, which sets a KV key its prefix found
// absent, then calls Flaky (failing until fixed).
func setOnce(e *env, flaky *atomic.Int32, fixed *atomic.Bool) *durable.Registry {
	r := durable.NewRegistry()
	counted(e, r, "Flaky", flaky, fixed)
	orch(e.t, r, "SetOnce", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if _, seen, err := durable.KVValue[string](ctx, "once"); err != nil {
			return "", err
		} else if !seen {
			durable.SetKVValue(ctx, "once", "v")
		}
		if _, err := durable.CallActivity[string](ctx, "Flaky", in).Await(); err != nil {
			return "", err
		}
		return "done", nil
	})
	return r
}

// A rewound execution that fails again is rewound against the KV it
// started with: the first failed execution's, restored by the first
// rewind, not what either failure left.
func aRewindOfARewindReplaysKVReadsOfItsPrefix(e *env) {
	var flaky atomic.Int32
	var fixed atomic.Bool
	const instance = "kv-rewind-twice"
	e.startBroken(setOnce(e, &flaky, &fixed), instance, "SetOnce", "x")
	require.NoError(e.t, e.client().Rewind(e.ctx, instance, durable.RewindOptions{Reason: "not yet"}))
	e.waitExecutions(instance, 2)
	e.requireBroken(instance)
	fixed.Store(true)
	require.NoError(e.t, e.client().Rewind(e.ctx, instance, durable.RewindOptions{Reason: "fixed"}))
	e.waitExecutions(instance, 3)
	require.Equal(e.t, "done", e.completed(instance))
	e.requireExecutions(instance, []uint64{1, 2, 3})
}
