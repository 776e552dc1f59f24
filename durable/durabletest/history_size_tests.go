package durabletest

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// historySizeTests (Go-only): ctx.HistorySize and
// ctx.ContinueAsNewSuggested, and the runtime's warnings at 75 % and 90 %
// of Options.HistoryLimits.
func historySizeTests() []sample {
	return []sample{
		{"history_size_counts_the_stored_events", historySizeCountsTheStoredEvents},
		{"history_size_is_identical_across_replay", historySizeIsIdenticalAcrossReplay},
		{"history_size_resets_after_continue_as_new", historySizeResetsAfterContinueAsNew},
		{"continue_as_new_suggested_keeps_executions_under_the_limit", continueAsNewSuggestedKeepsExecutionsUnderTheLimit},
		{"history_warnings_once_per_execution_at_75_and_90", historyWarningsOncePerExecution},
		{"history_size_after_a_message_already_queued", historySizeAfterAMessageAlreadyQueued},
	}
}

// sizeString renders a HistorySize for an activity input.
func sizeString(s durable.HistorySize) string {
	return strconv.Itoa(s.Events) + "/" + strconv.FormatInt(s.Bytes, 10)
}

// storedSize is the size of h's first n events, measured as HistorySize
// documents it: the length of each event's duroxide JSON.
func (e *env) storedSize(h []duroxide.Event, n int) string {
	e.t.Helper()
	var b int64
	for _, ev := range h[:n] {
		js, err := ev.MarshalJSON()
		require.NoError(e.t, err)
		b += int64(len(js))
	}
	return strconv.Itoa(n) + "/" + strconv.FormatInt(b, 10)
}

// sizeRecorder registers "Record", an activity that returns its input,
// and "Sizes": three times it records its HistorySize through Record
// (whose input replay checks, so a replay that measured differently
// fails as nondeterministic) and waits for "go".
func (e *env) sizeRecorder() *durable.Registry {
	r := durable.NewRegistry()
	act(e.t, r, "Record", func(_ durable.ActivityContext, in string) (string, error) { return in, nil })
	orch(e.t, r, "Sizes", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		var got []string
		for range 3 {
			s, err := durable.CallActivity[string](ctx, "Record", sizeString(ctx.HistorySize())).Await()
			if err != nil {
				return "", err
			}
			got = append(got, s)
			if _, err := durable.WaitEvent[string](ctx, "go").Await(); err != nil {
				return "", err
			}
		}
		return strings.Join(got, ","), nil
	})
	return r
}

// raiseGoTimes raises "go" n times, each once the instance waits for it.
func (e *env) raiseGoTimes(instance string, n int) {
	e.t.Helper()
	for i := 1; i <= n; i++ {
		e.waitHist(instance, "wait "+strconv.Itoa(i), func(h []duroxide.Event) bool { return countKind[duroxide.ExternalSubscribed](h) >= i })
		e.raise(instance, "go", "")
	}
}

func historySizeCountsTheStoredEvents(e *env) {
	e.start(e.sizeRecorder(), fastOptions(nil))
	e.startOrch("sizes", "Sizes", "")
	e.raiseGoTimes("sizes", 3)
	out := strings.Split(e.completed("sizes"), ",")
	h := e.history("sizes")
	// Each measurement counts the events before the Record it feeds: the
	// start, then everything up to the "go" that woke the code (the Record
	// is scheduled right after it).
	var want []string
	for i, ev := range h {
		if k, ok := ev.Kind.(duroxide.ActivityScheduled); ok && k.Name == "Record" {
			want = append(want, e.storedSize(h, i))
		}
	}
	require.Len(e.t, want, 3)
	require.Equal(e.t, want, out, "history: %s", kinds(h))
	prev := durable.HistorySize{}
	for _, s := range out {
		parts := strings.Split(s, "/")
		n, _ := strconv.Atoi(parts[0])
		b, _ := strconv.ParseInt(parts[1], 10, 64)
		require.Greater(e.t, n, prev.Events, "grows with events: %v", out)
		require.Greater(e.t, b, prev.Bytes, "grows with events: %v", out)
		prev = durable.HistorySize{Events: n, Bytes: b}
	}
}

func historySizeIsIdenticalAcrossReplay(e *env) {
	stop := e.startStoppable(e.sizeRecorder())
	e.startOrch("sizes-replay", "Sizes", "")
	e.raiseGoTimes("sizes-replay", 1)
	e.waitHist("sizes-replay", "the second record", func(h []duroxide.Event) bool { return countActivity(h, "Record") == 2 })
	stop()
	// A new runtime replays the recorded inputs: a different measurement
	// would not match the Record calls history holds.
	e.start(e.sizeRecorder(), fastOptions(nil))
	e.waitHist("sizes-replay", "the second wait", func(h []duroxide.Event) bool { return countKind[duroxide.ExternalSubscribed](h) == 2 })
	e.raise("sizes-replay", "go", "")
	e.waitHist("sizes-replay", "the third wait", func(h []duroxide.Event) bool { return countKind[duroxide.ExternalSubscribed](h) == 3 })
	e.raise("sizes-replay", "go", "")
	out := e.completed("sizes-replay")
	require.Len(e.t, strings.Split(out, ","), 3)
	_, err := durable.OldPatchBranches(e.sizeRecorder(), durable.RecordedExecution{Instance: "sizes-replay", ExecutionID: 1,
		History: e.history("sizes-replay")})
	require.NoError(e.t, err, "the replayer measures as the runtime did")
}

func historySizeResetsAfterContinueAsNew(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Record", func(_ durable.ActivityContext, in string) (string, error) { return in, nil })
	orch(e.t, r, "Grow", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		first := sizeString(ctx.HistorySize())
		for range 5 {
			if _, err := durable.CallActivity[string](ctx, "Record", "x").Await(); err != nil {
				return "", err
			}
		}
		in += first + "->" + sizeString(ctx.HistorySize()) + ";"
		if ctx.ExecutionID() == 1 {
			return "", durable.ContinueAsNew(ctx, in)
		}
		return in, nil
	})
	e.start(r, fastOptions(nil))
	e.startOrch("grow", "Grow", "")
	runs := strings.Split(strings.TrimSuffix(e.completed("grow"), ";"), ";")
	require.Len(e.t, runs, 2)
	h1, h2 := e.executionHistory("grow", 1), e.executionHistory("grow", 2)
	require.Equal(e.t, e.storedSize(h1, 1)+"->"+e.storedSize(h1, 11), runs[0])
	require.Equal(e.t, e.storedSize(h2, 1)+"->"+e.storedSize(h2, 11), runs[1], "the second execution counts its own history only")
}

// recordingLogger collects the runtime's log lines.
type recordingLogger struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *recordingLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *recordingLogger) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), substr)
}

// counter registers "Count": it runs Record until the history holds
// target events or, when suggested is set, until ContinueAsNewSuggested,
// then continues as new with the execution's event count until three
// executions ran.
func (e *env) counter(suggested bool, target int) *durable.Registry {
	r := durable.NewRegistry()
	act(e.t, r, "Record", func(_ durable.ActivityContext, in string) (string, error) { return in, nil })
	orch(e.t, r, "Count", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		for ctx.HistorySize().Events < target && !(suggested && ctx.ContinueAsNewSuggested()) {
			if _, err := durable.CallActivity[string](ctx, "Record", "x").Await(); err != nil {
				return "", err
			}
		}
		in += strconv.Itoa(ctx.HistorySize().Events) + ","
		if ctx.ExecutionID() < 3 {
			return "", durable.ContinueAsNew(ctx, in)
		}
		return in, nil
	})
	return r
}

func continueAsNewSuggestedKeepsExecutionsUnderTheLimit(e *env) {
	const limit = 40
	e.start(e.counter(true, 1000), fastOptions(func(o *durable.Options) { o.HistoryLimits = durable.HistoryLimits{Events: limit} }))
	e.startOrch("count", "Count", "")
	require.Equal(e.t, "31,31,31,", e.completed("count"), "suggested at 75 % of 40 events: the first count past 30 (each Record adds two)")
	for exec := uint64(1); exec <= 3; exec++ {
		require.Less(e.t, len(e.executionHistory("count", exec)), limit)
	}
}

func historyWarningsOncePerExecution(e *env) {
	logs := &recordingLogger{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	e.start(e.counter(false, 39), fastOptions(func(o *durable.Options) {
		o.HistoryLimits = durable.HistoryLimits{Events: 40}
		o.Logger = logger
	}))
	e.startOrch("count-warn", "Count", "")
	require.Equal(e.t, "39,39,39,", e.completed("count-warn"))
	// A turn logs after its commit, so the last may come after the client
	// saw the instance complete.
	e.waitFor("the warnings", func() bool {
		return logs.count("passed 75 % of its limit") >= 3 && logs.count("passed 90 % of its limit") >= 3
	})
	require.Equal(e.t, 3, logs.count("passed 75 % of its limit"), "once per execution:\n%s", logs.buf.String())
	require.Equal(e.t, 3, logs.count("passed 90 % of its limit"), "once per execution:\n%s", logs.buf.String())
}

// A dequeue whose message arrived before it resolves in the turn that
// subscribes, after the subscription is written; replay resolves it
// after applying the subscription. HistorySize answers the same at both.
func historySizeAfterAMessageAlreadyQueued(e *env) {
	release := make(chan struct{})
	r := durable.NewRegistry()
	act(e.t, r, "Record", func(_ durable.ActivityContext, in string) (string, error) { return in, nil })
	act(e.t, r, "Hold", func(ctx durable.ActivityContext, in string) (string, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return in, nil
	})
	orch(e.t, r, "Queued", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if _, err := durable.CallActivity[string](ctx, "Hold", "").Await(); err != nil {
			return "", err
		}
		msg, err := durable.DequeueEvent[string](ctx, "q").Await()
		if err != nil {
			return "", err
		}
		size, err := durable.CallActivity[string](ctx, "Record", sizeString(ctx.HistorySize())).Await()
		if err != nil {
			return "", err
		}
		if _, err := durable.WaitEvent[string](ctx, "go").Await(); err != nil {
			return "", err
		}
		return msg + " " + size, nil
	})
	e.start(r, fastOptions(nil))
	e.startOrch("queued", "Queued", "")
	e.waitHist("queued", "Hold scheduled", func(h []duroxide.Event) bool { return countActivity(h, "Hold") == 1 })
	e.enqueue("queued", "q", "m")
	e.waitHist("queued", "the message", anyKind[duroxide.ExternalEventPersistent])
	close(release)
	require.True(e.t, e.waitSubscription("queued", "go"))
	e.raise("queued", "go", "")
	out := e.completed("queued")
	h := e.history("queued")
	last := 0
	for i, ev := range h[:indexOfActivity(h, "Record")] {
		if _, ok := ev.Kind.(duroxide.ActivityCompleted); ok {
			last = i
		}
	}
	require.Equal(e.t, "m "+e.storedSize(h, last+1), out, "counted up to Hold's completion, which woke the code: %s", kinds(h))
}
