package localcosmos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// simFS is a dataFS in memory that loses power at a chosen call: that
// call and every later one fail with errPowerLost, and reboot brings back
// what a real disk could hold after the power came back.
//
// The model is what POSIX promises, with ext4's ordering:
//
//   - Bytes written to a file are durable once an fsync or fdatasync of it
//     returns; until then they are in the page cache only.
//   - A name made in, renamed within or removed from a directory (a file or
//     a subdirectory) is durable once that directory is fsynced. Fsyncing
//     the file does not make its name durable, and a name the power loss
//     takes away takes the file or directory with it.
//   - At the power loss every file keeps its durable bytes. The file
//     written last also keeps a random-length prefix (possibly none, or
//     all) of the bytes appended to it since its last fsync: a write torn
//     at a random byte, and whatever unsynced writes it followed. Changes
//     that did not just append (a truncation, O_TRUNC) are lost whole.
//   - Every directory keeps its durable names plus a random-length prefix of
//     the changes made to it since its last fsync, in the order they were
//     made, as ext4's journal commits them; a rename is one change.
//
// A power loss at a write makes that write partly (the tear above); at any
// other call the call does not happen. The random choices come from the
// generator passed in, so a seed reproduces them.
type simFS struct {
	mu      sync.Mutex
	root    *simNode
	rng     *rand.Rand
	calls   int      // calls made (the index of the next one)
	crashAt int      // the call the power is lost at; -1: never
	off     bool     // the power is lost
	crashed string   // the call the power was lost at, for messages
	trace   []string // every call made, named
	after   *simNode
	last    *simNode // the file written last
	locks   map[string]bool
	boot    int           // bumped by reboot; handles of an older boot are dead
	changed chan struct{} // closed and replaced at every call
	hold    *syncHold     // the next fdatasync waits for release
}

// errPowerLost is what every call returns from the power loss on.
var errPowerLost = errors.New("simulated power loss")

// simNode is a file or a directory.
type simNode struct {
	dir     bool
	data    []byte              // file: contents
	synced  []byte              // file: durable contents
	names   map[string]*simNode // directory: entries
	durable map[string]*simNode // directory: entries as of its last fsync
	pending []simDirChange      // directory: changes since its last fsync
}

// simDirChange sets name to node (nil removes it), and removes from when
// it is set (a rename).
type simDirChange struct {
	name string
	node *simNode
	from string
}

// syncHold makes the next fdatasync wait: started is closed when it is
// called, and it goes ahead once release is closed.
type syncHold struct{ started, release chan struct{} }

func newDirNode() *simNode {
	return &simNode{dir: true, names: map[string]*simNode{}, durable: map[string]*simNode{}}
}

// newSimFS is an empty file system whose power is lost at call crashAt
// (-1: never), tearing and keeping what rng chooses.
func newSimFS(crashAt int, rng *rand.Rand) *simFS {
	return &simFS{root: newDirNode(), rng: rng, crashAt: crashAt, locks: map[string]bool{}, changed: make(chan struct{})}
}

// call runs one call of the file system as the power allows; what names
// it for messages. A write (partial) is made even at the power loss.
func (s *simFS) call(what string, partial bool, fn func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.calls
	s.calls++
	s.trace = append(s.trace, what)
	close(s.changed)
	s.changed = make(chan struct{})
	switch {
	case s.off:
		return errPowerLost
	case n == s.crashAt:
		if partial {
			_ = fn()
		}
		s.crashed = fmt.Sprintf("call %d: %s", n, what)
		s.powerOff()
		return errPowerLost
	}
	return fn()
}

// cut loses the power now (after the last call made).
func (s *simFS) cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.off {
		s.crashed = fmt.Sprintf("the end (after all %d calls)", s.calls)
		s.powerOff()
	}
}

// powerOff computes what survives (mu held).
func (s *simFS) powerOff() {
	s.off = true
	s.after = s.survivor(s.root, map[*simNode]*simNode{})
}

// survivor is what of n is on disk after the power loss.
func (s *simFS) survivor(n *simNode, seen map[*simNode]*simNode) *simNode {
	if m := seen[n]; m != nil {
		return m
	}
	if !n.dir {
		m := &simNode{synced: n.synced}
		if n == s.last && len(n.data) > len(n.synced) && bytes.HasPrefix(n.data, n.synced) {
			m.synced = n.data[:len(n.synced)+s.rng.IntN(len(n.data)-len(n.synced)+1)]
		}
		m.synced = bytes.Clone(m.synced)
		m.data = bytes.Clone(m.synced)
		seen[n] = m
		return m
	}
	names := make(map[string]*simNode, len(n.durable))
	for k, v := range n.durable {
		names[k] = v
	}
	for _, c := range n.pending[:s.rng.IntN(len(n.pending)+1)] {
		applyDirChange(names, c)
	}
	m := newDirNode()
	seen[n] = m
	for _, k := range sortedNames(names) { // in order: the generator's draws are reproducible
		m.names[k] = s.survivor(names[k], seen)
		m.durable[k] = m.names[k]
	}
	return m
}

func applyDirChange(names map[string]*simNode, c simDirChange) {
	if c.from != "" {
		delete(names, c.from)
	}
	if c.node == nil {
		delete(names, c.name)
	} else {
		names[c.name] = c.node
	}
}

func sortedNames(m map[string]*simNode) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// reboot brings the power back: what survived the loss (if it was lost)
// is the file system, no lock is held and no call will lose the power.
func (s *simFS) reboot() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off {
		s.root = s.after
	}
	s.off, s.crashAt, s.after, s.last = false, -1, nil, nil
	s.locks = map[string]bool{}
	s.boot++
}

// callCount is the number of calls made so far.
func (s *simFS) callCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// powerLost reports whether the power has been lost, and at which call.
func (s *simFS) powerLost() (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.off, s.crashed
}

// waitCalls returns once n calls have been made or the power is lost.
func (s *simFS) waitCalls(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		done, ch := s.calls >= n || s.off, s.changed
		s.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d file system calls: %w", n, ctx.Err())
		}
	}
}

// holdNextSync makes the next fdatasync wait until release is closed.
func (s *simFS) holdNextSync() *syncHold {
	h := &syncHold{started: make(chan struct{}), release: make(chan struct{})}
	s.mu.Lock()
	s.hold = h
	s.mu.Unlock()
	return h
}

// dropHold cancels a holdNextSync no fdatasync has taken.
func (s *simFS) dropHold() {
	s.mu.Lock()
	s.hold = nil
	s.mu.Unlock()
}

// lookup resolves the parent directory of path (mu held).
func (s *simFS) lookup(path string) (parent *simNode, base string, err error) {
	clean := filepath.Clean(path)
	if !filepath.IsAbs(clean) || clean == "/" {
		return nil, "", fmt.Errorf("simfs: path %q: %w", path, fs.ErrInvalid)
	}
	dir, base := filepath.Split(clean)
	parent = s.root
	for _, part := range strings.Split(strings.Trim(dir, "/"), "/") {
		if part == "" {
			continue
		}
		next := parent.names[part]
		if next == nil || !next.dir {
			return nil, "", &fs.PathError{Op: "lookup", Path: path, Err: fs.ErrNotExist}
		}
		parent = next
	}
	return parent, base, nil
}

// change changes a name of dir, not yet durably (mu held).
func (dir *simNode) change(c simDirChange) {
	applyDirChange(dir.names, c)
	dir.pending = append(dir.pending, c)
}

func (s *simFS) Mkdir(dir string) error {
	return s.call("mkdir "+dir, false, func() error {
		parent, base, err := s.lookup(dir)
		if err != nil {
			return err
		}
		if parent.names[base] != nil {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: fs.ErrExist}
		}
		parent.change(simDirChange{name: base, node: newDirNode()})
		return nil
	})
}

func (s *simFS) Lock(dir string) (dirLock, error) {
	err := s.call("lock "+dir, false, func() error {
		if s.locks[dir] {
			return fmt.Errorf("localcosmos: data directory %s is %w", dir, ErrDataDirInUse)
		}
		s.locks[dir] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &simLock{s: s, dir: dir, boot: s.boot}, nil
}

// simLock is a held lock of a simFS directory.
type simLock struct {
	s    *simFS
	dir  string
	boot int
}

func (l *simLock) Unlock() {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.boot == l.s.boot {
		delete(l.s.locks, l.dir)
	}
}

func (s *simFS) OpenFile(name string, flag int) (dataFile, error) {
	var f *simFile
	err := s.call("open "+filepath.Base(name), false, func() error {
		parent, base, err := s.lookup(name)
		if err != nil {
			return err
		}
		n := parent.names[base]
		switch {
		case n != nil && n.dir:
			return &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
		case n != nil && flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
			return &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
		case n == nil && flag&os.O_CREATE == 0:
			return &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		case n == nil:
			n = &simNode{}
			parent.change(simDirChange{name: base, node: n})
		}
		if flag&os.O_TRUNC != 0 {
			n.data = nil
		}
		f = &simFile{s: s, n: n, name: filepath.Base(name), appendOnly: flag&os.O_APPEND != 0, boot: s.boot}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (s *simFS) ReadFile(name string) ([]byte, error) {
	var data []byte
	err := s.call("read "+filepath.Base(name), false, func() error {
		parent, base, err := s.lookup(name)
		if err != nil {
			return err
		}
		n := parent.names[base]
		if n == nil || n.dir {
			return &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
		}
		data = bytes.Clone(n.data)
		return nil
	})
	return data, err
}

func (s *simFS) ReadDir(dir string) ([]string, error) {
	var names []string
	err := s.call("readdir "+dir, false, func() error {
		n, err := s.dirNode(dir)
		if err != nil {
			return err
		}
		names = sortedNames(n.names)
		return nil
	})
	return names, err
}

// dirNode is directory dir (mu held).
func (s *simFS) dirNode(dir string) (*simNode, error) {
	if filepath.Clean(dir) == "/" {
		return s.root, nil
	}
	parent, base, err := s.lookup(dir)
	if err != nil {
		return nil, err
	}
	n := parent.names[base]
	if n == nil || !n.dir {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: fs.ErrNotExist}
	}
	return n, nil
}

// Rename renames within one directory (all the log does).
func (s *simFS) Rename(from, to string) error {
	return s.call("rename "+filepath.Base(from)+" to "+filepath.Base(to), false, func() error {
		if filepath.Dir(from) != filepath.Dir(to) {
			return fmt.Errorf("simfs: rename %s to another directory: %w", from, fs.ErrInvalid)
		}
		parent, base, err := s.lookup(from)
		if err != nil {
			return err
		}
		n := parent.names[base]
		if n == nil {
			return &fs.PathError{Op: "rename", Path: from, Err: fs.ErrNotExist}
		}
		parent.change(simDirChange{name: filepath.Base(to), node: n, from: base})
		return nil
	})
}

func (s *simFS) Remove(name string) error {
	return s.call("remove "+filepath.Base(name), false, func() error {
		parent, base, err := s.lookup(name)
		if err != nil {
			return err
		}
		if parent.names[base] == nil {
			return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
		}
		parent.change(simDirChange{name: base})
		return nil
	})
}

func (s *simFS) SyncDir(dir string) error {
	return s.call("fsync directory "+dir, false, func() error {
		n, err := s.dirNode(dir)
		if err != nil {
			return err
		}
		n.durable = make(map[string]*simNode, len(n.names))
		for k, v := range n.names {
			n.durable[k] = v
		}
		n.pending = nil
		return nil
	})
}

// simFile is an open file of a simFS.
type simFile struct {
	s          *simFS
	n          *simNode
	name       string
	appendOnly bool
	off        int
	boot       int
	closed     bool
}

// usable is nil if the file may be used (mu held).
func (f *simFile) usable() error {
	switch {
	case f.closed:
		return os.ErrClosed
	case f.boot != f.s.boot:
		return errPowerLost
	}
	return nil
}

func (f *simFile) Write(p []byte) (int, error) {
	err := f.s.call(fmt.Sprintf("write %d bytes to %s", len(p), f.name), true, func() error {
		if err := f.usable(); err != nil {
			return err
		}
		if f.appendOnly {
			f.off = len(f.n.data)
		}
		if end := f.off + len(p); end > len(f.n.data) {
			f.n.data = append(f.n.data, make([]byte, end-len(f.n.data))...)
		}
		copy(f.n.data[f.off:], p)
		f.off += len(p)
		f.s.last = f.n
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

func (f *simFile) Truncate(size int64) error {
	return f.s.call(fmt.Sprintf("truncate %s to %d", f.name, size), false, func() error {
		if err := f.usable(); err != nil {
			return err
		}
		if int(size) <= len(f.n.data) {
			f.n.data = f.n.data[:size:size]
		} else {
			f.n.data = append(f.n.data, make([]byte, int(size)-len(f.n.data))...)
		}
		return nil
	})
}

func (f *simFile) Sync() error { return f.sync("fsync") }

func (f *simFile) SyncData() error {
	f.s.mu.Lock()
	h := f.s.hold
	f.s.hold = nil
	f.s.mu.Unlock()
	if h != nil {
		close(h.started)
		<-h.release
	}
	return f.sync("fdatasync")
}

func (f *simFile) sync(what string) error {
	return f.s.call(what+" "+f.name, false, func() error {
		if err := f.usable(); err != nil {
			return err
		}
		f.n.synced = bytes.Clone(f.n.data)
		return nil
	})
}

func (f *simFile) Close() error {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if f.closed {
		return os.ErrClosed
	}
	f.closed = true
	return nil
}
