package localcosmos

import (
	"os"
	"syscall"
)

// syncData makes f's data durable: fdatasync, which (unlike fsync) skips
// metadata a later read does not need, such as the modification time, but
// still flushes the size of a file that grew. Appended log records need
// nothing more.
func syncData(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
