package cdb_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// TestSuspendedHoldAndWakeSurviveTransientFaults: the batch that puts a
// suspended instance's messages aside, and the one that takes them back
// on resume, fail once, before or after the service applied them (a
// response lost). The fetch fails, nothing is delivered while suspended,
// and the resume then delivers every message once, in order, without the
// faults counting as attempts of the messages (at most the one attempt
// of a wake whose applied batch was lost).
func TestSuspendedHoldAndWakeSurviveTransientFaults(t *testing.T) {
	for _, afterApply := range []bool{false, true} {
		name := "before_apply"
		if afterApply {
			name = "after_apply"
		}
		t.Run(name, func(t *testing.T) {
			srv := cosmostest.New(t, nil)
			ctx := t.Context()
			var armed, batches atomic.Int32
			fail := func(c testhooks.Call) bool {
				return c.Op == cdb.OpBatch && c.PartitionKey == "s" && armed.Load() > 0 && batches.Add(1) == armed.Load()
			}
			hooks := &testhooks.Hooks{
				Before: func(_ context.Context, c testhooks.Call) error {
					if !afterApply && fail(c) {
						return errInjected
					}
					return nil
				},
				After: func(_ context.Context, c testhooks.Call, err error) error {
					if afterApply && err == nil && fail(c) {
						return errInjected
					}
					return err
				},
			}
			p := newFaultyProvider(t, srv, "suspend", hooks)
			const lock = 300 * time.Millisecond
			fetch := func() (*duroxide.OrchestrationItem, error) { return p.FetchOrchestrationItem(ctx, lock, 0, nil) }
			require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.StartOrchestrationItem{Instance: "s", Orchestration: "O", Input: "{}", Version: str("1.0.0"), ExecutionID: 1}, 0))
			it, err := fetch()
			require.NoError(t, err)
			require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, HistoryDelta: []duroxide.Event{started("s")},
				Metadata: duroxide.ExecutionMetadata{Status: str(duroxide.StatusRunning)}, Suspend: &duroxide.SuspendChange{Suspended: true, Reason: "r"}}))
			events := []duroxide.WorkItem{
				duroxide.ExternalRaisedItem{Instance: "s", Name: "e", Data: "1"},
				duroxide.ExternalRaisedItem{Instance: "s", Name: "e", Data: "2"},
			}
			for _, e := range events {
				require.NoError(t, p.EnqueueForOrchestrator(ctx, e, 0))
			}

			// The hold's batch (the fetch's second) fails once.
			batches.Store(0)
			armed.Store(2)
			_, err = fetch()
			require.Error(t, err)
			armed.Store(0)
			for deadline := time.Now().Add(3 * lock); time.Now().Before(deadline); {
				it, err := fetch()
				require.NoError(t, err)
				require.Nil(t, it, "a suspended instance's messages are not delivered")
			}

			// The wake's batch for the held messages fails once.
			resume := duroxide.ResumeInstanceItem{Instance: "s"}
			require.NoError(t, p.EnqueueForOrchestrator(ctx, resume, 0))
			batches.Store(0)
			armed.Store(2)
			_, err = fetch()
			require.Error(t, err)
			armed.Store(0)
			require.Eventually(t, func() bool {
				it, err = fetch()
				require.NoError(t, err)
				return it != nil
			}, 10*time.Second, 20*time.Millisecond)
			require.Equal(t, append(events, resume), it.Messages, "every message once, oldest first")
			if afterApply {
				require.LessOrEqual(t, it.AttemptCount, uint32(2))
			} else {
				require.Equal(t, uint32(1), it.AttemptCount)
			}
			require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Suspend: &duroxide.SuspendChange{}}))
			it, err = fetch()
			require.NoError(t, err)
			require.Nil(t, it, "nothing is left")
		})
	}
}
