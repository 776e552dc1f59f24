package main

import (
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/cosmostest"
)

// driverAppID is put in the User-Agent of the driver's requests, so the
// injected faults spare them: the driver starts instances and raises
// events, and its requests are not what is under test.
const driverAppID = "duroxide-chaos-driver"

// faultKind is one kind of disturbance the driver injects.
type faultKind struct {
	Name string
	// Spec is the fault (nil for latency).
	Spec *cosmostest.FaultSpec
	// Latency, if set, is added to every request instead.
	Latency [2]time.Duration
}

// faultKinds are every kind of fault the run injects, in turn at random.
var faultKinds = []faultKind{
	{Name: "throttle_429", Spec: &cosmostest.FaultSpec{Status: http.StatusTooManyRequests, Probability: 0.3, Headers: map[string]string{"x-ms-retry-after-ms": "20"}}},
	{Name: "write_503", Spec: &cosmostest.FaultSpec{WritesOnly: true, Status: http.StatusServiceUnavailable, Probability: 0.2}},
	{Name: "write_408", Spec: &cosmostest.FaultSpec{WritesOnly: true, Status: http.StatusRequestTimeout, Probability: 0.2}},
	{Name: "applied_then_503", Spec: &cosmostest.FaultSpec{WritesOnly: true, Status: http.StatusServiceUnavailable, ApplyFirst: true, Probability: 0.2}},
	{Name: "applied_then_408", Spec: &cosmostest.FaultSpec{WritesOnly: true, Status: http.StatusRequestTimeout, ApplyFirst: true, Probability: 0.2}},
	{Name: "drop_before_apply", Spec: &cosmostest.FaultSpec{Drop: "before", Probability: 0.1}},
	{Name: "drop_after_apply", Spec: &cosmostest.FaultSpec{WritesOnly: true, Drop: "after", Probability: 0.15}},
	{Name: "latency", Latency: [2]time.Duration{20 * time.Millisecond, 150 * time.Millisecond}},
}

// inject applies kind at srv and returns the function that removes it;
// hit is called for every request the fault applies to.
func inject(srv *cosmostest.Server, kind faultKind, hit func()) (remove func(), err error) {
	if kind.Spec == nil {
		srv.SetLatency(kind.Latency[0], kind.Latency[1])
		return func() { srv.SetLatency(0, 0) }, nil
	}
	f, err := kind.Spec.Fault()
	if err != nil {
		return nil, err
	}
	match := f.Match
	f.Match = func(r *http.Request) bool {
		if strings.Contains(r.Header.Get("User-Agent"), driverAppID) {
			return false
		}
		if match == nil || match(r) {
			hit()
			return true
		}
		return false
	}
	return srv.InjectFault(f), nil
}

// pickFault picks the next kind: each kind once in a random order, then
// again, so a short run still covers every kind.
type faultPicker struct {
	rng  *rand.Rand
	left []int
}

func (p *faultPicker) next() faultKind {
	if len(p.left) == 0 {
		p.left = p.rng.Perm(len(faultKinds))
	}
	k := faultKinds[p.left[0]]
	p.left = p.left[1:]
	return k
}
