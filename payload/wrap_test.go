package payload_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
	"github.com/duroxide-go/cdb/payload"
)

// deletions is an identity codec that records what Wrap asks it to
// delete, as a codec keeping payloads outside the store is asked.
type deletions struct {
	mu    sync.Mutex
	calls []string
}

func (*deletions) Name() string { return "rec" }
func (*deletions) Encode(_ context.Context, _ payload.Scope, b []byte) ([]byte, error) {
	return b, nil
}
func (*deletions) Decode(_ context.Context, _ payload.Scope, b []byte) ([]byte, error) {
	return b, nil
}
func (d *deletions) DeletePayloads(_ context.Context, instance string, execs []uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, instance+" "+fmtExecs(execs))
	return nil
}

func fmtExecs(execs []uint64) string {
	if execs == nil {
		return "all"
	}
	s := ""
	for _, e := range execs {
		s += strconv.FormatUint(e, 10)
	}
	return s
}

func TestWrapDeletesExternalPayloadsOnPruneAndDelete(t *testing.T) {
	ctx := context.Background()
	rec := &deletions{}
	p, err := payload.Wrap(memprovider.New(), payload.Gzip(), rec)
	if err != nil {
		t.Fatal(err)
	}
	reg := durable.NewRegistry()
	if err := durable.RegisterOrchestration(reg, "Loop", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		if n == 0 {
			return "done", nil
		}
		return "", durable.ContinueAsNew(ctx, strconv.Itoa(n-1))
	}); err != nil {
		t.Fatal(err)
	}
	rt, err := durable.Start(ctx, p, reg, &durable.Options{MinPollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c := durable.NewClient(p)
	if err := c.StartOrchestration(ctx, "loop", "Loop", "2"); err != nil {
		t.Fatal(err)
	}
	st, err := c.WaitForOrchestration(ctx, "loop", durable.WaitOptions{Timeout: time.Minute})
	if err != nil || st.Output != "done" {
		t.Fatalf("status %+v, %v", st, err)
	}
	if err := rt.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Admin().PruneExecutions(ctx, "loop", duroxide.PruneOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Admin().DeleteInstance(ctx, "loop", false); err != nil {
		t.Fatal(err)
	}
	if want := []string{"loop 12", "loop all"}; !slices.Equal(rec.calls, want) {
		t.Fatalf("deletions %q, want %q", rec.calls, want)
	}
}

// A message a turn hands back to the next is written back as it was
// stored, so the store recognises it (and keeps its place) also when it
// was stored before the codec, or under a key rotated out since.
func TestHandedBackMessageKeepsItsStoredForm(t *testing.T) {
	ctx := context.Background()
	store, p := encodedStore(t)
	must(t, store.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: "i", Orchestration: "O", Input: `"in"`, ExecutionID: 1}, 0))
	must(t, store.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: "i", Name: "e", Data: `"legacy"`}, 0))
	item, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	must(t, err)
	if item == nil || len(item.Messages) != 2 {
		t.Fatalf("fetched %+v", item)
	}
	running, v := duroxide.StatusRunning, "1.0.0"
	name := "O"
	must(t, p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1,
		HistoryDelta: []duroxide.Event{{EventID: 1, InstanceID: "i", ExecutionID: 1, DuroxideVersion: "0.1.29",
			Kind: duroxide.OrchestrationStarted{Name: "O", Version: v, Input: `"in"`}}},
		OrchestratorItems: []duroxide.WorkItem{item.Messages[1]},
		Metadata:          duroxide.ExecutionMetadata{Status: &running, OrchestrationName: &name, OrchestrationVersion: &v},
	}))
	raw, err := store.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	must(t, err)
	if raw == nil || len(raw.Messages) != 1 {
		t.Fatalf("after the hand-back: %+v", raw)
	}
	if ev := raw.Messages[0].(duroxide.ExternalRaisedItem); ev.Data != `"legacy"` {
		t.Fatalf("handed-back message stored as %q, want it as it was", ev.Data)
	}
	if h, _ := store.Read(ctx, "i"); len(h) != 1 || !payload.IsEncoded(h[0].Kind.(duroxide.OrchestrationStarted).Input) {
		t.Fatalf("history %+v: the new event must be encoded", h)
	}
}

// An activity whose input does not decode is given back, its attempt
// counted, and the fetch fails with the cause; it is never run on the
// encoded bytes.
func TestUndecodableActivityIsGivenBack(t *testing.T) {
	ctx := context.Background()
	store := memprovider.New()
	bad := payload.Prefix + "zstd:AAAA"
	if err := store.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: "i", ExecutionID: 1, ID: 2, Name: "A", Input: bad}); err != nil {
		t.Fatal(err)
	}
	p, err := payload.Wrap(store, payload.Gzip())
	if err != nil {
		t.Fatal(err)
	}
	w, err := p.FetchWorkItem(ctx, time.Minute, 0, nil, duroxide.TagFilter{})
	if w != nil || !errors.Is(err, payload.ErrUnknownCodec) || duroxide.IsRetryable(err) {
		t.Fatalf("fetch: %+v, %v; want nil and a permanent ErrUnknownCodec", w, err)
	}
	if again, err := store.FetchWorkItem(ctx, time.Minute, 0, nil, duroxide.TagFilter{}); err != nil || again != nil {
		t.Fatalf("the item must be given back with a backoff: %+v, %v", again, err)
	}
}

// Heartbeat details are a payload: a renewal through the wrapper stores
// them encoded, and a later fetch and the HeartbeatReader decode them; a
// lock the wrapper did not fetch is refused, not encoded for no one; and
// details that do not decode give the item back as an undecodable input
// does.
func TestHeartbeatDetailsAreEncoded(t *testing.T) {
	ctx := context.Background()
	store, p := encodedStore(t)
	must(t, store.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: "i", ExecutionID: 1, ID: 2, Name: "A", Input: `"in"`}))
	rec, ok := p.(duroxide.HeartbeatRecorder)
	if !ok {
		t.Fatal("the wrapper of a HeartbeatRecorder must be one")
	}
	must2 := func(w *duroxide.LockedWorkItem, err error) *duroxide.LockedWorkItem {
		t.Helper()
		must(t, err)
		if w == nil {
			t.Fatal("no work item")
		}
		return w
	}
	w := must2(p.FetchWorkItem(ctx, time.Minute, 0, nil, duroxide.TagFilter{}))
	if err := rec.RenewWorkItemLockWithDetails(ctx, "not-fetched-here", time.Minute, `{"page":1}`); !errors.Is(err, duroxide.ErrLockLost) || duroxide.IsRetryable(err) {
		t.Fatalf("renewal of a lock not fetched through the wrapper: %v, want a permanent ErrLockLost", err)
	}
	must(t, rec.RenewWorkItemLockWithDetails(ctx, w.LockToken, time.Minute, `{"page":1}`))
	raw, err := store.ActivityHeartbeats(ctx, "i")
	must(t, err)
	if len(raw) != 1 || !payload.IsEncoded(raw[0].Details) {
		t.Fatalf("stored heartbeats %+v: want the details encoded", raw)
	}
	plain, err := p.(duroxide.HeartbeatReader).ActivityHeartbeats(ctx, "i")
	must(t, err)
	if len(plain) != 1 || plain[0].Details != `{"page":1}` || plain[0].Name != "A" {
		t.Fatalf("heartbeats through the wrapper %+v", plain)
	}
	must(t, p.AbandonWorkItem(ctx, w.LockToken, 0, false))
	if err := rec.RenewWorkItemLockWithDetails(ctx, w.LockToken, time.Minute, `{"page":2}`); !errors.Is(err, duroxide.ErrLockLost) {
		t.Fatalf("renewal after the abandon: %v, want ErrLockLost", err)
	}
	again := must2(p.FetchWorkItem(ctx, time.Minute, 0, nil, duroxide.TagFilter{}))
	if again.Heartbeat == nil || again.Heartbeat.Details != `{"page":1}` {
		t.Fatalf("refetched heartbeat %+v, want the details decoded", again.Heartbeat)
	}
	must(t, p.AbandonWorkItem(ctx, again.LockToken, 0, false))

	// Under another key only, the details do not decode.
	other, err := payload.Wrap(store, aes(t, key("k2", 2)))
	must(t, err)
	if w, err := other.FetchWorkItem(ctx, time.Minute, 0, nil, duroxide.TagFilter{}); w != nil || !errors.Is(err, payload.ErrUnknownKey) {
		t.Fatalf("fetch with undecodable details: %+v, %v; want nil and ErrUnknownKey", w, err)
	}
	if _, err := other.(duroxide.HeartbeatReader).ActivityHeartbeats(ctx, "i"); !errors.Is(err, payload.ErrUnknownKey) {
		t.Fatalf("reading undecodable details: %v, want ErrUnknownKey", err)
	}
}

// A failed execution's KV baseline (duroxide.OrchestrationItem.KVBaseline)
// is decoded like the snapshot: a rewind replays against it.
func TestKVBaselineIsDecoded(t *testing.T) {
	ctx := context.Background()
	store, p := encodedStore(t)
	name, v := "O", "1.0.0"
	ev := func(exec, id uint64, k duroxide.EventKind) duroxide.Event {
		return duroxide.Event{EventID: id, InstanceID: "i", ExecutionID: exec, DuroxideVersion: "0.1.29", Kind: k}
	}
	turn := func(exec uint64, status string, events ...duroxide.Event) {
		t.Helper()
		item, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
		must(t, err)
		if item == nil {
			t.Fatal("nothing fetched")
		}
		must(t, p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{ExecutionID: exec, HistoryDelta: events,
			Metadata: duroxide.ExecutionMetadata{Status: &status, OrchestrationName: &name, OrchestrationVersion: &v}}))
	}
	started := func(exec uint64) duroxide.Event {
		return ev(exec, 1, duroxide.OrchestrationStarted{Name: name, Version: v, Input: `"in"`})
	}
	must(t, store.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: "i", Orchestration: name, Input: `"in"`, Version: &v, ExecutionID: 1}, 0))
	turn(1, duroxide.StatusContinuedAsNew, started(1), ev(1, 2, duroxide.KeyValueSet{Key: "k", Value: `"v1"`}),
		ev(1, 3, duroxide.OrchestrationContinuedAsNew{Input: `"in"`}))
	must(t, store.EnqueueForOrchestrator(ctx, duroxide.ContinueAsNewItem{Instance: "i", Orchestration: name, Input: `"in"`, Version: &v,
		CarryForwardEvents: []duroxide.CarryForwardEvent{}}, 0))
	turn(2, duroxide.StatusFailed, started(2), ev(2, 2, duroxide.KeyValueSet{Key: "k", Value: `"v2"`}),
		ev(2, 3, duroxide.OrchestrationFailed{Details: duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppOrchestrationFailed}, Message: "boom"}}))
	must(t, store.EnqueueForOrchestrator(ctx, duroxide.RewindInstanceItem{Instance: "i", ExecutionID: 2}, 0))
	item, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	must(t, err)
	if item == nil || item.HistoryError != nil {
		t.Fatalf("fetched %+v", item)
	}
	if got := item.KVBaseline["k"].Value; got != `"v1"` {
		t.Fatalf("baseline k = %q, want the decoded value of execution 2's start", got)
	}
	if got := item.KVSnapshot["k"].Value; got != `"v2"` {
		t.Fatalf("snapshot k = %q, want the decoded value the failure left", got)
	}
}

// encodedStore returns a memory store and payload.Wrap over it, encoding
// under AES-GCM key k1: a test writes the store directly for what was
// stored before (or without) the codec, and reads it for what the
// wrapper stored.
func encodedStore(t *testing.T) (*memprovider.Provider, duroxide.Provider) {
	t.Helper()
	store := memprovider.New()
	p, err := payload.Wrap(store, aes(t, key("k1", 1)))
	must(t, err)
	return store, p
}

// must fails t at once on an error a step cannot go on without.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
