//go:build unix

package localcosmos

import (
	"syscall"
	"testing"
)

// A process that forks a child (any exec.Command) lends the child its open
// files until the child execs. flock locks belong to the open file, so a
// Close that only closes our descriptor leaves the directory locked for as
// long as the child's copy lives. The dup stands in for that child.
func TestPersistDirReleasedWhileAForkedChildHoldsTheLockFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, &Options{DataDir: dir})
	s.st.mu.Lock()
	fd, err := syscall.Dup(int(s.st.disk.lock.(osLock).f.Fd()))
	s.st.mu.Unlock()
	wantOK(t, err, "dup")
	defer syscall.Close(fd)
	s.Close()
	s2, err := NewServer(&Options{DataDir: dir})
	wantOK(t, err, "open after close while a copy of the lock file is open")
	s2.Close()
}
