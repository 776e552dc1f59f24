//go:build !unix

package localcosmos

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockDir opens dir's LOCK file. Outside Unix the directory is not locked:
// keeping two servers off one directory is up to the caller there.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("localcosmos: data directory: %w", err)
	}
	return f, nil
}

// unlockDir closes dir's LOCK file.
func unlockDir(f *os.File) { _ = f.Close() }

// syncDir does nothing outside Unix: a directory cannot be fsynced there
// (Windows makes renames durable with the file system's own journal).
func syncDir(string) error { return nil }
