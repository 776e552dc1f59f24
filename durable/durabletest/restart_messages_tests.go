package durabletest

import (
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
)

// The kitchen-sink soak's restarts (issue 29): an instance that completed
// is started again (Restart, a late no-op cancel then Restart, or
// concurrent IDReuseAllowTerminal starts) and its client enqueues, right
// after the call returns, the queue messages the new execution dequeues
// once a timer fired. The messages are the new execution's, whenever a
// runtime takes them.

// restartMessagesTests are the cases, each with a runtime running and
// with the runtime started only after the enqueues.
func restartMessagesTests() []sample {
	return []sample{
		{"messages_after_a_restart_reach_the_restarted_execution", func(e *env) { messagesAfterRestart(e, true, restartAgain) }},
		{"messages_after_a_restart_reach_the_restarted_execution_of_a_later_runtime", func(e *env) { messagesAfterRestart(e, false, restartAgain) }},
		{"messages_after_a_late_cancel_and_restart_reach_the_restarted_execution", func(e *env) { messagesAfterRestart(e, true, cancelThenRestart) }},
		{"messages_after_a_late_cancel_and_restart_reach_the_restarted_execution_of_a_later_runtime", func(e *env) { messagesAfterRestart(e, false, cancelThenRestart) }},
		{"messages_after_a_reuse_start_reach_the_new_execution", func(e *env) { messagesAfterRestart(e, true, reuseStart) }},
		{"messages_after_a_reuse_start_reach_the_new_execution_of_a_later_runtime", func(e *env) { messagesAfterRestart(e, false, reuseStart) }},
	}
}

// queuedRun is "QueuedRun": after a timer it dequeues two messages from
// queue "q"+input (the run's own queue, as the soak names them).
func queuedRun(e *env) *durable.Registry {
	r := durable.NewRegistry()
	orch(e.t, r, "QueuedRun", func(ctx *durable.OrchestrationContext, run string) (string, error) {
		if _, err := durable.NewTimer(ctx, 50*time.Millisecond).Await(); err != nil {
			return "", err
		}
		a, err := durable.DequeueEvent[string](ctx, "q"+run).Await()
		if err != nil {
			return "", err
		}
		b, err := durable.DequeueEvent[string](ctx, "q"+run).Await()
		return run + ":" + a + "," + b, err
	})
	return r
}

// restartAgain restarts instance as run "2".
func restartAgain(e *env, instance string) {
	e.t.Helper()
	require.NoError(e.t, e.client().Restart(e.ctx, instance, durable.RestartOptions{Input: "2"}))
}

// cancelThenRestart cancels the completed instance (a no-op) and
// restarts it as run "2".
func cancelThenRestart(e *env, instance string) {
	e.t.Helper()
	e.cancel(instance, "late")
	restartAgain(e, instance)
}

// reuseStart starts run "2" by two concurrent IDReuseAllowTerminal
// starts: one wins, the other is ErrInstanceExists.
func reuseStart(e *env, instance string) {
	e.t.Helper()
	reuse := durable.StartOptions{IDReuse: durable.IDReuseAllowTerminal}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = e.client().StartOrchestration(e.ctx, instance, "QueuedRun", "2", reuse) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else {
			require.ErrorIs(e.t, err, durable.ErrInstanceExists)
		}
	}
	require.Equal(e.t, 1, won, "one reuse start wins: %v", errs)
}

// messagesAfterRestart completes run 1, starts run 2 with again, enqueues
// run 2's messages at once and requires run 2 to complete with them; live
// keeps the runtime running throughout, else it is stopped before again
// and started after the enqueues.
func messagesAfterRestart(e *env, live bool, again func(*env, string)) {
	instance := "restart-msgs"
	rt := e.start(queuedRun(e), fastOptions(nil))
	e.startOrch(instance, "QueuedRun", "1")
	e.enqueue(instance, "q1", "a")
	e.enqueue(instance, "q1", "b")
	require.Equal(e.t, "1:a,b", e.completed(instance))
	if !live {
		shutdownRuntime(e, rt)
	}
	again(e, instance)
	e.enqueue(instance, "q2", "c")
	e.enqueue(instance, "q2", "d")
	if !live {
		e.start(queuedRun(e), fastOptions(nil))
	}
	e.waitExecutions(instance, 2)
	require.Equal(e.t, "2:c,d", e.completed(instance), "run 2 dequeues the messages enqueued after it was started: %s",
		kinds(e.executionHistory(instance, 2)))
	e.requireExecutions(instance, []uint64{1, 2})
}
