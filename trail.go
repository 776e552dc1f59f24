package cdb

import (
	"context"
	"log/slog"
	"strings"
)

// The message trail: at slog.LevelDebug the provider logs every step that
// moves an orchestrator message between queue, lock and history — locked
// by a fetch, consumed by an ack, given back by an abandon or a release,
// put aside by a hold, deleted by the orphan rule — naming each message by
// its document id and a short form of its work item. A message that goes
// missing can then be followed from process to process in the logs; the
// chaos soak's workers write it with -log-level debug. Deleting a message
// nobody received is logged at Warn whatever the level.

// trailEnabled reports whether the trail is being written (it costs a
// decode per message, so callers check first).
func (p *Provider) trailEnabled() bool {
	return p.opts.Logger.Enabled(context.Background(), slog.LevelDebug)
}

// trail logs step for lk's messages at Debug.
func (p *Provider) trail(step string, lk *orchLock, attrs ...any) {
	if !p.trailEnabled() {
		return
	}
	p.opts.Logger.Debug(step, append([]any{"instance_id", lk.instance, "lock", lk.token, "messages", describeMessages(lk.messages)}, attrs...)...)
}

// describeMessages is "id=item" for each message, the item cut short.
func describeMessages(ms []*queueDoc) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		item := m.WorkItem
		if len(item) > 80 {
			item = item[:80] + "…"
		}
		parts[i] = m.ID + "=" + item
	}
	return strings.Join(parts, " ")
}

// logOrphans reports the orphan rule's outcome: deleted messages at Warn
// (they were never received by anyone), kept ones on the trail.
func (p *Provider) logOrphans(lk *orchLock, keep bool, dropped []string, err error) {
	if len(dropped) > 0 && err == nil {
		p.opts.Logger.Warn("deleted messages for an instance that never started (orphan rule)", "instance_id", lk.instance, "messages", dropped)
	}
	p.trail("orphan rule: lock given back", lk, "start_on_its_way", keep, "dropped", dropped)
}
