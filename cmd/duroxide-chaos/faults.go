package main

import (
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/cosmostest"
)

// driverAppID is put in the User-Agent of the driver's requests. Faults
// hit them like any other (the driver is a client, and clients meet the
// same 503s and timeouts); the tag only lets the report count them apart.
const driverAppID = "duroxide-chaos-driver"

// faultKind is one kind of disturbance the driver injects.
type faultKind struct {
	Name string
	// Spec is the fault (nil for latency). Its Op and WritesOnly are
	// replaced at injection by one fault per operation of ops.
	Spec *cosmostest.FaultSpec
	// Writes narrows the kind to writes (an ambiguous outcome only means
	// something for a write).
	Writes bool
	// Latency, if set, is added to every request instead.
	Latency [2]time.Duration
}

// Operations a fault window targets: every call kind the provider makes.
// Lock renewals and releases are patches (and batches for orchestration
// locks), acks are batches, client calls are creates (enqueue) and reads
// and queries (status).
var (
	writeOps = []cosmostest.Op{cosmostest.OpCreateItem, cosmostest.OpUpsertItem, cosmostest.OpReplaceItem,
		cosmostest.OpDeleteItem, cosmostest.OpPatchItem, cosmostest.OpBatch}
	allOps = append([]cosmostest.Op{cosmostest.OpReadItem, cosmostest.OpQuery}, writeOps...)
)

// retryAfter20ms is the 429 hint of the throttling kinds.
var retryAfter20ms = map[string]string{"x-ms-retry-after-ms": "20"}

// faultKinds are every kind of fault the run injects, in turn at random:
// scattered faults (a share of requests) and bursts (nearly every request
// for the window), before and after the server applied the request.
var faultKinds = []faultKind{
	{Name: "throttle_429", Spec: &cosmostest.FaultSpec{Status: http.StatusTooManyRequests, Probability: 0.3, Headers: retryAfter20ms}},
	{Name: "write_503", Writes: true, Spec: &cosmostest.FaultSpec{Status: http.StatusServiceUnavailable, Probability: 0.2}},
	{Name: "write_408", Writes: true, Spec: &cosmostest.FaultSpec{Status: http.StatusRequestTimeout, Probability: 0.2}},
	{Name: "applied_then_503", Writes: true, Spec: &cosmostest.FaultSpec{Status: http.StatusServiceUnavailable, ApplyFirst: true, Probability: 0.2}},
	{Name: "applied_then_408", Writes: true, Spec: &cosmostest.FaultSpec{Status: http.StatusRequestTimeout, ApplyFirst: true, Probability: 0.2}},
	{Name: "drop_before_apply", Spec: &cosmostest.FaultSpec{Drop: "before", Probability: 0.1}},
	{Name: "drop_after_apply", Writes: true, Spec: &cosmostest.FaultSpec{Drop: "after", Probability: 0.15}},
	{Name: "burst_429", Spec: &cosmostest.FaultSpec{Status: http.StatusTooManyRequests, Probability: 0.9, Headers: retryAfter20ms}},
	{Name: "burst_503", Spec: &cosmostest.FaultSpec{Status: http.StatusServiceUnavailable, Probability: 0.7}},
	{Name: "burst_408", Spec: &cosmostest.FaultSpec{Status: http.StatusRequestTimeout, Probability: 0.7}},
	{Name: "burst_reset", Spec: &cosmostest.FaultSpec{Drop: "before", Probability: 0.7}},
	{Name: "burst_applied_then_503", Writes: true, Spec: &cosmostest.FaultSpec{Status: http.StatusServiceUnavailable, ApplyFirst: true, Probability: 0.7}},
	{Name: "burst_applied_then_408", Writes: true, Spec: &cosmostest.FaultSpec{Status: http.StatusRequestTimeout, ApplyFirst: true, Probability: 0.7}},
	{Name: "burst_reset_after_apply", Writes: true, Spec: &cosmostest.FaultSpec{Drop: "after", Probability: 0.7}},
	{Name: "latency", Latency: [2]time.Duration{20 * time.Millisecond, 150 * time.Millisecond}},
}

// appliesFirst reports whether kind answers an error after the server
// applied the request (an ambiguous outcome).
func (k faultKind) appliesFirst() bool {
	return k.Spec != nil && (k.Spec.ApplyFirst || k.Spec.Drop == "after")
}

// ops is the operations kind may target.
func (k faultKind) ops() []cosmostest.Op {
	if k.Writes {
		return writeOps
	}
	return allOps
}

// inject applies kind at srv, to every operation it may target or (with
// narrow) to one of them picked with rng, and returns the function that
// removes it. hit is called for every request the fault applies to, with
// its operation and whether the driver (the client) sent it.
func inject(srv *cosmostest.Server, kind faultKind, narrow bool, rng *rand.Rand, hit func(op cosmostest.Op, client bool)) (target string, remove func(), err error) {
	if kind.Spec == nil {
		srv.SetLatency(kind.Latency[0], kind.Latency[1])
		return "all", func() { srv.SetLatency(0, 0) }, nil
	}
	ops, target := kind.ops(), "all"
	if narrow {
		op := ops[rng.IntN(len(ops))]
		ops, target = []cosmostest.Op{op}, string(op)
	}
	removes := make([]func(), 0, len(ops))
	for _, op := range ops {
		spec := *kind.Spec
		spec.Op, spec.WritesOnly = op, false
		f, err := spec.Fault()
		if err != nil {
			for _, r := range removes {
				r()
			}
			return "", nil, err
		}
		match := f.Match
		f.Match = func(r *http.Request) bool {
			if match != nil && !match(r) {
				return false
			}
			hit(op, strings.Contains(r.Header.Get("User-Agent"), driverAppID))
			return true
		}
		removes = append(removes, srv.InjectFault(f))
	}
	return target, func() {
		for _, r := range removes {
			r()
		}
	}, nil
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
