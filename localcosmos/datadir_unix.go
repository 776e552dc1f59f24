//go:build unix

package localcosmos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive lock on dir's LOCK file, held until the file
// is closed (or the process dies, so a crash never leaves a stale lock).
// flock locks belong to the open file, so a second server in the same
// process is refused too.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("localcosmos: data directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("localcosmos: data directory %s is %w", dir, ErrDataDirInUse)
		}
		return nil, fmt.Errorf("localcosmos: lock data directory %s: %w", dir, err)
	}
	return f, nil
}

// unlockDir releases dir's lock and closes the file. Closing alone is not
// enough: a child forked by any goroutine of this process (exec.Command)
// holds a copy of the open file until it execs, and the flock lives as long
// as any copy does, so the next server on dir would be refused.
func unlockDir(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	_ = f.Close()
}

// syncDir makes renames, creations and removals in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
