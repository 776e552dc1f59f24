package localcosmos

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Files of a data directory (Options.DataDir) and their framing.
//
// The directory holds numbered write-ahead log segments (wal-N.log), at
// most one current snapshot (snapshot-N.snap, the whole account as it was
// before segment N) and a LOCK file. The account is the newest snapshot
// followed by every segment numbered from it on, in order. Each file is a
// sequence of records framed as
//
//	length uint32 LE | ^length uint32 LE | CRC-32C of payload uint32 LE | payload (JSON)
//
// (the complemented length tells a damaged length from a record cut short).
// A record is appended with one write and fsynced before the request that
// made it is answered, and a segment is fsynced before the next one is
// created (if the next one may exist but its creation failed, nothing is
// appended again: the server stops), so only the last record of the last
// segment can be incomplete after a crash or a power loss: that torn tail
// (a short record, or zero bytes after the last whole record) was never
// acknowledged and is cut off.
// A file is created, renamed or removed durably (its directory fsynced
// after), and so is the data directory itself when NewServer creates it.
// Anything else that does not check out is an error naming the file.

// ErrDataCorrupt is matched (errors.Is) by the error NewServer returns when
// a file of the data directory is damaged, truncated or missing, instead
// of loading part of the account.
var ErrDataCorrupt = errors.New("corrupt")

// ErrDataDirInUse is matched (errors.Is) by the error NewServer returns
// when another server, in this process or another, has the data directory
// open.
var ErrDataDirInUse = errors.New("in use by another process")

const (
	walPrefix     = "wal-"
	walSuffix     = ".log"
	snapPrefix    = "snapshot-"
	snapSuffix    = ".snap"
	tmpSuffix     = ".tmp"
	lockFileName  = "LOCK"
	frameHeader   = 12
	maxRecordSize = 1<<32 - 1
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// frame returns payload with its header.
func frame(payload []byte) []byte {
	out := make([]byte, frameHeader+len(payload))
	binary.LittleEndian.PutUint32(out, uint32(len(payload)))
	binary.LittleEndian.PutUint32(out[4:], ^uint32(len(payload)))
	binary.LittleEndian.PutUint32(out[8:], crc32.Checksum(payload, crcTable))
	copy(out[frameHeader:], payload)
	return out
}

// corruptf is the error for damaged data in file at offset off.
func corruptf(file string, off int64, format string, args ...any) error {
	return fmt.Errorf("localcosmos: data file %s is %w at offset %d: %s", file, ErrDataCorrupt, off, fmt.Sprintf(format, args...))
}

// readFrames splits the file's records. If tornOK, an incomplete last
// record (or a tail of zero bytes) is the unacknowledged end of a write cut
// short by a crash: it is left out and good is where it starts. Otherwise
// (and for any checksum mismatch) damage is an ErrDataCorrupt error.
func readFrames(path string, data []byte, tornOK bool) (records [][]byte, good int64, err error) {
	off := 0
	for off < len(data) {
		rest := data[off:]
		at := int64(off)
		if len(rest) < frameHeader || allZero(rest) {
			return records, at, tornOr(tornOK, corruptf(path, at, "truncated record header"))
		}
		n := int(binary.LittleEndian.Uint32(rest))
		switch {
		case binary.LittleEndian.Uint32(rest[4:]) != ^uint32(n):
			return records, at, corruptf(path, at, "record header is damaged")
		case n == 0:
			return records, at, corruptf(path, at, "record of length 0")
		case n > len(rest)-frameHeader:
			return records, at, tornOr(tornOK, corruptf(path, at, "record of %d bytes truncated to %d", n, len(rest)-frameHeader))
		}
		payload := rest[frameHeader : frameHeader+n]
		if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(rest[8:]) {
			return records, at, corruptf(path, at, "record checksum mismatch")
		}
		records = append(records, payload)
		off += frameHeader + n
	}
	return records, int64(off), nil
}

// tornOr is nil for a torn tail that may be cut off, err otherwise.
func tornOr(torn bool, err error) error {
	if torn {
		return nil
	}
	return err
}

func allZero(b []byte) bool { return len(bytes.Trim(b, "\x00")) == 0 }

// dirFiles lists the numbered segments and snapshots of dir, ascending,
// removing leftover temporary files of an interrupted compaction.
func dirFiles(fsys dataFS, dir string) (segs, snaps []uint64, err error) {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("localcosmos: data directory: %w", err)
	}
	for _, name := range names {
		switch {
		case strings.HasSuffix(name, tmpSuffix):
			if err := fsys.Remove(filepath.Join(dir, name)); err != nil {
				return nil, nil, fmt.Errorf("localcosmos: data directory: %w", err)
			}
		case strings.HasPrefix(name, walPrefix) && strings.HasSuffix(name, walSuffix):
			n, perr := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, walPrefix), walSuffix), 10, 64)
			if perr != nil || n == 0 {
				return nil, nil, corruptf(filepath.Join(dir, name), 0, "unexpected segment name")
			}
			segs = append(segs, n)
		case strings.HasPrefix(name, snapPrefix) && strings.HasSuffix(name, snapSuffix):
			n, perr := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, snapPrefix), snapSuffix), 10, 64)
			if perr != nil || n == 0 {
				return nil, nil, corruptf(filepath.Join(dir, name), 0, "unexpected snapshot name")
			}
			snaps = append(snaps, n)
		}
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i] < segs[j] })
	sort.Slice(snaps, func(i, j int) bool { return snaps[i] < snaps[j] })
	return segs, snaps, nil
}

func segmentPath(dir string, n uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%s%016d%s", walPrefix, n, walSuffix))
}

func snapshotPath(dir string, n uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%s%016d%s", snapPrefix, n, snapSuffix))
}

// writeFileSync writes path atomically: a temporary file, fsynced, then
// renamed over path and the directory fsynced, so a crash leaves either
// the old state or the whole new file.
func writeFileSync(fsys dataFS, path string, frames [][]byte) error {
	tmp := path + tmpSuffix
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return err
	}
	for _, fr := range frames {
		if _, err := f.Write(fr); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return err
	}
	return fsys.SyncDir(filepath.Dir(path))
}
