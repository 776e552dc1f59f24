package localcosmos

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// The file system under a data directory.
//
// Every call the write-ahead log makes to the operating system goes through
// dataFS, so that a test can put the log on a file system that loses power
// (powerloss_test.go: everything not yet fsynced is lost, the last write is
// torn) at any of those calls. osFS, the real one, is what servers use.

// dataFS is the file system a data directory lives on.
type dataFS interface {
	// Mkdir creates one directory (fs.ErrExist if it exists, fs.ErrNotExist
	// if its parent does not).
	Mkdir(dir string) error
	// Lock takes the directory's exclusive lock (ErrDataDirInUse when it is
	// held).
	Lock(dir string) (dirLock, error)
	// OpenFile opens name for writing with os.OpenFile's flags.
	OpenFile(name string, flag int) (dataFile, error)
	ReadFile(name string) ([]byte, error)
	// ReadDir lists the names in dir, sorted.
	ReadDir(dir string) ([]string, error)
	Rename(from, to string) error
	Remove(name string) error
	// SyncDir makes the creations, renames and removals in dir durable.
	SyncDir(dir string) error
}

// dirLock is a data directory's exclusive lock.
type dirLock interface{ Unlock() }

// dataFile is a file of a data directory, open for writing.
type dataFile interface {
	Write(p []byte) (int, error)
	Truncate(size int64) error
	// Sync makes the file's data and metadata durable (fsync).
	Sync() error
	// SyncData makes the file's data durable, and its size, but not other
	// metadata such as its modification time (fdatasync).
	SyncData() error
	Close() error
}

// osFS is the operating system's file system.
type osFS struct{}

func (osFS) Mkdir(dir string) error { return os.Mkdir(dir, 0o755) }

func (osFS) Lock(dir string) (dirLock, error) {
	f, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	return osLock{f}, nil
}

// osLock is the open LOCK file that holds a directory's flock.
type osLock struct{ f *os.File }

func (l osLock) Unlock() { unlockDir(l.f) }

func (osFS) OpenFile(name string, flag int) (dataFile, error) {
	f, err := os.OpenFile(name, flag, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

func (osFS) ReadDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

func (osFS) Rename(from, to string) error { return os.Rename(from, to) }
func (osFS) Remove(name string) error     { return os.Remove(name) }
func (osFS) SyncDir(dir string) error     { return syncDir(dir) }

// osFile is an open file of the operating system.
type osFile struct{ *os.File }

func (f osFile) SyncData() error { return syncData(f.File) }

// makeDir creates dir and the parents it lacks, each durably: a directory
// is an entry of its parent, which may lose it in a power failure until
// the parent is fsynced, and with it everything the directory holds.
func makeDir(fsys dataFS, dir string) error {
	err := fsys.Mkdir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		parent := filepath.Dir(dir)
		if parent == dir {
			return err
		}
		if err := makeDir(fsys, parent); err != nil {
			return err
		}
		err = fsys.Mkdir(dir)
	}
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil
	case err != nil:
		return err
	}
	return fsys.SyncDir(filepath.Dir(dir))
}
