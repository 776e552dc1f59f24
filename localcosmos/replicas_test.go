package localcosmos

import (
	randv1 "math/rand"
	"sync"
	"time"
)

// seededReplicas describes a ReplicaPolicy that picks replicas at random
// from a seed, as cosmostest's LagOptions do, so that two servers given
// the same description serve the same replicas for the same requests.
type seededReplicas struct {
	versions int
	window   time.Duration
	seed     int64
}

// fresh returns a new policy, its random source at the start of the seed.
func (r *seededReplicas) fresh() ReplicaPolicy {
	return &seededPolicy{r: *r, rnd: randv1.New(randv1.NewSource(r.seed))} //nolint:gosec // test randomness, seeded on purpose
}

type seededPolicy struct {
	r   seededReplicas
	mu  sync.Mutex // guards rnd
	rnd *randv1.Rand
}

func (p *seededPolicy) Bounds() (int, time.Duration) { return p.r.versions, p.r.window }

func (p *seededPolicy) Behind(n int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rnd.Intn(n + 1)
}
