package localcosmos

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// slowSync is a groupSync whose fsyncs block until released and are
// counted.
type slowSync struct {
	mu      sync.Mutex
	calls   int
	started chan struct{}
	release chan error
}

func newSlowSync(t *testing.T) (*groupSync, *slowSync) {
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	s := &slowSync{started: make(chan struct{}, 16), release: make(chan error)}
	g := newGroupSync("dir", osFile{f})
	g.sync = func(dataFile) error {
		s.mu.Lock()
		s.calls++
		s.mu.Unlock()
		s.started <- struct{}{}
		return <-s.release
	}
	return g, s
}

// waitAsync runs g.wait in a goroutine and returns its result channel.
func waitAsync(g *groupSync) chan error {
	ch := make(chan error, 1)
	go func() { ch <- g.wait() }()
	return ch
}

// Writers that append while an fsync is running share the next one: three
// writes, two fsyncs, and no writer returns before an fsync that started
// after its append has finished.
func TestGroupSyncSharesFsyncs(t *testing.T) {
	t.Parallel()
	g, s := newSlowSync(t)
	g.appended()
	a := waitAsync(g)
	<-s.started // a's fsync covers record 1 only
	g.appended()
	g.appended()
	b, c := waitAsync(g), waitAsync(g)
	select {
	case err := <-b:
		t.Fatalf("b returned (%v) before any fsync covering its record", err)
	case <-time.After(20 * time.Millisecond):
	}
	s.release <- nil
	if err := <-a; err != nil {
		t.Fatal(err)
	}
	<-s.started // one fsync for records 2 and 3
	s.release <- nil
	if err, err2 := <-b, <-c; err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	if s.calls != 2 {
		t.Errorf("%d fsyncs for three records appended around one fsync, want 2", s.calls)
	}
	// Nothing appended since: waiting needs no fsync.
	if err := g.wait(); err != nil || s.calls != 2 {
		t.Errorf("wait with everything synced: %v, %d fsyncs", err, s.calls)
	}
}

// A failed fsync fails every writer waiting for it, and every later wait.
func TestGroupSyncFailureIsSticky(t *testing.T) {
	t.Parallel()
	g, s := newSlowSync(t)
	g.appended()
	a := waitAsync(g)
	<-s.started
	boom := errors.New("disk gone")
	s.release <- boom
	if err := <-a; !errors.Is(err, boom) {
		t.Fatalf("wait = %v, want %v", err, boom)
	}
	g.appended()
	if err := g.wait(); !errors.Is(err, boom) {
		t.Fatalf("later wait = %v, want %v", err, boom)
	}
}

// A read does not answer with a write whose record is not on disk yet: it
// waits for that record's fsync, as the writer does.
func TestReadWaitsForTheFsyncOfWhatItSees(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &Options{DataDir: t.TempDir()})
	f.create(t, "a", "i1", "v", 1) // before the hook
	release := make(chan struct{})
	started := make(chan struct{}, 16)
	real := f.s.st.wal.sync
	f.s.st.wal.mu.Lock()
	f.s.st.wal.sync = func(file dataFile) error {
		started <- struct{}{}
		<-release
		return real(file)
	}
	f.s.st.wal.mu.Unlock()
	wrote := make(chan error, 1)
	go func() {
		_, err := f.ct.CreateItem(testCtx(t), pkOf("i1"), item("b", "i1"), nil)
		wrote <- err
	}()
	<-started // the write is applied and appended, its fsync is running
	read := make(chan error, 1)
	go func() {
		_, err := f.ct.ReadItem(testCtx(t), pkOf("i1"), "b", nil)
		read <- err
	}()
	select {
	case err := <-read:
		t.Fatalf("read answered (%v) while the write's record was not on disk", err)
	case err := <-wrote:
		t.Fatalf("write answered (%v) before its fsync finished", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if err := <-read; err != nil {
		t.Fatalf("read after the fsync: %v", err)
	}
}
