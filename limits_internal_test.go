package cdb

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
	"github.com/duroxide-go/cdb/internal/limits"
)

// TestStoreLimitEstimatesBoundRealDocuments: memprovider refuses by
// limits.DocBytes estimates, so an estimate must never be below the
// document this provider really writes (or memprovider would accept what
// Cosmos DB refuses), and should not be far above it. Checked with the
// inputs that escape worst: ids and payloads of quotes, HTML characters
// (encoding/json writes '<' as 6 bytes), control characters and unicode.
func TestStoreLimitEstimatesBoundRealDocuments(t *testing.T) {
	now := time.Now()
	p := &Provider{}
	payloads := map[string]string{
		"plain":   strings.Repeat("x", 100_000),
		"quotes":  strings.Repeat(`"`, 100_000),
		"html":    strings.Repeat("<&>", 30_000),
		"control": strings.Repeat("\x01\n", 50_000),
		"unicode": strings.Repeat("日\u2028", 30_000),
	}
	ids := map[string]string{
		"short":                   "i",
		"html":                    strings.Repeat("<", 2048),
		"html-fits-a-document-id": strings.Repeat("<", 180),
		"escapes":                 strings.Repeat(`"/\#?`, 400),
		"unicode":                 strings.Repeat("日", 682),
	}
	for idName, inst := range ids {
		for pName, payload := range payloads {
			name := idName + "/" + pName
			session := inst + payload[:100]
			act := duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 7, Name: "A", Input: payload, SessionID: &session, Tag: &session}
			actJSON, err := duroxide.MarshalWorkItem(act)
			require.NoError(t, err)
			w, err := p.workerDoc(workerItemID(inst, 1, 7), act, now)
			require.NoError(t, err)
			w.TraceParent = "00-" + strings.Repeat("a", 32) + "-" + strings.Repeat("b", 16) + "-01"
			fields := []string{inst, string(actJSON), session, session}
			requireBound(t, name+"/worker", mustJSON(w), limits.DocBytes(fields...))

			lk := &orchLock{instance: "<" + inst, token: "o.x." + uuid.NewString()}
			in := p.intent(lk, 1, 3, w, now)
			requireBound(t, name+"/outbox", mustJSON(in), limits.DocBytes(lk.instance, inst, limits.Nested(fields...)))

			ev := duroxide.Event{EventID: 9, InstanceID: inst, ExecutionID: 1, TimestampMs: 1, DuroxideVersion: "0.1.31",
				Kind: duroxide.ActivityScheduled{Name: "A", Input: payload}}
			evJSON, err := json.Marshal(&ev)
			require.NoError(t, err)
			h := historyDoc{ID: historyDocID(inst, 1, 9), InstanceID: inst, Type: docHistory, ExecutionID: 1, EventID: 9, EventData: string(evJSON)}
			requireBound(t, name+"/history", mustJSON(h), limits.DocBytes(inst, string(evJSON)))
		}
	}
}

func requireBound(t *testing.T, what string, doc []byte, estimate int) {
	t.Helper()
	require.GreaterOrEqual(t, estimate, len(doc), "%s: the estimate is below the real document", what)
	require.LessOrEqual(t, estimate-len(doc), 2*limits.FixedFieldBytes, "%s: the estimate is far above the real document", what)
}

// TestExportedLimitsMatchInternal: the exported constants are literals, so
// go doc shows their values; they must stay equal to the internal
// constants the provider enforces.
func TestExportedLimitsMatchInternal(t *testing.T) {
	require.Equal(t, limits.ReservedInstanceID, LeasePartition)
	require.Equal(t, limits.MaxDocBytes, MaxDocumentBytes)
	require.Equal(t, cosmos.MaxDocBytes, MaxDocumentBytes)
}
