package main

import (
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/duroxide"
)

// TestInjectHitsClientAndWorkerCalls: a fault window hits the driver's
// own calls like the workers' (the driver is a client, and clients meet
// the same faults), counted apart by sender and operation; narrowed to one
// operation it spares the others; removing it ends it.
func TestInjectHitsClientAndWorkerCalls(t *testing.T) {
	srv, err := cosmostest.NewServer(nil)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	open := func(appID string) *cdb.Provider {
		cfg := cdb.Config{Endpoint: srv.Endpoint(), Key: srv.Key(),
			ClientOptions: &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Telemetry: policy.TelemetryOptions{ApplicationID: appID}}}}
		p, err := cdb.New(t.Context(), cfg, &cdb.Options{MaintenanceInterval: -1})
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		return p
	}
	client, worker := open(driverAppID), open("")
	enqueue := func(p *cdb.Provider, inst string) error {
		return p.EnqueueForOrchestrator(t.Context(), duroxide.QueueMessageItem{Instance: inst, Name: queueName, Data: "x"}, 0)
	}

	var mu sync.Mutex
	hits := map[string]int{}
	count := func(op cosmostest.Op, fromClient bool) {
		mu.Lock()
		defer mu.Unlock()
		hits[string(op)+map[bool]string{true: "/client", false: "/worker"}[fromClient]]++
	}
	kind := faultKind{Name: "test_503", Writes: true, Spec: &cosmostest.FaultSpec{Status: http.StatusServiceUnavailable}}
	target, remove, err := inject(srv, kind, false, nil, count)
	require.NoError(t, err)
	require.Equal(t, "all", target)
	require.Error(t, enqueue(client, "a"))
	require.Error(t, enqueue(worker, "b"))
	mu.Lock()
	require.Equal(t, map[string]int{"CreateItem/client": 1, "CreateItem/worker": 1}, hits)
	mu.Unlock()
	remove()
	require.NoError(t, enqueue(client, "a"))

	// Narrowed: one write operation, picked at random; the others pass.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		target, remove, err = inject(srv, kind, true, rng, count)
		require.NoError(t, err)
		require.Contains(t, writeOps, cosmostest.Op(target))
		err = enqueue(client, "c")
		remove()
		if target == string(cosmostest.OpCreateItem) {
			require.Error(t, err)
		} else {
			require.NoError(t, err)
		}
	}
}

// TestFaultKindsAreValid: every kind converts to a fault on every
// operation it targets, and the plan has bursts and ambiguous kinds.
func TestFaultKindsAreValid(t *testing.T) {
	bursts, ambiguous := 0, 0
	for _, k := range faultKinds {
		if k.Spec == nil {
			continue
		}
		for _, op := range k.ops() {
			spec := *k.Spec
			spec.Op = op
			_, err := spec.Fault()
			require.NoError(t, err, "%s on %s", k.Name, op)
		}
		if k.Spec.Probability >= 0.7 {
			bursts++
		}
		if k.appliesFirst() {
			ambiguous++
			require.True(t, k.Writes, "%s: an ambiguous outcome is a write's", k.Name)
		}
	}
	require.GreaterOrEqual(t, bursts, 5)
	require.GreaterOrEqual(t, ambiguous, 5)
}
