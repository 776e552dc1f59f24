package memprovider_test

import (
	"testing"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/duroxide/providertest"
	"github.com/duroxide-go/cdb/internal/memprovider"
)

// factory runs the validation suite against fresh memory providers with
// a 1s lock timeout, like duroxide's SQLite factory.
type factory struct {
	opts []memprovider.Option
}

func (f factory) NewProvider(*testing.T) duroxide.Provider { return memprovider.New(f.opts...) }
func (factory) LockTimeout() time.Duration                 { return time.Second }
func (factory) ShortPollThreshold() time.Duration          { return 100 * time.Millisecond }

func (factory) CorruptInstanceHistory(t *testing.T, p duroxide.Provider, instance string) {
	p.(*memprovider.Provider).CorruptHistory(instance)
}

func (factory) MaxAttemptCount(t *testing.T, p duroxide.Provider, instance string) uint32 {
	return p.(*memprovider.Provider).MaxAttemptCount(instance)
}

// longPollFactory builds providers with WithLongPolling and declares it,
// so the long-poll-only behaviours run too.
type longPollFactory struct{ factory }

func (longPollFactory) SupportsLongPolling() bool { return true }

func TestProviderValidation(t *testing.T) {
	providertest.Run(t, factory{})
}

func TestProviderValidationLongPolling(t *testing.T) {
	providertest.RunModules(t, longPollFactory{factory{opts: []memprovider.Option{memprovider.WithLongPolling()}}}, "long_polling")
}
