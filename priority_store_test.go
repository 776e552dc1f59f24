package cdb

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
	"github.com/duroxide-go/cdb/localcosmos"
)

// storeLevels records, per data-plane operation, the priority levels the
// server received (x-ms-cosmos-priority-level; "" when absent).
type storeLevels struct {
	mu sync.Mutex
	m  map[cosmostest.Op][]string
}

func recordLevels(srv *cosmostest.Server) *storeLevels {
	l := &storeLevels{m: map[cosmostest.Op][]string{}}
	srv.InjectFault(cosmostest.Fault{Match: func(r *http.Request) bool {
		op := localcosmos.RequestOp(r)
		if op != cosmostest.OpReadAccount && op != cosmostest.OpReadPartitionKeyRanges {
			l.mu.Lock()
			l.m[op] = append(l.m[op], r.Header.Get("x-ms-cosmos-priority-level"))
			l.mu.Unlock()
		}
		return false
	}})
	return l
}

func (l *storeLevels) take() map[cosmostest.Op][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.m
	l.m = map[cosmostest.Op][]string{}
	return m
}

// everyStoreOp sends one request of each data-plane kind the store has.
func everyStoreOp(t *testing.T, ctx context.Context, s *cosmos.Store, id string) {
	t.Helper()
	const part = "prio-store"
	_, err := s.Create(ctx, part, etDoc(part, id))
	require.NoError(t, err)
	_, _, err = s.Read(ctx, part, id)
	require.NoError(t, err)
	_, err = s.Upsert(ctx, part, etDoc(part, id), nil)
	require.NoError(t, err)
	_, err = s.Replace(ctx, part, id, etDoc(part, id), nil)
	require.NoError(t, err)
	var ops azcosmos.PatchOperations
	ops.AppendSet("/x", 1)
	_, _, err = s.Patch(ctx, part, id, ops, nil, false)
	require.NoError(t, err)
	_, err = s.Query(ctx, "SELECT * FROM c WHERE c.id = @id", cosmos.QueryParams{}.Add("@id", id), cosmos.QueryOptions{}, func([]byte) bool { return true })
	require.NoError(t, err)
	b := cosmos.NewBatch(part)
	b.Read(id)
	_, err = s.Execute(ctx, b, false)
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, part, id, nil))
}

// TestPriorityStoreSendsTheLevel: every kind of data-plane request the
// store sends carries Low when its context is marked Low, and no level
// when it is unmarked or marked High, or when the background level is
// High; a caller's hint outranks the mark. Seen failing before the
// store set PriorityLevel on its options: the Low requests carried none.
func TestPriorityStoreSendsTheLevel(t *testing.T) {
	t.Parallel()
	srv, s := etStore(t, RetryOptions{}, nil)
	s.SetCallerPriority(callerPriority)
	levels := recordLevels(srv)
	ctx := t.Context()
	kinds := []cosmostest.Op{cosmostest.OpCreateItem, cosmostest.OpReadItem, cosmostest.OpUpsertItem, cosmostest.OpReplaceItem,
		cosmostest.OpPatchItem, cosmostest.OpQuery, cosmostest.OpBatch, cosmostest.OpDeleteItem}
	requireLevel := func(what, want string) {
		t.Helper()
		got := levels.take()
		for _, op := range kinds {
			require.NotEmpty(t, got[op], "%s: no %s was sent", what, op)
			for _, l := range got[op] {
				require.Equal(t, want, l, "%s: %s", what, op)
			}
		}
	}

	everyStoreOp(t, ctx, s, "unmarked")
	requireLevel("unmarked", "")
	everyStoreOp(t, cosmos.WithPriority(ctx, cosmos.PriorityLow), s, "low")
	requireLevel("marked Low", "Low")
	everyStoreOp(t, cosmos.WithPriority(cosmos.WithPriority(ctx, cosmos.PriorityLow), cosmos.PriorityHigh), s, "high")
	requireLevel("Low, then High inside", "")
	everyStoreOp(t, duroxide.WithRequestPriority(cosmos.WithPriority(ctx, cosmos.PriorityLow), duroxide.PriorityHigh), s, "hint-high")
	requireLevel("marked Low, caller High", "")
	everyStoreOp(t, duroxide.WithRequestPriority(ctx, duroxide.PriorityLow), s, "hint-low")
	requireLevel("unmarked, caller Low", "Low")

	s.SetBackgroundPriority(azcosmos.PriorityLevelHigh)
	everyStoreOp(t, cosmos.WithPriority(ctx, cosmos.PriorityLow), s, "background-high")
	requireLevel("marked Low, background High", "")
}

// TestPriorityClientLevelStays: a client built with ClientOptions
// PriorityLevel High keeps it on the unmarked requests (the store sets
// no per-request level there) while the marked ones go Low: the way to
// run on an account whose default level was changed to Low.
func TestPriorityClientLevelStays(t *testing.T) {
	t.Parallel()
	high := azcosmos.PriorityLevelHigh
	srv, s := thStoreWith(t, RetryOptions{}, &azcosmos.ClientOptions{PriorityLevel: &high})
	levels := recordLevels(srv)
	ctx := t.Context()
	_, err := s.Create(ctx, "p", etDoc("p", "a"))
	require.NoError(t, err)
	_, err = s.Create(cosmos.WithPriority(ctx, cosmos.PriorityLow), "p", etDoc("p", "b"))
	require.NoError(t, err)
	require.Equal(t, []string{"High", "Low"}, levels.take()[cosmostest.OpCreateItem])
}
