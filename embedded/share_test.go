package embedded

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// With JoinRunning, an Open that finds the directory in use connects to
// the store its owner serves: what one writes the other reads. The
// endpoint file is the owner's user's alone, names a key fresh for every
// Open, and goes with the owner's Close; a join then fails plainly.
func TestJoinRunningSharesTheOwnersStore(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	owner := open(t, &Options{DataDir: dir, Log: &bytes.Buffer{}})
	path := filepath.Join(dir, EndpointFile)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("endpoint file: %v, mode %v; want 0600", err, fi)
	}
	var log bytes.Buffer
	joined := open(t, &Options{DataDir: dir, JoinRunning: true, Log: &log})
	if !joined.Shared || joined.InProcess || !strings.Contains(log.String(), "serves from "+dir) {
		t.Fatalf("shared %v, in process %v, log %q", joined.Shared, joined.InProcess, log.String())
	}
	if strings.Contains(log.String(), joined.Config.Key) {
		t.Fatal("the log line shows the key")
	}
	must(t, durable.NewClient(joined.Provider).StartOrchestration(t.Context(), "from-joined", "Echo", "x"))
	if _, err := durable.NewClient(owner.Provider).Status(t.Context(), "from-joined"); err != nil {
		t.Fatalf("the owner does not see the joined process's start: %v", err)
	}
	must(t, joined.Close())

	key := owner.Config.Key
	must(t, owner.Close())
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("endpoint file after the owner's Close: %v", err)
	}
	again := open(t, &Options{DataDir: dir, Log: &bytes.Buffer{}})
	defer again.Close()
	if again.Config.Key == key {
		t.Fatal("a new Open reuses the last one's key")
	}
}

// A directory in use whose owner published no endpoint (a process still
// starting, or an older version) fails a join with ErrNotShared.
func TestJoinRunningWithoutAnEndpointFile(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	owner := open(t, &Options{DataDir: dir, Log: &bytes.Buffer{}})
	defer owner.Close()
	must(t, os.Remove(filepath.Join(dir, EndpointFile)))
	if _, err := Open(t.Context(), &Options{DataDir: dir, JoinRunning: true, Log: &bytes.Buffer{}}); !errors.Is(err, ErrNotShared) {
		t.Fatalf("join = %v, want ErrNotShared", err)
	}
}

// A joined store serves clients only: its owner, Exclusive, releases
// every lock when it restarts, so a runtime here would see the work it
// locked run twice. durable.Start refuses it with cdb.ErrClientOnly, and
// a fetch through it fails the same way, while client writes and reads
// go on working and the owner's runtime runs what they start.
func TestAJoinedStoreRefusesARuntime(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	owner := open(t, &Options{DataDir: dir, Log: &bytes.Buffer{}})
	defer owner.Close()
	joined := open(t, &Options{DataDir: dir, JoinRunning: true, Log: &bytes.Buffer{}})
	defer joined.Close()
	if rt, err := durable.Start(t.Context(), joined.Provider, durable.NewRegistry(), nil); !errors.Is(err, cdb.ErrClientOnly) {
		if rt != nil {
			_ = rt.Shutdown(t.Context())
		}
		t.Fatalf("durable.Start on a joined store: %v, want cdb.ErrClientOnly", err)
	}
	if _, err := joined.Provider.FetchWorkItem(t.Context(), time.Second, 0, nil, duroxide.AnyTag()); !errors.Is(err, cdb.ErrClientOnly) {
		t.Fatalf("fetch through a joined store: %v, want cdb.ErrClientOnly", err)
	}
	reg := durable.NewRegistry()
	must(t, reg.AddOrchestration("Echo", func(_ *durable.OrchestrationContext, in string) (string, error) { return in, nil }))
	rt, err := durable.Start(t.Context(), owner.Provider, reg, nil)
	must(t, err)
	defer rt.Shutdown(t.Context())
	c := durable.NewClient(joined.Provider)
	must(t, c.StartOrchestration(t.Context(), "joined-start", "Echo", "x"))
	st, err := c.WaitForOrchestration(t.Context(), "joined-start", durable.WaitOptions{Timeout: 30 * time.Second})
	must(t, err)
	if st.Output != "x" {
		t.Fatalf("output %q, want x", st.Output)
	}
}
