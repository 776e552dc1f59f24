package cdb

import "sync"

// claimSet keeps this process's dispatcher slots off each other's
// candidates. Discovery gives every concurrent fetch the same oldest-first
// list, so without it N slots all send their lock request for the first
// candidate, N−1 lose (412) and try the next: O(N²) lost round trips per
// burst, which made throughput fall as slots were added. A slot skips a
// candidate another slot of this process is locking right now; the
// store's ETag conditions still arbitrate between processes.
type claimSet struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// take claims key; false if another fetch of this process holds it.
func (s *claimSet) take(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, held := s.m[key]; held {
		return false
	}
	if s.m == nil {
		s.m = map[string]struct{}{}
	}
	s.m[key] = struct{}{}
	return true
}

// drop releases key.
func (s *claimSet) drop(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}
