package durabletest

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// signalWithStartTests are Go-only (issue 33 item 4): Client.SignalWithStart
// starts an instance and queues a message for it in one write, or queues
// the message alone for an instance that exists.
func signalWithStartTests() []sample {
	return []sample{
		{"concurrent_callers_get_one_instance_and_every_message", concurrentCallersGetOneInstanceAndEveryMessage},
		{"an_existing_instance_only_gets_the_message", anExistingInstanceOnlyGetsTheMessage},
		{"a_retried_signal_with_its_key_is_delivered_once", aRetriedSignalWithItsKeyIsDeliveredOnce},
		{"a_deleted_id_is_started_again", aDeletedIDIsStartedAgain},
		{"a_signal_for_a_continued_instance_reaches_the_next_execution", aSignalForAContinuedInstanceReachesTheNextExecution},
		{"bad_signals_are_refused_before_anything_is_written", badSignalsAreRefusedBeforeAnythingIsWritten},
	}
}

// collector is "Collect": it returns its input and the first n messages
// of queue "in" (n is its input's number), sorted, as "input|a,b,c".
func collector(e *env) *durable.Registry {
	r := durable.NewRegistry()
	orch(e.t, r, "Collect", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		var n int
		if _, err := fmt.Sscanf(in, "n=%d", &n); err != nil {
			return "", err
		}
		var got []string
		for range n {
			v, err := durable.DequeueEvent[string](ctx, "in").Await()
			if err != nil {
				return "", err
			}
			got = append(got, v)
		}
		sort.Strings(got)
		return in + "|" + strings.Join(got, ","), nil
	})
	return r
}

func concurrentCallersGetOneInstanceAndEveryMessage(e *env) {
	const n = 8
	e.start(collector(e), nil)
	var wg sync.WaitGroup
	started := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			started[i], errs[i] = e.client().SignalWithStart(e.ctx, "sws-race", "Collect", fmt.Sprintf("n=%d", n),
				durable.Signal{Queue: "in", Data: fmt.Sprintf("m%d", i)})
		})
	}
	wg.Wait()
	starts := 0
	for i := range n {
		require.NoError(e.t, errs[i])
		if started[i] {
			starts++
		}
	}
	require.Equal(e.t, 1, starts, "exactly one caller starts the instance")
	require.Equal(e.t, "n=8|m0,m1,m2,m3,m4,m5,m6,m7", e.completed("sws-race"))
	h := e.history("sws-race")
	require.Equal(e.t, 1, countKind[duroxide.OrchestrationStarted](h), kinds(h))
	require.Equal(e.t, uint64(1), h[0].ExecutionID)
}

func anExistingInstanceOnlyGetsTheMessage(e *env) {
	e.start(collector(e), nil)
	e.startOrch("sws-existing", "Collect", "n=2")
	started, err := e.client().SignalWithStart(e.ctx, "sws-existing", "Collect", "n=1", durable.Signal{Queue: "in", Data: "a"})
	require.NoError(e.t, err)
	require.False(e.t, started)
	started, err = e.client().SignalWithStart(e.ctx, "sws-existing", "Other", "ignored", durable.Signal{Queue: "in", Data: "b"})
	require.NoError(e.t, err)
	require.False(e.t, started, "an existing instance is signalled whatever start the call carries")
	require.Equal(e.t, "n=2|a,b", e.completed("sws-existing"))
}

func aRetriedSignalWithItsKeyIsDeliveredOnce(e *env) {
	e.start(collector(e), nil)
	sig := durable.Signal{Queue: "in", Data: "once", IdempotencyKey: "k1"}
	for range 3 {
		_, err := e.client().SignalWithStart(e.ctx, "sws-key", "Collect", "n=2", sig, durable.StartOptions{IdempotencyKey: "s1"})
		require.NoError(e.t, err)
	}
	_, err := e.client().SignalWithStart(e.ctx, "sws-key", "Collect", "n=2", durable.Signal{Queue: "in", Data: "second"})
	require.NoError(e.t, err)
	require.Equal(e.t, "n=2|once,second", e.completed("sws-key"))
	h := e.history("sws-key")
	require.Equal(e.t, 2, countKind[duroxide.ExternalEventPersistent](h), kinds(h))
}

func aDeletedIDIsStartedAgain(e *env) {
	e.start(collector(e), nil)
	started, err := e.client().SignalWithStart(e.ctx, "sws-del", "Collect", "n=1", durable.Signal{Queue: "in", Data: "first"})
	require.NoError(e.t, err)
	require.True(e.t, started)
	require.Equal(e.t, "n=1|first", e.completed("sws-del"))
	_, err = e.client().DeleteInstance(e.ctx, "sws-del")
	require.NoError(e.t, err)
	started, err = e.client().SignalWithStart(e.ctx, "sws-del", "Collect", "n=1", durable.Signal{Queue: "in", Data: "again"})
	require.NoError(e.t, err)
	require.True(e.t, started, "a deleted id is no instance: the call starts a new one")
	require.Equal(e.t, "n=1|again", e.completed("sws-del"))
}

func aSignalForAContinuedInstanceReachesTheNextExecution(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Rounds", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		v, err := durable.DequeueEvent[string](ctx, "in").Await()
		if err != nil {
			return "", err
		}
		if in == "" {
			return "", durable.ContinueAsNew(ctx, v)
		}
		return in + "+" + v, nil
	})
	e.start(r, nil)
	started, err := e.client().SignalWithStart(e.ctx, "sws-can", "Rounds", "", durable.Signal{Queue: "in", Data: "one"})
	require.NoError(e.t, err)
	require.True(e.t, started)
	e.waitExecutions("sws-can", 2)
	started, err = e.client().SignalWithStart(e.ctx, "sws-can", "Rounds", "", durable.Signal{Queue: "in", Data: "two"})
	require.NoError(e.t, err)
	require.False(e.t, started)
	require.Equal(e.t, "one+two", e.completed("sws-can"))
}

func badSignalsAreRefusedBeforeAnythingIsWritten(e *env) {
	c := e.client()
	for _, sig := range []durable.Signal{{}, {Event: "e", Queue: "q"}} {
		_, err := c.SignalWithStart(e.ctx, "sws-bad", "Collect", "n=1", sig)
		require.ErrorIs(e.t, err, durable.ErrInvalidInput)
	}
	_, err := c.SignalWithStart(e.ctx, "", "Collect", "n=1", durable.Signal{Queue: "q"})
	require.ErrorIs(e.t, err, durable.ErrInvalidInput)
	if w, ok := e.p.(duroxide.SignalStarter); ok {
		_, err = w.SignalWithStart(e.ctx, duroxide.StartOrchestrationItem{Instance: "sws-bad", Orchestration: "Collect", ExecutionID: 1},
			"", duroxide.QueueMessageItem{Instance: "other", Name: "q"}, "")
		require.ErrorIs(e.t, err, duroxide.ErrInvalidInput)
		_, err = w.SignalWithStart(e.ctx, duroxide.StartOrchestrationItem{Instance: "sws-bad", Orchestration: "Collect", ExecutionID: 1},
			"", duroxide.CancelInstanceItem{Instance: "sws-bad"}, "")
		require.ErrorIs(e.t, err, duroxide.ErrInvalidInput)
	}
	st, err := c.Status(e.ctx, "sws-bad")
	require.NoError(e.t, err)
	require.Equal(e.t, durable.StateNotFound, st.State, "nothing was written")
}
