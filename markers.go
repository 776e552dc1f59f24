package cdb

import "time"

// The lifetime of the orch_received markers a turn leaves for each
// cross-instance message it consumed (documents.go has their layout).

// receivedRetention is how long an orch_received marker is kept. A marker
// stops a late re-delivery of an outbox intent from enqueueing its message
// again; re-delivery is only attempted by a process that read the intent
// before its deletion — the acking process right after its commit, or a
// maintenance round (bounded by 4 × MaintenanceInterval) — which is far
// shorter than this. Older markers are removed by the instance's next turn.
const receivedRetention = time.Hour

// markerLifetime is how long after its createdAt (the consuming
// process's clock) a marker is removed by this process: the retention
// plus MaxClockSkew, so that a process whose clock runs ahead does not
// remove a marker before the retention has passed for its writer (a
// keyed client write retried within the hour must still meet it).
func (p *Provider) markerLifetime() time.Duration { return receivedRetention + p.skew() }
