package providertest

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// signal_with_start: not in duroxide. duroxide.SignalStarter writes a
// client start and a message for the same instance in one atomic step,
// or the message alone for an instance that exists. A provider without
// the capability skips the module.
var signalWithStartTests = []Test{
	{Name: "a_new_instance_gets_its_start_and_the_message", Func: testSignalWithStartNewInstance},
	{Name: "an_existing_instance_gets_the_message_alone", Func: testSignalWithStartExistingInstance},
	{Name: "concurrent_callers_start_one_instance_and_queue_every_message", Func: testSignalWithStartConcurrent},
	{Name: "other_items_are_refused", Func: testSignalWithStartRefusesOtherItems},
}

func signalStarter(t *testing.T, p duroxide.Provider) duroxide.SignalStarter {
	t.Helper()
	s, ok := p.(duroxide.SignalStarter)
	if !ok {
		t.Skip("not applicable in Go: this provider does not implement the optional duroxide.SignalStarter, so the Client starts and signals in two writes")
	}
	return s
}

// requireStartAndMessages requires item to hold one start followed by
// the queue messages of queue "in" with data want (in any order).
func requireStartAndMessages(t *testing.T, item *duroxide.OrchestrationItem, want ...string) {
	t.Helper()
	require.NotEmpty(t, item.Messages)
	_, isStart := item.Messages[0].(duroxide.StartOrchestrationItem)
	require.True(t, isStart, "the start comes first: %#v", item.Messages)
	var got []string
	for _, m := range item.Messages[1:] {
		q, ok := m.(duroxide.QueueMessageItem)
		require.True(t, ok, "one start, then the messages: %#v", item.Messages)
		got = append(got, q.Data)
	}
	require.ElementsMatch(t, want, got)
}

func testSignalWithStartNewInstance(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	s := signalStarter(t, p)
	const inst = "sws-new"
	started, err := s.SignalWithStart(ctx, startItem(inst), "", duroxide.QueueMessageItem{Instance: inst, Name: "in", Data: "m1"}, "")
	require.NoError(t, err)
	require.True(t, started)
	requireStartAndMessages(t, mustFetchInstance(t, p, testLock, inst), "m1")
}

func testSignalWithStartExistingInstance(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	s := signalStarter(t, p)
	const inst = "sws-existing"
	w, ok := p.(duroxide.ClientWriter)
	require.True(t, ok, "a SignalStarter is a ClientWriter")
	require.NoError(t, w.StartInstance(ctx, startItem(inst), ""))
	other := startItem(inst)
	other.Orchestration = "Other"
	started, err := s.SignalWithStart(ctx, other, "", duroxide.QueueMessageItem{Instance: inst, Name: "in", Data: "m1"}, "k")
	require.NoError(t, err)
	require.False(t, started)
	started, err = s.SignalWithStart(ctx, other, "", duroxide.QueueMessageItem{Instance: inst, Name: "in", Data: "m1"}, "k")
	require.NoError(t, err)
	require.False(t, started, "a retry with the message's key")
	item := mustFetchInstance(t, p, testLock, inst)
	requireStartAndMessages(t, item, "m1")
	require.Equal(t, testOrchName, item.Messages[0].(duroxide.StartOrchestrationItem).Orchestration, "the first start stands")
}

func testSignalWithStartConcurrent(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	s := signalStarter(t, p)
	const inst, n = "sws-concurrent", 6
	var wg sync.WaitGroup
	started := make([]bool, n)
	errs := make([]error, n)
	want := make([]string, n)
	for i := range n {
		want[i] = string(rune('a' + i))
		wg.Go(func() {
			started[i], errs[i] = s.SignalWithStart(ctx, startItem(inst), "", duroxide.QueueMessageItem{Instance: inst, Name: "in", Data: want[i]}, "")
		})
	}
	wg.Wait()
	starts := 0
	for i := range n {
		require.NoError(t, errs[i])
		if started[i] {
			starts++
		}
	}
	require.Equal(t, 1, starts, "exactly one caller starts the instance")
	requireStartAndMessages(t, mustFetchInstance(t, p, testLock, inst), want...)
}

func testSignalWithStartRefusesOtherItems(t *testing.T, f Factory) {
	t.Parallel()
	ctx, p := newProvider(t, f)
	s := signalStarter(t, p)
	const inst = "sws-refused"
	for _, msg := range []duroxide.WorkItem{
		duroxide.CancelInstanceItem{Instance: inst, Reason: "no"},
		duroxide.QueueMessageItem{Instance: "someone-else", Name: "in", Data: "m"},
	} {
		_, err := s.SignalWithStart(ctx, startItem(inst), "", msg, "")
		require.ErrorIs(t, err, duroxide.ErrInvalidInput, "%T", msg)
	}
	require.Nil(t, tryFetch(t, p, testLock), "nothing was written")
}
