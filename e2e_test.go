package cdb_test

import (
	"os"
	"testing"

	"github.com/duroxide-go/cdb/durable/durabletest"
	"github.com/duroxide-go/cdb/internal/testbackend"
	"github.com/duroxide-go/cdb/payload"
)

// TestE2E runs the runtime's end-to-end suite on the Go runtime over the
// Cosmos provider, once per backend (cosmostest-lagging included: the
// runtime must see read-your-writes through the provider's session
// tokens); every test gets its own container. The whole corpus (duroxide's
// samples and its runtime behaviour tests) runs on cosmostest; the other
// backends run the 35 samples, which exercise every kind of work, unless
// CDB_E2E_FULL=1 asks for the whole corpus there too (it multiplies the
// suite's time by the number of backends).
func TestE2E(t *testing.T) {
	t.Parallel()
	full := os.Getenv("CDB_E2E_FULL") == "1"
	testbackend.ForEachProvider(t, func(t *testing.T, b testbackend.Backend) {
		if b.Name == testbackend.NameCosmostest || full {
			durabletest.Run(t, newFactory(t, b))
			return
		}
		// The API edge's checks (existence, id reuse, idempotency keys)
		// read what other calls wrote, search pages across the store, and
		// the instance operations' state checks read what the runtime
		// wrote; a child's result must reach its parent's execution
		// whichever process completes it; race_replay is duroxide's
		// provider validation that needs a runtime (what a fetch sees
		// while a continue-as-new start is not yet visible); signal-with-
		// start and updates check existence and read the KV records the
		// runtime wrote: they run on every backend.
		durabletest.RunModules(t, newFactory(t, b), "e2e_samples", "api_edge_tests", "operations_tests", "lifecycle_tests", "sub_orchestration_routing_tests", "deletion_stray_tests", "race_replay",
			"signal_with_start_tests", "update_tests")
	})
}

// TestE2ECodec runs the behaviour suites named by durabletest.CodecModules
// with every payload gzipped and encrypted in the store (payload.Wrap),
// on cosmostest; the other backends add nothing a codec could change.
func TestE2ECodec(t *testing.T) {
	t.Parallel()
	aes, err := payload.AESGCM(payload.Key{ID: "k1", Secret: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	testbackend.ForNamed(t, testbackend.NameCosmostest, func(t *testing.T, b testbackend.Backend) {
		durabletest.RunModules(t, durabletest.WithCodecs(newFactory(t, b), payload.Gzip(), aes), durabletest.CodecModules...)
	})
}
