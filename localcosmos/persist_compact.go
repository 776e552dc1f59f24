package localcosmos

import (
	"errors"
	"fmt"
	"os"
)

// Compaction (persist.go): when the current segment outgrows
// Options.CompactAfterBytes, the account is written as a snapshot in
// chunks of records and the older files are removed.

// compact starts segment n+1, writes the account as snapshot n+1 (the
// state before that segment) and removes the older files. A crash at any
// point leaves either the old snapshot with every segment after it, or the
// new snapshot with the new segment.
func (st *store) compact() error {
	d := st.disk
	// The records appended to segment n go to disk before segment n+1
	// exists: once it does, n is no longer the last segment, and a record
	// a power loss tore there is damage that keeps the directory from
	// opening instead of the unacknowledged end of the log.
	if err := d.gs.syncAll(); err != nil {
		return err // their requests get the error and the server stops
	}
	next := d.segNo + 1
	f, err := createSegment(d.fs, d.dir, next)
	if errors.Is(err, errSegmentNotDurable) {
		// Segment n+1 exists, and after a failed directory fsync nothing
		// tells whether it, or anything else of the directory, is
		// durable. Records appended to segment n from now on could be
		// torn by a power loss while n+1 survives after it, which makes
		// the directory corrupt, and every later compaction would fail
		// on the existing n+1. Removing it would need another directory
		// fsync to be trusted after one failed, which POSIX does not
		// promise (a failed fsync may have dropped what it could not
		// write and report success next time). So the server stops, as
		// when the log cannot be synced: every acknowledged record is in
		// segment n, fsynced above, and on restart an empty n+1 is the
		// last segment and n is whole.
		st.stop(d.dir, err)
		return err
	}
	if err != nil {
		return err // nothing was created: compaction is tried again later
	}
	old := d.seg
	err = d.gs.switchTo(f) // nothing left to sync: the store is locked
	d.seg, d.segNo, d.segSize = f, next, 0
	_ = old.Close()
	if err != nil {
		return err
	}
	if err := writeFileSync(d.fs, snapshotPath(d.dir, next), st.snapshotFrames()); err != nil {
		return err
	}
	return removeBefore(d.fs, d.dir, next)
}

// errSegmentNotDurable is matched (errors.Is) by the error of
// createSegment when the segment was created but its directory could not
// be fsynced.
var errSegmentNotDurable = errors.New("directory fsync failed after the segment was created")

// createSegment creates segment n, durably.
func createSegment(fsys dataFS, dir string, n uint64) (dataFile, error) {
	f, err := fsys.OpenFile(segmentPath(dir, n), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND)
	if err != nil {
		return nil, err
	}
	if err := fsys.SyncDir(dir); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %w", errSegmentNotDurable, err)
	}
	return f, nil
}

// removeBefore removes the segments and snapshots that snapshot n covers.
func removeBefore(fsys dataFS, dir string, n uint64) error {
	segs, snaps, err := dirFiles(fsys, dir)
	if err != nil {
		return err
	}
	for _, s := range segs {
		if s < n {
			if err := fsys.Remove(segmentPath(dir, s)); err != nil {
				return err
			}
		}
	}
	for _, s := range snaps {
		if s < n {
			if err := fsys.Remove(snapshotPath(dir, s)); err != nil {
				return err
			}
		}
	}
	return fsys.SyncDir(dir)
}

// snapshotFrames is the whole account as framed records.
func (st *store) snapshotFrames() [][]byte {
	var frames [][]byte
	add := func(rec *walRecord) { frames = append(frames, frame(marshalJSON(rec))) }
	add(&walRecord{ETagSeq: st.etagSeq, DBSeq: st.dbSeq, Catalog: st.catalogImage()})
	for _, db := range sortedDatabases(st) {
		for _, c := range sortedContainers(db) {
			var ch collChanges
			size := 0
			flush := func() {
				if len(ch.Put) > 0 {
					add(&walRecord{ETagSeq: st.etagSeq, DBSeq: st.dbSeq, Colls: []collChanges{ch}})
				}
				ch = collChanges{DB: db.id, Coll: c.id, Seq: c.seq, DocSeq: c.docSeq, LSN: c.lsn}
				size = 0
			}
			flush()
			for _, doc := range c.all {
				if len(ch.Put) == snapshotChunk || size+len(doc.raw) > snapshotChunkBytes {
					flush()
				}
				ch.Put = append(ch.Put, imageOf(doc))
				size += len(doc.raw)
			}
			flush()
		}
	}
	add(&walRecord{ETagSeq: st.etagSeq, DBSeq: st.dbSeq, End: &snapshotTotal{Records: len(frames)}})
	return frames
}
