package cdb_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testbackend"
)

// Instance ids, KV keys and session ids come from users and may contain
// anything. These tests drive complete turns with hostile strings through
// every id-bearing path (instance, history, queue, outbox, KV, session
// documents) and require each value to come back byte for byte, with no two
// distinct values sharing a document.

// hostileLong is a 1000-byte id ending in tail (so two of them differ only
// at the end, past the point where ids are hashed).
func hostileLong(tail string) string {
	return strings.Repeat("L", 1000-len(tail)) + tail
}

var hostileIDs = []struct{ name, id string }{
	{"all-specials", `a/b\c?d#e"f'g~h%i`},
	{"slash", "a/b"},
	{"slash-escape-lookalike", "a~2Fb"},
	{"slash-percent-lookalike", "a%2Fb"},
	{"question", "a?b"},
	{"hash", "a#b"},
	{"backslash", `a\b`},
	{"double-quote", `a"b`},
	{"single-quote", "a'b"},
	{"tilde-only", "~"},
	{"percent-only", "%"},
	{"dot-dot", ".."},
	{"separator-lookalike", "i:history:1:1:kv:k"},
	{"token-lookalike", "o.aGk.00000000-0000-0000-0000-000000000000"},
	{"sql-lookalike", "x' OR 1=1 --"},
	{"json-lookalike", `{"id":"x","instanceId":"y"}`},
	{"whitespace-controls", "ctl\t\n\r\b\f."},
	{"spaces", "  spaced  id  "},
	{"trailing-space", "ends with a space "},
	{"unicode-bmp", "ünïcødé-日本語-Ω"},
	{"long-1000-a", hostileLong("/#?\\ 日a")},
	{"long-1000-b", hostileLong("/#?\\ 日b")},
	{"long-1000-slash", hostileLong("/")},
	{"long-1000-slash-lookalike", hostileLong("~2F")},
}

// hostileSuffix is appended to KV keys and session ids: they are never a
// partition key, so even what the SDK cannot carry in a header must work.
const hostileSuffix = "🎉\x00\x01\x1b\x7f\a/\\?#\"'~%"

// hostileTurn is what one instance's first turn wrote.
type hostileTurn struct {
	id, child, session string
	keys               []string
	history            []duroxide.Event
	subID              uint64 // event id of SubOrchestrationScheduled
}

func hostileKeys(id string) []string {
	// The id itself, and two keys that differ only by an escaped byte.
	return []string{id, id + "/", id + "~2F", id + hostileSuffix, "k:" + id, "", hostileLong(hostileSuffix + "a"), hostileLong(hostileSuffix + "b")}
}

// runHostileFirstTurn enqueues the start of id, fetches it and acks a turn
// that writes history, three KV keys, an activity with a session and a
// child start via the outbox, then checks Read and KVValue.
func runHostileFirstTurn(t *testing.T, h *harness, id string) hostileTurn {
	t.Helper()
	ctx := t.Context()
	p := h.p
	ht := hostileTurn{id: id, child: id + "/child#1?", session: "s/" + id + hostileSuffix, keys: hostileKeys(id)}

	require.NoError(t, p.EnqueueForOrchestrator(ctx, hStart(id), 0))
	item := mustFetchOrch(t, p, id)
	require.Equal(t, []duroxide.WorkItem{hStart(id)}, item.Messages)
	require.Empty(t, item.History)
	require.Equal(t, "HOrch", item.OrchestrationName)

	ht.history = []duroxide.Event{
		hStarted(id, "HOrch"),
		hEvent(id, 1, 2, duroxide.ActivityScheduled{Name: "Act", Input: id, SessionID: hptr(ht.session)}),
	}
	for i, k := range ht.keys {
		ht.history = append(ht.history, hEvent(id, 1, uint64(3+i), duroxide.KeyValueSet{Key: k, Value: "v:" + k, LastUpdatedAtMs: hNowMs()}))
	}
	ht.subID = uint64(len(ht.history) + 1)
	ht.history = append(ht.history, hEvent(id, 1, ht.subID, duroxide.SubOrchestrationScheduled{Name: "HChild", Instance: ht.child, Input: id}))
	act := duroxide.ActivityExecuteItem{Instance: id, ExecutionID: 1, ID: 2, Name: "Act", Input: id, SessionID: hptr(ht.session)}
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID:       1,
		HistoryDelta:      ht.history,
		WorkerItems:       []duroxide.WorkItem{act},
		OrchestratorItems: []duroxide.WorkItem{hChildStart(id, ht.child, ht.subID)},
		Metadata:          hRunning("HOrch"),
	}))

	// The outbox delivered the child's start right after the commit.
	require.Len(t, h.docsWhere("orch_queue", ht.child), 1, "child start message")
	require.Empty(t, h.docsWhere("outbox_intent", id), "intent left after delivery")

	hist, err := p.Read(ctx, id)
	require.NoError(t, err)
	require.Equal(t, ht.history, hist)
	for _, k := range ht.keys {
		v, ok, err := p.KVValue(ctx, id, k)
		require.NoError(t, err)
		require.True(t, ok, "key %q", k)
		require.Equal(t, "v:"+k, v)
	}
	all, err := p.KVValues(ctx, id)
	require.NoError(t, err)
	require.Len(t, all, len(ht.keys))
	return ht
}

// finishHostile runs the activity (session-affine fetch), the child's
// turn and the parent's completing turn.
func finishHostile(t *testing.T, h *harness, ht hostileTurn) {
	t.Helper()
	ctx := t.Context()
	p := h.p
	id := ht.id

	w, err := p.FetchWorkItem(ctx, hLock, 0, &duroxide.SessionFetchConfig{OwnerID: "owner/#1", LockTimeout: hLock}, duroxide.DefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w, "activity of %q", id)
	require.Equal(t, duroxide.ActivityExecuteItem{Instance: id, ExecutionID: 1, ID: 2, Name: "Act", Input: id, SessionID: hptr(ht.session)}, w.Item)
	sessions := h.docsWhere("session", id)
	require.Len(t, sessions, 1)
	require.Equal(t, ht.session, sessions[0]["sessionId"])
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: id, ExecutionID: 1, ID: 2, Result: "r:" + id}))

	// The child's start was enqueued before the activity's completion.
	ci := mustFetchOrch(t, p, ht.child)
	require.Equal(t, []duroxide.WorkItem{hChildStart(id, ht.child, ht.subID)}, ci.Messages)
	md := hStatus("HChild", duroxide.StatusCompleted, "child-out")
	md.ParentInstanceID = hptr(id)
	childHist := []duroxide.Event{hStarted(ht.child, "HChild"), hEvent(ht.child, 1, 2, duroxide.OrchestrationCompleted{Output: "child-out"})}
	// The child's result goes back to the hostile parent through the outbox.
	subDone := duroxide.SubOrchCompletedItem{ParentInstance: id, ParentExecutionID: 1, ParentID: ht.subID, Result: "child-out"}
	require.NoError(t, p.AckOrchestrationItem(ctx, ci.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, HistoryDelta: childHist, Metadata: md,
		OrchestratorItems: []duroxide.WorkItem{subDone}}))
	require.Empty(t, h.docsWhere("outbox_intent", ht.child))

	pi := mustFetchOrch(t, p, id)
	require.Nil(t, pi.HistoryError)
	require.Equal(t, ht.history, pi.History)
	require.Equal(t, []duroxide.WorkItem{duroxide.ActivityCompletedItem{Instance: id, ExecutionID: 1, ID: 2, Result: "r:" + id}, subDone}, pi.Messages)
	done := []duroxide.Event{
		{EventID: ht.subID + 1, SourceEventID: hptr(uint64(2)), InstanceID: id, ExecutionID: 1, TimestampMs: hNowMs(), DuroxideVersion: "0.1.31", Kind: duroxide.ActivityCompleted{Result: "r:" + id}},
		{EventID: ht.subID + 2, SourceEventID: hptr(ht.subID), InstanceID: id, ExecutionID: 1, TimestampMs: hNowMs(), DuroxideVersion: "0.1.31", Kind: duroxide.SubOrchestrationCompleted{Result: "child-out"}},
		hEvent(id, 1, ht.subID+3, duroxide.OrchestrationCompleted{Output: "out:" + id}),
	}
	require.NoError(t, p.AckOrchestrationItem(ctx, pi.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1, HistoryDelta: done, Metadata: hStatus("HOrch", duroxide.StatusCompleted, "out:"+id),
	}))
	require.Empty(t, h.docsWhere("orch_queue", id), "messages left for the parent")
	hist, err := p.Read(ctx, id)
	require.NoError(t, err)
	require.Equal(t, append(append([]duroxide.Event{}, ht.history...), done...), hist)
	ch, err := p.Read(ctx, ht.child)
	require.NoError(t, err)
	require.Equal(t, childHist, ch)

	info, err := p.InstanceInfo(ctx, id)
	require.NoError(t, err)
	require.Equal(t, id, info.InstanceID)
	require.Equal(t, duroxide.StatusCompleted, info.Status)
	require.Equal(t, "out:"+id, *info.Output)
	cinfo, err := p.InstanceInfo(ctx, ht.child)
	require.NoError(t, err)
	require.Equal(t, ht.child, cinfo.InstanceID)
	require.NotNil(t, cinfo.ParentInstanceID)
	require.Equal(t, id, *cinfo.ParentInstanceID)
	children, err := p.ListChildren(ctx, id)
	require.NoError(t, err)
	require.Equal(t, []string{ht.child}, children)
	for _, k := range ht.keys {
		v, ok, err := p.KVValue(ctx, id, k)
		require.NoError(t, err)
		require.True(t, ok, "key %q after completion", k)
		require.Equal(t, "v:"+k, v)
	}
}

// TestHostileIDsRoundTrip runs complete orchestrations (start, turn with
// history, KV, a session activity and a child started through the outbox,
// activity, child turn reporting back through the outbox, completion) for instance ids, KV keys and session
// ids full of characters Cosmos refuses or the SDK would mangle, including
// 1000-byte ids and ids that differ only by an escaped character, all in one
// container, then lists and deletes them: every value round-trips exactly
// and deleting one instance never touches another.
func TestHostileIDsRoundTrip(t *testing.T) {
	t.Parallel()
	testbackend.ForEachProvider(t, func(t *testing.T, b testbackend.Backend) {
		t.Parallel() // each backend has its own server or database
		testHostileIDsRoundTrip(t, newHarness(t, cdb.Options{}, onBackend(b)))
	})
}

func testHostileIDsRoundTrip(t *testing.T, h *harness) {
	ctx := t.Context()
	var turns []hostileTurn
	for _, c := range hostileIDs {
		require.True(t, utf8.ValidString(c.id))
		t.Run(c.name, func(t *testing.T) {
			ht := runHostileFirstTurn(t, h, c.id)
			finishHostile(t, h, ht)
			turns = append(turns, ht)
		})
	}
	require.Equal(t, len(hostileIDs), len(turns), "a subtest failed")

	var want []string
	for _, ht := range turns {
		want = append(want, ht.id, ht.child)
	}
	sort.Strings(want)
	got, err := h.p.ListInstances(ctx)
	require.NoError(t, err)
	require.Equal(t, want, got)
	completed, err := h.p.ListInstancesByStatus(ctx, duroxide.StatusCompleted)
	require.NoError(t, err)
	require.Equal(t, want, completed)

	// Every document lives in its instance's partition; count them so a
	// deletion can be shown to touch nothing else.
	perPartition := func() map[string]int {
		m := map[string]int{}
		for _, d := range withoutRetired(h.docs()) {
			m[d["instanceId"].(string)]++
		}
		return m
	}
	before := perPartition()
	for _, ht := range turns {
		require.NotZero(t, before[ht.id], "documents of %q", ht.id)
		require.NotZero(t, before[ht.child], "documents of %q", ht.child)
	}
	for i, ht := range turns {
		res, err := h.p.DeleteInstance(ctx, ht.id, false)
		require.NoError(t, err, "delete %q", ht.id)
		require.Equal(t, uint64(2), res.InstancesDeleted, "delete %q (with its child)", ht.id)
		hist, err := h.p.Read(ctx, ht.id)
		require.NoError(t, err)
		require.Empty(t, hist)
		_, ok, err := h.p.KVValue(ctx, ht.id, ht.keys[0])
		require.NoError(t, err)
		require.False(t, ok)
		after := perPartition()
		require.Zero(t, after[ht.id], "documents left in %q", ht.id)
		require.Zero(t, after[ht.child], "documents left in %q", ht.child)
		for _, other := range turns[i+1:] {
			require.Equal(t, before[other.id], after[other.id], "deleting %q changed %q", ht.id, other.id)
			require.Equal(t, before[other.child], after[other.child], "deleting %q changed %q", ht.id, other.child)
		}
	}
	got, err = h.p.ListInstances(ctx)
	require.NoError(t, err)
	require.Empty(t, got)
	require.Empty(t, withoutRetired(h.docs()), "documents left after deleting every instance")
}

// invalidIDs cannot be stored: Cosmos partition key values are limited to
// 2048 bytes and JSON cannot carry invalid UTF-8.
var invalidIDs = []struct{ name, id string }{
	{"empty", ""},
	{"invalid-utf8", "bad\xff\xfe"},
	{"truncated-utf8", "bad\xc3"},
	{"2049-bytes", strings.Repeat("x", 2049)},
	{"unicode-over-2048-bytes", strings.Repeat("日", 683)}, // 2049 bytes
}

// TestHostileInvalidIDsRejected checks that ids that cannot be stored
// (empty, invalid UTF-8, longer than a partition key) are refused with a
// permanent error on every path that takes one, and that nothing is
// written: not even part of a turn, whose lock stays held.
func TestHostileInvalidIDsRejected(t *testing.T) {
	t.Parallel()
	testbackend.ForEachProvider(t, func(t *testing.T, b testbackend.Backend) {
		t.Parallel() // each backend has its own server or database
		testHostileInvalidIDsRejected(t, newHarness(t, cdb.Options{}, onBackend(b)))
	})
}

func testHostileInvalidIDsRejected(t *testing.T, h *harness) {
	ctx := t.Context()
	p := h.p
	for _, c := range invalidIDs {
		t.Run(c.name, func(t *testing.T) {
			bad := c.id
			before := h.snapshot()
			ev := hStarted(bad, "HOrch")
			checks := map[string]error{
				"enqueue_start":     p.EnqueueForOrchestrator(ctx, hStart(bad), 0),
				"enqueue_event":     p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: bad, Name: "e", Data: "d"}, 0),
				"enqueue_delayed":   p.EnqueueForOrchestrator(ctx, duroxide.QueueMessageItem{Instance: bad, Name: "q", Data: "d"}, time.Second),
				"enqueue_worker":    p.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: bad, ExecutionID: 1, ID: 1, Name: "A"}),
				"append":            p.AppendWithExecution(ctx, bad, 1, []duroxide.Event{ev}),
				"delete_instance":   func() error { _, err := p.DeleteInstance(ctx, bad, true); return err }(),
				"read":              func() error { _, err := p.Read(ctx, bad); return err }(),
				"read_execution":    func() error { _, err := p.ReadWithExecution(ctx, bad, 1); return err }(),
				"get_kv_value":      func() error { _, _, err := p.KVValue(ctx, bad, "k"); return err }(),
				"get_kv_all":        func() error { _, err := p.KVValues(ctx, bad); return err }(),
				"get_instance_info": func() error { _, err := p.InstanceInfo(ctx, bad); return err }(),
			}
			for name, err := range checks {
				requirePermanentErr(t, err, name)
			}
			h.requireUnchanged(before)
		})
	}

	// The same ids as the target of a turn's items: the whole turn is
	// refused before anything is written, and the lock is kept.
	createHInstance(t, p, "good-parent")
	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: "good-parent", Name: "go", Data: "1"}, 0))
	item := mustFetchOrch(t, p, "good-parent")
	other := h.open(cdb.Options{})
	for _, c := range invalidIDs {
		t.Run("ack-target-"+c.name, func(t *testing.T) {
			bad := c.id
			before := h.snapshot()
			ev := hEvent("good-parent", 1, 2, duroxide.ExternalEvent{Name: "go", Data: "1"})
			commits := map[string]duroxide.OrchestrationCommit{
				"child_start": {ExecutionID: 1, HistoryDelta: []duroxide.Event{ev}, OrchestratorItems: []duroxide.WorkItem{hChildStart("good-parent", bad, 2)}, Metadata: hRunning("HOrch")},
				"raise_event": {ExecutionID: 1, HistoryDelta: []duroxide.Event{ev}, OrchestratorItems: []duroxide.WorkItem{duroxide.ExternalRaisedItem{Instance: bad, Name: "x"}}, Metadata: hRunning("HOrch")},
				"activity":    {ExecutionID: 1, HistoryDelta: []duroxide.Event{ev}, WorkerItems: []duroxide.WorkItem{duroxide.ActivityExecuteItem{Instance: bad, ExecutionID: 1, ID: 2, Name: "A"}}, Metadata: hRunning("HOrch")},
			}
			for name, commit := range commits {
				requirePermanentErr(t, p.AckOrchestrationItem(ctx, item.LockToken, commit), name)
				h.requireUnchanged(before, name)
				requireNoOrch(t, other, "lock of good-parent must still be held after a refused ack")
			}
		})
	}
	// With good input the held lock acks.
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1, HistoryDelta: []duroxide.Event{hEvent("good-parent", 1, 2, duroxide.ExternalEvent{Name: "go", Data: "1"})}, Metadata: hRunning("HOrch"),
	}))
}

// TestDocumentIDKindsRoundTrip pushes every kind of document id the
// provider writes (cdb.DocIDKinds: instance, history, queue items, done
// markers, KV and KV deltas, sessions, outbox and intents, journals,
// execution summaries; leases
// are in memory and have none), built from hostile instance ids, KV keys
// and session ids, through create, read, replace, patch, delete and a
// transactional batch on every backend. The gateway accepts some ids it can
// then not serve by id ('/', '#', a trailing space: 404 or 401 after a
// successful create), so only a full round trip per operation shows that no
// escaped id falls into that trap.
func TestDocumentIDKindsRoundTrip(t *testing.T) {
	t.Parallel()
	testbackend.ForEachProvider(t, func(t *testing.T, b testbackend.Backend) {
		t.Parallel() // each backend has its own server or database
		c := b.NewContainer(t, azcosmos.ContainerProperties{PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{cdb.PartitionKeyPath}}})
		ctx := t.Context()
		for _, hc := range hostileIDs {
			inst := hc.id
			pk := azcosmos.NewPartitionKeyString(inst)
			for _, user := range []string{"k ", inst + " ", inst + hostileSuffix, "/#?\\ "} {
				for kind, id := range cdb.DocIDKinds(inst, user) {
					doc := func(n int) []byte {
						b, _ := json.Marshal(map[string]any{"id": id, "instanceId": inst, "n": n})
						return b
					}
					what := fmt.Sprintf("%s/%s id %q", hc.name, kind, id)
					cr, err := c.CreateItem(ctx, pk, doc(1), nil)
					if isConflictErr(err) {
						continue // the same id from another user string (kinds without one)
					}
					require.NoError(t, err, "create %s", what)
					// The write's session token: read-your-writes on a
					// lagging replica too.
					_, err = c.ReadItem(ctx, pk, id, &azcosmos.ItemOptions{SessionToken: cr.SessionToken})
					require.NoError(t, err, "read %s", what)
					_, err = c.ReplaceItem(ctx, pk, id, doc(2), nil)
					require.NoError(t, err, "replace %s", what)
					var ops azcosmos.PatchOperations
					ops.AppendSet("/n", 3)
					_, err = c.PatchItem(ctx, pk, id, ops, nil)
					require.NoError(t, err, "patch %s", what)
					_, err = c.DeleteItem(ctx, pk, id, nil)
					require.NoError(t, err, "delete %s", what)

					bt := c.NewTransactionalBatch(pk)
					bt.CreateItem(doc(4), nil)
					bt.ReadItem(id, nil)
					bt.ReplaceItem(id, doc(5), nil)
					bt.PatchItem(id, ops, nil)
					bt.DeleteItem(id, nil)
					resp, err := c.ExecuteTransactionalBatch(ctx, bt, nil)
					require.NoError(t, err, "batch %s", what)
					require.True(t, resp.Success, "batch %s: %+v", what, resp.OperationResults)
				}
			}
		}
	})
}

func isConflictErr(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusConflict
}

// sdkHostileIDs are instance ids azcosmos cannot put in the partition key
// header as they are: it encodes the value with strconv.QuoteToASCII,
// which writes Go escapes (\U0001f389, \x00, \a) that are not JSON.
var sdkHostileIDs = []struct{ name, id string }{
	{"emoji", "emoji-🎉🚀"},
	{"nul", "nul\x00byte"},
	{"control-01", "ctl\x01x"},
	{"escape", "esc\x1b[0m"},
	{"bell", "bell\a"},
	{"del", "del\x7f"},
	{"long-1000-emoji", hostileLong("/🎉")},
}

// TestSDKUnsafeInstanceIDsRejected: instance ids with characters outside
// the Basic Multilingual Plane or control characters cannot be carried in
// azcosmos v1.5.0's partition key header (it writes Go escapes, not JSON),
// so they are refused up front with a permanent error and nothing written.
func TestSDKUnsafeInstanceIDsRejected(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	for _, c := range sdkHostileIDs {
		t.Run(c.name, func(t *testing.T) {
			before := h.snapshot()
			err := h.p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: c.id, Orchestration: "O", Input: "{}", ExecutionID: 1}, 0)
			require.Error(t, err)
			require.False(t, duroxide.IsRetryable(err), "%v", err)
			require.Equal(t, before, h.snapshot(), "nothing written")
		})
	}
}

// TestInvalidKeysAndSessionsRejected: a KV key or a session id that
// is not valid UTF-8 cannot be stored (JSON would silently turn it into
// U+FFFD, so it would not round-trip); the turn is refused permanently,
// nothing is written and the lock is kept.
func TestInvalidKeysAndSessionsRejected(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	p := h.p
	other := h.open(cdb.Options{})
	bad := "bad\xff\xfekey"
	cases := []struct {
		name   string
		commit func(inst string, ev duroxide.Event) duroxide.OrchestrationCommit
	}{
		{"kv_set", func(inst string, ev duroxide.Event) duroxide.OrchestrationCommit {
			return duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: hRunning("HOrch"), HistoryDelta: []duroxide.Event{ev,
				hEvent(inst, 1, 3, duroxide.KeyValueSet{Key: bad, Value: "v", LastUpdatedAtMs: hNowMs()})}}
		}},
		{"kv_cleared", func(inst string, ev duroxide.Event) duroxide.OrchestrationCommit {
			return duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: hRunning("HOrch"), HistoryDelta: []duroxide.Event{ev,
				hEvent(inst, 1, 3, duroxide.KeyValueCleared{Key: bad})}}
		}},
		{"activity_session", func(inst string, ev duroxide.Event) duroxide.OrchestrationCommit {
			return duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: hRunning("HOrch"), HistoryDelta: []duroxide.Event{ev,
				hEvent(inst, 1, 3, duroxide.ActivityScheduled{Name: "A", SessionID: hptr(bad)})},
				WorkerItems: []duroxide.WorkItem{duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 3, Name: "A", SessionID: hptr(bad)}}}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inst := "kv-" + c.name
			createHInstance(t, p, inst)
			require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "go", Data: "1"}, 0))
			item := mustFetchOrch(t, p, inst)
			ev := hEvent(inst, 1, 2, duroxide.ExternalEvent{Name: "go", Data: "1"})
			before := h.snapshot()
			requirePermanentErr(t, p.AckOrchestrationItem(ctx, item.LockToken, c.commit(inst, ev)))
			h.requireUnchanged(before)
			requireNoOrch(t, other, "the lock must still be held after a refused ack")
			require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
				ExecutionID: 1, HistoryDelta: []duroxide.Event{ev}, Metadata: hRunning("HOrch"),
			}))
		})
	}
	t.Run("enqueue_session", func(t *testing.T) {
		before := h.snapshot()
		requirePermanentErr(t, p.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: "kv-enqueue", ExecutionID: 1, ID: 9, Name: "A", SessionID: hptr(bad)}))
		h.requireUnchanged(before)
	})
}

// TestInvalidCompletionTargetRejected: AckWorkItem with a
// completion addressed to an instance id that cannot be stored is refused
// permanently before anything is written, and the item stays locked.
func TestInvalidCompletionTargetRejected(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{})
	ctx := t.Context()
	p := h.p
	other := h.open(cdb.Options{})
	for _, c := range invalidIDs {
		t.Run(c.name, func(t *testing.T) {
			inst := "worker-" + c.name
			require.NoError(t, p.EnqueueForWorker(ctx, duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: "A"}))
			w, err := p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.DefaultOnly())
			require.NoError(t, err)
			require.NotNil(t, w)
			before := h.snapshot()
			err = p.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: c.id, ExecutionID: 1, ID: 2, Result: "r"})
			requirePermanentErr(t, err)
			h.requireUnchanged(before)
			w2, err := other.FetchWorkItem(ctx, hLock, 0, nil, duroxide.DefaultOnly())
			require.NoError(t, err)
			require.Nil(t, w2, "the work item must still be locked")
			require.NoError(t, p.AckWorkItem(ctx, w.LockToken, duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "r"}))
		})
	}
}
