package cdb_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// TestDiscoveryWrapDeliversOnce: a discovery scan that resumes an older
// scan, reaches its end and starts over within one fetch reads the
// messages after the resume point twice. A message read twice must still
// be locked and delivered once: the chaos soak saw a keyed raise recorded
// twice in one turn's history this way ("delivered 2 times").
func TestDiscoveryWrapDeliversOnce(t *testing.T) {
	t.Parallel()
	for name, msg := range map[string]func(inst string) duroxide.WorkItem{
		"raise": func(inst string) duroxide.WorkItem {
			return duroxide.ExternalRaisedItem{Instance: inst, Name: "go", Data: `"ev"`}
		},
		"enqueue": func(inst string) duroxide.WorkItem {
			return duroxide.QueueMessageItem{Instance: inst, Name: "inbox", Data: `"m"`}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, cdb.Options{DiscoveryPageSize: 2}, withoutLag())
			ctx := t.Context()
			const target, other = "dw-target", "dw-other"
			createHInstance(t, h.p, target)
			// Two messages of another instance fill the first discovery
			// page, so the scan stops after them and the next fetch
			// resumes there.
			require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(other), 0))
			require.NoError(t, h.p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: other, Name: "x", Data: `"1"`}, 0))
			require.NoError(t, h.p.EnqueueForInstance(ctx, msg(target), "key-1"))
			first := mustFetchOrch(t, h.p, other)
			require.Len(t, first.Messages, 2)
			// The resumed scan reads the message and ends; the new scan
			// it starts (the other instance's messages are locked) reads
			// it again.
			item := mustFetchOrch(t, h.p, target)
			require.Equal(t, []duroxide.WorkItem{msg(target)}, item.Messages, "the message is delivered once")
		})
	}
}

// TestAResumedDiscoveryKeepsAnInstancesMessagesInOrder: a discovery scan
// that resumes where the previous fetch stopped shows no document that
// sorts before that point, however recent (cosmos.Scan): an instance's
// older message can sit there while its newer one is in the resumed page.
// The fetch that takes the instance must take its messages oldest first,
// not the resumed page's alone. The chaos soak's suspend-burst plan saw a
// resumed instance receive its 140th message before its 124th so.
func TestAResumedDiscoveryKeepsAnInstancesMessagesInOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	const inst, other = "resumed-order", "resumed-other"
	createHInstance(t, h.p, inst)
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: inst, Name: "tick", Data: `"t"`}, 0))
	held := mustFetchOrch(t, h.p, inst) // a turn in flight: the instance is busy
	first := duroxide.QueueMessageItem{Instance: inst, Name: "inbox", Data: `"first"`}
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, first, 0))
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, hStart(other), 0))
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, duroxide.ExternalRaisedItem{Instance: other, Name: "x", Data: `"1"`}, 0))

	// A process whose discovery reads two rows a fetch: the instance's
	// first message and the other's start. The instance is busy, so it
	// takes the other instance; its scan stops after those two rows.
	h.clock.advance(time.Second) // the manual clock is behind the writers'
	d := h.openWith(testhooks.Seam{Now: h.clock.now}, cdb.Options{DiscoveryPageSize: 2, ScanPages: 1})
	require.NotNil(t, mustFetchOrch(t, d, other))
	require.NoError(t, h.p.AckOrchestrationItem(ctx, held.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1, Metadata: hRunning("HOrch")}))
	second := duroxide.QueueMessageItem{Instance: inst, Name: "inbox", Data: `"second"`}
	require.NoError(t, h.p.EnqueueForOrchestrator(ctx, second, 0))

	h.clock.advance(time.Second) // past d's memory of the busy instance
	item := mustFetchOrch(t, d, inst)
	require.Equal(t, []duroxide.WorkItem{first, second}, item.Messages, "both messages, oldest first")
}
