package durable_test

import (
	"flag"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable/durabletest"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
	"github.com/duroxide-go/cdb/payload"
	"github.com/duroxide-go/cdb/payload/filestore"
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

// TestE2ECodecLargePayloads runs the same suites with a claim-check last
// in the chain (gzip, AES-GCM, then payload/filestore with a 1-byte
// threshold): every payload the store holds is a reference to a file, so
// each lifecycle path reads its payloads back from outside the store.
func TestE2ECodecLargePayloads(t *testing.T) {
	aes, err := payload.AESGCM(payload.Key{ID: "k1", Secret: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := filestore.New(dir, &filestore.Options{Threshold: 1})
	if err != nil {
		t.Fatal(err)
	}
	durabletest.RunModules(t, durabletest.WithCodecs(memFactory{}, payload.Gzip(), aes, files), durabletest.CodecModules...)
	// The instances the suites did not delete keep their payload files: a
	// chain that never reached the claim-check would leave none.
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	if n == 0 && !filtered() {
		t.Errorf("no payload file under %s: the suites' payloads did not go through the claim-check", dir)
	}
	t.Logf("%d payload files", n)
}

// filtered reports whether -run selects subtests (a pattern with a
// "/"), so a check over what a whole suite leaves behind may have
// nothing to count.
func filtered() bool {
	f := flag.Lookup("test.run")
	return f != nil && strings.Contains(f.Value.String(), "/")
}
