package durable_test

import (
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable/durabletest"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
	"github.com/duroxide-go/cdb/payload"
)

// memFactory gives each test a fresh in-memory store
// (providertest.Factory, as memprovider's validation suite uses).
type memFactory struct{}

func (memFactory) NewProvider(*testing.T) duroxide.Provider { return memprovider.New() }
func (memFactory) LockTimeout() time.Duration               { return time.Second }
func (memFactory) ShortPollThreshold() time.Duration        { return 100 * time.Millisecond }

func (memFactory) MaxAttemptCount(_ *testing.T, p duroxide.Provider, instance string) uint32 {
	return p.(*memprovider.Provider).MaxAttemptCount(instance)
}

func (memFactory) CorruptInstanceHistory(_ *testing.T, p duroxide.Provider, instance string) {
	p.(*memprovider.Provider).CorruptHistory(instance)
}

// TestE2E runs duroxide's end-to-end samples and runtime behaviour tests
// on the in-memory provider; the Cosmos provider runs them from the root
// package.
func TestE2E(t *testing.T) {
	t.Run("memprovider", func(t *testing.T) {
		durabletest.Run(t, memFactory{})
	})
}

// TestE2ECodec runs the behaviour suites with every payload gzipped and
// encrypted in the store (payload.Wrap).
func TestE2ECodec(t *testing.T) {
	aes, err := payload.AESGCM(payload.Key{ID: "k1", Secret: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	durabletest.RunModules(t, durabletest.WithCodecs(memFactory{}, payload.Gzip(), aes), durabletest.CodecModules...)
}
