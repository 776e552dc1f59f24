package durabletest

import (
	"sync"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/duroxide/providertest"
	"github.com/duroxide-go/cdb/payload"
)

// WithCodecs returns a factory whose providers are f's wrapped by
// payload.Wrap with codecs, so that the suites run with every payload
// encoded in the store. The hooks that need the store itself
// (CorruptInstanceHistory, MaxAttemptCount) get f's provider.
func WithCodecs(f providertest.Factory, codecs ...payload.Codec) providertest.Factory {
	return &codecFactory{f: f, codecs: codecs}
}

type codecFactory struct {
	f      providertest.Factory
	codecs []payload.Codec
	inner  sync.Map // wrapped provider -> f's provider
}

func (c *codecFactory) NewProvider(t *testing.T) duroxide.Provider {
	inner := c.f.NewProvider(t)
	w, err := payload.Wrap(inner, c.codecs...)
	if err != nil {
		t.Fatalf("payload.Wrap: %v", err)
	}
	c.inner.Store(w, inner)
	return w
}

func (c *codecFactory) unwrap(p duroxide.Provider) duroxide.Provider {
	if inner, ok := c.inner.Load(p); ok {
		return inner.(duroxide.Provider)
	}
	return p
}

func (c *codecFactory) LockTimeout() time.Duration        { return c.f.LockTimeout() }
func (c *codecFactory) ShortPollThreshold() time.Duration { return c.f.ShortPollThreshold() }

func (c *codecFactory) CorruptInstanceHistory(t *testing.T, p duroxide.Provider, instance string) {
	c.f.CorruptInstanceHistory(t, c.unwrap(p), instance)
}

func (c *codecFactory) MaxAttemptCount(t *testing.T, p duroxide.Provider, instance string) uint32 {
	return c.f.MaxAttemptCount(t, c.unwrap(p), instance)
}

// SupportsLongPolling is f's answer (false when f does not say).
func (c *codecFactory) SupportsLongPolling() bool {
	lp, ok := c.f.(providertest.LongPoller)
	return ok && lp.SupportsLongPolling()
}

// CodecModules are the modules that run under WithCodecs on every
// provider: each payload kind (inputs, results, events, queue messages,
// KV, custom status, outputs) and each lifecycle path (continue-as-new,
// children, suspend and resume, cancel, delete, restart, rewind, signal-
// with-start) through the codecs.
var CodecModules = []string{
	"e2e_samples", "cancellation_tests", "queue_event_tests", "custom_status_tests", "continue_as_new_tests",
	"kv_store_tests", "lifecycle_tests", "api_edge_tests", "signal_with_start_tests", "update_tests",
	"deletion_stray_tests", "sub_orchestration_routing_tests", "operations_tests", "poison_message_tests",
	"recovery_tests", "timer_tests",
}
