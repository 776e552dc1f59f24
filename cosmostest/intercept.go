package cosmostest

import (
	"net/http"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/localcosmos"
)

// interceptor is the server core's hook into this package: every request
// waits the added latency (latency.go), then meets the first matching
// fault (faults.go).
type interceptor struct{ s *Server }

// Intercept implements localcosmos.Interceptor.
func (h interceptor) Intercept(op Op, r *http.Request) localcosmos.Interception {
	s := h.s
	if !s.sleepLatency(r) {
		return localcosmos.Interception{Drop: true}
	}
	f := s.takeFault(op, r)
	if f == nil {
		return localcosmos.Interception{}
	}
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return localcosmos.Interception{Abandon: true}
		case <-s.done:
			t.Stop()
			return localcosmos.Interception{Drop: true}
		}
	}
	switch {
	case f.Drop == DropBeforeApply:
		return localcosmos.Interception{Drop: true}
	case f.Status != 0:
		return localcosmos.Interception{Refuse: faultRefusal(f), AfterApply: f.ApplyFirst}
	case f.Drop == DropAfterApply:
		return localcosmos.Interception{Drop: true, AfterApply: true}
	}
	return localcosmos.Interception{}
}

// faultRefusal is the answer of a fault with a Status. A 429 without
// x-ms-retry-after-ms gets "x-ms-retry-after-ms: 1", since the service
// always sends one.
func faultRefusal(f *Fault) *localcosmos.Refusal {
	h := map[string]string{}
	for k, v := range f.Headers {
		h[k] = v
	}
	if f.Status == http.StatusTooManyRequests {
		has := false
		for k := range h {
			has = has || strings.EqualFold(k, "x-ms-retry-after-ms")
		}
		if !has {
			h["x-ms-retry-after-ms"] = "1"
		}
	}
	return &localcosmos.Refusal{Status: f.Status, SubStatus: f.SubStatus, Headers: h}
}
