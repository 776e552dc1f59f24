package cdb_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
)

// updateGolden rewrites the golden files from the current run instead of
// comparing with them: go test -run TestDocumentLayout -update .
var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/ from this run")

// goldenEpoch is the fixed time of the golden run's clock, so timestamps
// in the documents are the same on every run.
var goldenEpoch = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

// TestDocumentLayout pins the stored document layout (the field names, id
// patterns and embedded wire JSON that docs/design.md and
// docs/compatibility.md describe) with one canonical orchestration written
// through the provider on cosmostest: a start, a turn that schedules an
// activity and a timer and sets a KV value and the custom status, the
// activity's completion, and the final turn that completes the instance.
// After each step every raw document is compared with
// testdata/documents/<step>.json, volatile fields normalized (see
// normalizeDocuments). A change here is a change to what existing
// containers hold: it needs a migration note in the CHANGELOG.
func TestDocumentLayout(t *testing.T) {
	h := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	h.clock.ns.Store(goldenEpoch.UnixNano())
	p := h.actor(nil)
	ctx := t.Context()
	const inst = "golden-1"
	at := func() uint64 { return uint64(h.clock.now().UnixMilli()) }
	ev := func(id uint64, source *uint64, kind duroxide.EventKind) duroxide.Event {
		return duroxide.Event{EventID: id, SourceEventID: source, InstanceID: inst, ExecutionID: 1, TimestampMs: at(), DuroxideVersion: "0.1.29", Kind: kind}
	}
	check := func(step string) {
		t.Helper()
		compareGolden(t, filepath.Join("testdata", "documents", step+".json"), normalizeDocuments(t, h.docs()))
	}

	// 1. The client starts the instance (Client.StartOrchestration's write).
	require.NoError(t, p.StartInstance(ctx, duroxide.StartOrchestrationItem{
		Instance: inst, Orchestration: "Order", Version: hptr("1.0.0"), Input: `{"order":42}`, ExecutionID: 1,
	}, ""))
	check("01-started")

	// 2. The first turn: started, an activity and a 1-minute timer
	// scheduled, a KV value and the custom status set.
	h.clock.advance(time.Second)
	item := mustFetchOrch(t, p, inst)
	fireAt := at() + uint64(time.Minute.Milliseconds())
	status := "charging"
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1,
		HistoryDelta: []duroxide.Event{
			ev(1, nil, duroxide.OrchestrationStarted{Name: "Order", Version: "1.0.0", Input: `{"order":42}`}),
			ev(2, nil, duroxide.ActivityScheduled{Name: "Charge", Input: `{"amount":10}`}),
			ev(3, nil, duroxide.TimerCreated{FireAtMs: fireAt}),
			ev(4, nil, duroxide.KeyValueSet{Key: "stage", Value: "charging", LastUpdatedAtMs: at()}),
			ev(5, nil, duroxide.CustomStatusUpdated{Status: &status}),
		},
		WorkerItems:       []duroxide.WorkItem{duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: "Charge", Input: `{"amount":10}`}},
		OrchestratorItems: []duroxide.WorkItem{duroxide.TimerFiredItem{Instance: inst, ExecutionID: 1, ID: 3, FireAtMs: fireAt}},
		Metadata:          duroxide.ExecutionMetadata{Status: hptr(duroxide.StatusRunning), OrchestrationName: hptr("Order"), OrchestrationVersion: hptr("1.0.0")},
	}))
	check("02-turn-scheduled")

	// 3. A worker runs the activity and reports its result.
	h.clock.advance(time.Second)
	work, err := p.FetchWorkItem(ctx, hLock, 0, nil, duroxide.DefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, work)
	require.NoError(t, p.AckWorkItem(ctx, work.LockToken, duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: `"receipt-7"`}))
	check("03-activity-completed")

	// 4. After the timer fired, the last turn sees both completions and
	// completes the instance.
	h.clock.advance(time.Minute)
	item = mustFetchOrch(t, p, inst)
	require.Len(t, item.Messages, 2, "the activity's result and the fired timer")
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1,
		HistoryDelta: []duroxide.Event{
			ev(6, hptr(uint64(2)), duroxide.ActivityCompleted{Result: `"receipt-7"`}),
			ev(7, hptr(uint64(3)), duroxide.TimerFired{FireAtMs: fireAt}),
			ev(8, nil, duroxide.OrchestrationCompleted{Output: `"done"`}),
		},
		Metadata: duroxide.ExecutionMetadata{Status: hptr(duroxide.StatusCompleted), Output: hptr(`"done"`), OrchestrationName: hptr("Order"), OrchestrationVersion: hptr("1.0.0")},
	}))
	check("04-completed")
}

// volatileFields are the service's system properties: they change with
// every write or server and say nothing about the layout.
var volatileFields = []string{"_etag", "_ts", "_rid", "_self", "_attachments", "_lsn"}

// uuidPattern matches the random ids (queue documents, lock tokens).
var uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// normalizeDocuments drops the system properties, replaces lock tokens by
// "<lock-token>", enqueueOrder by its rank in the file ("<order-N>": its
// value is per process, only the order of messages matters) and every
// other random UUID by "<uuid-N>" (numbered in order of appearance, so
// references between documents still show), and sorts the documents by
// type and id.
func normalizeDocuments(t *testing.T, docs []map[string]any) []map[string]any {
	t.Helper()
	var orders []float64
	for _, d := range docs {
		if o, ok := d["enqueueOrder"].(float64); ok {
			orders = append(orders, o)
		}
	}
	sort.Float64s(orders)
	for _, d := range docs {
		if o, ok := d["enqueueOrder"].(float64); ok {
			d["enqueueOrder"] = fmt.Sprintf("<order-%d>", sort.SearchFloat64s(orders, o)+1)
		}
		for _, f := range volatileFields {
			delete(d, f)
		}
		if tok, ok := d["lockToken"].(string); ok && tok != "" {
			d["lockToken"] = "<lock-token>"
		}
	}
	key := func(d map[string]any) string {
		id, _ := d["id"].(string)
		typ, _ := d["type"].(string)
		return typ + "\x00" + uuidPattern.ReplaceAllString(id, "<uuid>")
	}
	sort.SliceStable(docs, func(i, j int) bool { return key(docs[i]) < key(docs[j]) })
	b, err := json.Marshal(docs)
	require.NoError(t, err)
	seen := map[string]string{}
	s := uuidPattern.ReplaceAllStringFunc(string(b), func(u string) string {
		if _, ok := seen[u]; !ok {
			seen[u] = fmt.Sprintf("<uuid-%d>", len(seen)+1)
		}
		return seen[u]
	})
	var out []map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &out))
	return out
}

// compareGolden compares docs, indented, with the golden file at path, or
// writes it with -update.
func compareGolden(t *testing.T, path string, docs []map[string]any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(docs))
	if *updateGolden {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden file: run go test -run TestDocumentLayout -update . to write it")
	require.Equal(t, string(want), buf.String(), "the stored documents after %s differ from %s: if the change is meant, rerun with -update and add a migration note to the CHANGELOG", filepath.Base(path), path)
}
