package cdb_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
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
