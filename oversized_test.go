package cdb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// recordHandler keeps the records logged at warn level and above.
type recordHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *recordHandler) WithGroup(string) slog.Handler                { return h }

func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

// errorsFor returns the error-level records naming instance, with their
// "error" attribute.
func (h *recordHandler) errorsFor(instance string) (errs []error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		var inst string
		var err error
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "instance_id":
				inst = a.Value.String()
			case "error":
				err, _ = a.Value.Any().(error)
			}
			return true
		})
		if r.Level >= slog.LevelError && inst == instance {
			errs = append(errs, err)
		}
	}
	return errs
}

// padInstanceDocument sets a padding field on instance's document so
// that its body is size bytes (what the service's 2 MB limit counts),
// written directly: "by any route" — an older
// version, another client, an operator's edit.
func padInstanceDocument(t *testing.T, h *harness, instance string, size int) {
	t.Helper()
	set := func(pad string) int {
		n := 0
		require.NoError(t, h.srv.UpdateDocuments(h.db, h.coll, func(doc map[string]any) bool {
			if doc["type"] == "instance" && doc["instanceId"] == instance {
				if pad == "" {
					delete(doc, "padding")
				} else {
					doc["padding"] = pad
				}
			}
			return true
		}))
		for _, d := range h.docsWhere("instance", instance) {
			for _, k := range []string{"_rid", "_self", "_etag", "_attachments", "_ts"} {
				delete(d, k) // the service's limit is on the body
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			require.NoError(t, enc.Encode(d))
			n = buf.Len() - 1 // the encoder's newline
		}
		return n
	}
	if size == 0 {
		set("")
		return
	}
	base := set("x")
	require.Equal(t, size, set(strings.Repeat("x", size-base+1)), "the padded document's size")
}

// An instance document at the service's 2 MB limit (reached by any route)
// makes every lock batch of the instance fail with 413: the patch that
// sets the lock would make it larger. The refusal is permanent, so the
// fetch must not retry it on every poll, silently: it is logged once, at
// error level, with the instance and a cause of kind ErrTooLarge; the
// instance is left alone for a long while; the other instances are
// fetched meanwhile; and nothing is lost: once the document is small
// again the instance's message comes, its attempt not counted.
func TestOversizedInstanceDocumentIsReportedOnceAndKept(t *testing.T) {
	t.Parallel()
	const inst = "oversized"
	h := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	createHInstance(t, h.p, inst)
	var batches atomic.Int32
	hooks := &testhooks.Hooks{Before: func(_ context.Context, c testhooks.Call) error {
		if c.Op == cdb.OpBatch && c.PartitionKey == inst {
			batches.Add(1)
		}
		return nil
	}}
	logs := &recordHandler{}
	p := h.openWith(testhooks.Seam{Cosmos: hooks, Now: h.clock.now}, cdb.Options{Logger: slog.New(logs)})
	padInstanceDocument(t, h, inst, 2*1024*1024-16)
	event := duroxide.ExternalRaisedItem{Instance: inst, Name: "e", Data: "kept"}
	require.NoError(t, p.EnqueueForOrchestrator(ctx, event, 0))
	require.NoError(t, p.EnqueueForOrchestrator(ctx, hStart("other"), 0))

	var others int
	for range 20 {
		item, err := p.FetchOrchestrationItem(ctx, hLock, 0, nil)
		require.NoError(t, err)
		if item != nil {
			require.Equal(t, "other", item.Instance, "the oversized instance cannot be locked")
			require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
				ExecutionID: 1, HistoryDelta: []duroxide.Event{hStarted("other", "HOrch")}, Metadata: hRunning("HOrch")}))
			others++
		}
	}
	require.Equal(t, 1, others, "the other instance is fetched meanwhile")
	require.Equal(t, int32(1), batches.Load(), "one lock batch tried, not one per poll")
	errs := logs.errorsFor(inst)
	require.Len(t, errs, 1, "the refusal is logged once, at error level, with the instance")
	require.ErrorIs(t, errs[0], duroxide.ErrTooLarge)
	require.False(t, duroxide.IsRetryable(errs[0]), "%v", errs[0])

	// Still refused after the pause: tried again, not logged again.
	h.clock.advance(cdb.TooLargePause + hLock)
	item, err := p.FetchOrchestrationItem(ctx, hLock, 0, nil)
	require.NoError(t, err)
	require.Nil(t, item)
	require.Equal(t, int32(2), batches.Load(), "tried again after the pause")
	require.Len(t, logs.errorsFor(inst), 1, "logged once")

	// An operator shrinks the document: the message was kept.
	padInstanceDocument(t, h, inst, 0)
	h.clock.advance(cdb.TooLargePause + hLock)
	item, err = p.FetchOrchestrationItem(ctx, hLock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item)
	require.Equal(t, []duroxide.WorkItem{event}, item.Messages)
	require.Equal(t, uint32(1), item.AttemptCount, "the refused locks counted no attempt")
}
