package cosmostest

import (
	"math/rand"
	"sync"
	"time"
)

// Lagging replicas.
//
// The service writes to a quorum of a partition's four replicas and, under
// Session consistency, serves a read from any replica unless the read
// carries a session token: a replica that has not applied the token's LSN
// does not serve it. So a read without a token (or with an old one) may
// miss recent writes, while writes and their ETag checks always go to the
// primary. The emulators have one replica and never show this. With
// [Options].Lag the server does: every write request on a logical partition
// is remembered with an undo record, and a read or query may be served from
// the partition as it was a few writes ago, never older than its session
// token allows and never missing a write older than the lag window. A batch
// is one write, so no read sees half of one. The server core keeps the
// undo records (localcosmos.ReplicaPolicy); this file picks the replicas.

// LagOptions turn on the lagging-replica mode (see [Options].Lag).
type LagOptions struct {
	// Versions is how many of a logical partition's latest write requests
	// a read without a covering session token may miss. Default 3.
	Versions int
	// Window is how long a write can stay invisible: a write older than
	// Window (wall clock) has reached every replica. Default 2s.
	Window time.Duration
	// Seed seeds the choice of replica, so a failing run can be repeated
	// (given the same order of requests). Zero means 1.
	Seed int64
}

// lagPolicy is LagOptions as the core's localcosmos.ReplicaPolicy: a
// seeded uniform choice among the replicas a read may go to.
type lagPolicy struct {
	opts LagOptions
	mu   sync.Mutex // guards rnd
	rnd  *rand.Rand
}

func newLagPolicy(opts LagOptions) *lagPolicy {
	if opts.Versions <= 0 {
		opts.Versions = 3
	}
	if opts.Window <= 0 {
		opts.Window = 2 * time.Second
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	return &lagPolicy{opts: opts, rnd: rand.New(rand.NewSource(opts.Seed))} //nolint:gosec // test randomness, seeded on purpose
}

// Bounds implements localcosmos.ReplicaPolicy.
func (p *lagPolicy) Bounds() (int, time.Duration) { return p.opts.Versions, p.opts.Window }

// Behind implements localcosmos.ReplicaPolicy.
func (p *lagPolicy) Behind(n int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rnd.Intn(n + 1)
}
