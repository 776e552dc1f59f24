package cosmostest

import (
	"math/rand/v2"
	"net/http"
	"time"
)

// SetLatency adds a delay to every request, drawn uniformly from
// [lo, hi] (hi below lo is taken as lo), before faults apply; zero
// durations remove it. It simulates a distant or loaded service.
func (s *Server) SetLatency(lo, hi time.Duration) {
	if lo <= 0 && hi <= 0 {
		s.latency.Store(nil)
		return
	}
	lo = maxDuration(lo, 0)
	s.latency.Store(&[2]time.Duration{lo, maxDuration(hi, lo)})
}

// Latency returns the range set by SetLatency (zeros when none).
func (s *Server) Latency() (lo, hi time.Duration) {
	if l := s.latency.Load(); l != nil {
		return l[0], l[1]
	}
	return 0, 0
}

func maxDuration(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

// sleepLatency waits the added latency. It reports false when the server
// closed meanwhile (the connection should be closed); a client that went
// away ends the wait early.
func (s *Server) sleepLatency(r *http.Request) bool {
	lo, hi := s.Latency()
	if hi <= 0 {
		return true
	}
	d := lo
	if hi > lo {
		d += rand.N(hi - lo + 1)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	case <-s.done:
		return false
	}
	return true
}
