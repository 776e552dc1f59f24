package localcosmos

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
)

// Recovery (persist.go): opening a data directory loads the newest
// snapshot and replays the segments after it, storing each record's
// state as recorded; a torn record at the end of the last segment is
// the unacknowledged end of the log and is cut off, anywhere else it is
// damage that keeps the directory from opening.

// openDisk locks dir (creating it if needed), loads the account into st
// and opens the current segment for appending.
func openDisk(st *store, fsys dataFS, dir string, compactAfter int64, logf func(string, ...any)) (*disk, error) {
	if err := makeDir(fsys, dir); err != nil {
		return nil, fmt.Errorf("localcosmos: data directory: %w", err)
	}
	lock, err := fsys.Lock(dir)
	if err != nil {
		return nil, err
	}
	d := &disk{fs: fsys, dir: dir, lock: lock, compactAfter: compactAfter, logf: logf}
	if err := d.load(st); err != nil {
		d.close()
		return nil, err
	}
	d.gs = newGroupSync(dir, d.seg)
	return d, nil
}

// load replays the newest snapshot and the segments after it.
func (d *disk) load(st *store) error {
	segs, snaps, err := dirFiles(d.fs, d.dir)
	if err != nil {
		return err
	}
	first := uint64(1)
	if len(snaps) > 0 {
		first = snaps[len(snaps)-1]
		if err := loadSnapshot(st, d.fs, snapshotPath(d.dir, first)); err != nil {
			return err
		}
	}
	var live []uint64
	for _, s := range segs {
		if s >= first {
			live = append(live, s)
		}
	}
	for i, s := range live {
		if s != first+uint64(i) {
			return corruptf(segmentPath(d.dir, first+uint64(i)), 0, "segment is missing")
		}
	}
	if len(live) == 0 {
		if len(snaps) > 0 || len(segs) > 0 {
			return corruptf(segmentPath(d.dir, first), 0, "segment is missing")
		}
		f, err := createSegment(d.fs, d.dir, first)
		if err != nil {
			return fmt.Errorf("localcosmos: data directory: %w", err)
		}
		d.seg, d.segNo = f, first
		return nil
	}
	for i, s := range live {
		last := i == len(live)-1
		good, err := replaySegment(st, d.fs, segmentPath(d.dir, s), last)
		if err != nil {
			return err
		}
		if last {
			if err := d.openTail(s, good); err != nil {
				return err
			}
		}
	}
	// Files a finished compaction had still to remove.
	if err := removeBefore(d.fs, d.dir, first); err != nil {
		return fmt.Errorf("localcosmos: data directory: %w", err)
	}
	return nil
}

// openTail opens segment n for appending after cutting off a torn tail
// beyond good bytes.
func (d *disk) openTail(n uint64, good int64) error {
	path := segmentPath(d.dir, n)
	f, err := d.fs.OpenFile(path, os.O_WRONLY|os.O_APPEND)
	if err != nil {
		return fmt.Errorf("localcosmos: data directory: %w", err)
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return fmt.Errorf("localcosmos: data directory: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("localcosmos: data directory: %w", err)
	}
	d.seg, d.segNo, d.segSize = f, n, good
	return nil
}

func loadSnapshot(st *store, fsys dataFS, path string) error {
	data, err := fsys.ReadFile(path)
	if err != nil {
		return fmt.Errorf("localcosmos: data directory: %w", err)
	}
	records, _, err := readFrames(path, data, false)
	if err != nil {
		return err
	}
	var end *snapshotTotal
	for i, payload := range records {
		rec, err := decodeRecord(path, payload)
		if err != nil {
			return err
		}
		if rec.End != nil {
			if i != len(records)-1 || rec.End.Records != i {
				return corruptf(path, 0, "snapshot end record %d of %d does not match", i, len(records))
			}
			end = rec.End
		}
		if err := st.apply(rec); err != nil {
			return corruptf(path, 0, "record %d: %v", i, err)
		}
	}
	if end == nil {
		return corruptf(path, int64(len(data)), "snapshot is truncated (no end record)")
	}
	return nil
}

// replaySegment applies a segment's records and returns the length of its
// whole records (a torn tail is allowed only in the last segment).
func replaySegment(st *store, fsys dataFS, path string, last bool) (int64, error) {
	data, err := fsys.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("localcosmos: data directory: %w", err)
	}
	records, good, err := readFrames(path, data, last)
	if err != nil {
		return 0, err
	}
	for i, payload := range records {
		rec, err := decodeRecord(path, payload)
		if err != nil {
			return 0, err
		}
		if rec.End != nil {
			return 0, corruptf(path, 0, "record %d: snapshot record in a log segment", i)
		}
		if err := st.apply(rec); err != nil {
			return 0, corruptf(path, 0, "record %d: %v", i, err)
		}
	}
	return good, nil
}

func decodeRecord(path string, payload []byte) (*walRecord, error) {
	var rec walRecord
	if err := json.Unmarshal(payload, &rec); err != nil {
		return nil, corruptf(path, 0, "record does not decode: %v", err)
	}
	return &rec, nil
}

// apply stores the state a record holds.
func (st *store) apply(rec *walRecord) error {
	st.etagSeq, st.dbSeq = rec.ETagSeq, rec.DBSeq
	if rec.Catalog != nil {
		if err := st.applyCatalog(rec.Catalog); err != nil {
			return err
		}
	}
	for _, ch := range rec.Colls {
		if err := st.applyChanges(ch); err != nil {
			return err
		}
	}
	return nil
}

// applyCatalog makes the databases and containers those of img, keeping
// the documents of containers that remain.
func (st *store) applyCatalog(img *catalogImage) error {
	keep := map[string]bool{}
	for _, di := range img.DBs {
		keep[di.ID] = true
		db := st.dbs[di.ID]
		if db == nil || db.seq != di.Seq {
			db = newDatabaseAt(st, di.ID, di.Seq)
			st.dbs[di.ID] = db
		}
		var body map[string]any
		if err := decodeJSON(di.Body, &body); err != nil {
			return fmt.Errorf("database %q: %v", di.ID, err)
		}
		db.body, db.raw, db.collSeq = body, di.Body, di.CollSeq
		offer, err := decodeOffer(di.Offer)
		if err != nil {
			return fmt.Errorf("database %q: %v", di.ID, err)
		}
		db.offer = offer
		if err := db.applyContainers(di.Colls); err != nil {
			return err
		}
	}
	for id := range st.dbs {
		if !keep[id] {
			delete(st.dbs, id)
		}
	}
	return nil
}

func (db *database) applyContainers(imgs []collImage) error {
	keep := map[string]bool{}
	for _, ci := range imgs {
		keep[ci.ID] = true
		c := db.colls[ci.ID]
		if c == nil || c.seq != ci.Seq {
			c = newContainerAt(db, ci.ID, ci.Seq)
			db.colls[ci.ID] = c
		}
		var body map[string]any
		if err := decodeJSON(ci.Body, &body); err != nil {
			return fmt.Errorf("container %q: %v", ci.ID, err)
		}
		spec, e := parseContainerSpec(deepCopy(body).(map[string]any))
		if e != nil {
			return fmt.Errorf("container %q: %s", ci.ID, e.Message)
		}
		c.body, c.raw = body, ci.Body
		c.pk, c.uniqueKeys, c.defaultTTL = spec.pk, spec.uniqueKeys, spec.defaultTTL
		c.docSeq, c.lsn = ci.DocSeq, ci.LSN
		offer, err := decodeOffer(ci.Offer)
		if err != nil {
			return fmt.Errorf("container %q: %v", ci.ID, err)
		}
		c.offer = offer
	}
	for id := range db.colls {
		if !keep[id] {
			delete(db.colls, id)
		}
	}
	return nil
}

func decodeOffer(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var o map[string]any
	if err := decodeJSON(raw, &o); err != nil {
		return nil, err
	}
	return o, nil
}

func (st *store) applyChanges(ch collChanges) error {
	db := st.dbs[ch.DB]
	if db == nil {
		return fmt.Errorf("database %q does not exist", ch.DB)
	}
	c := db.colls[ch.Coll]
	if c == nil || c.seq != ch.Seq {
		return fmt.Errorf("container %q of database %q does not exist", ch.Coll, ch.DB)
	}
	c.docSeq, c.lsn = ch.DocSeq, ch.LSN
	for _, k := range ch.Del {
		c.remove(k.PK, k.ID)
	}
	for _, im := range ch.Put {
		d := &document{id: im.ID, pk: im.PK, seq: im.Seq, lsn: im.LSN, etag: im.ETag, ts: im.TS, raw: im.Body}
		if err := decodeJSON(im.Body, &d.body); err != nil || d.body == nil {
			return fmt.Errorf("document %q: body does not decode", im.ID)
		}
		c.put(d)
	}
	return nil
}

// newDatabaseAt is database number seq of st (its _rid follows from seq).
func newDatabaseAt(st *store, id string, seq uint32) *database {
	db := &database{st: st, id: id, seq: seq, colls: map[string]*container{}}
	binary.LittleEndian.PutUint32(db.ridRaw[:], seq)
	db.rid = base64.StdEncoding.EncodeToString(db.ridRaw[:])
	return db
}

// newContainerAt is container number seq of db (its _rid follows from seq).
func newContainerAt(db *database, id string, seq uint32) *container {
	c := &container{db: db, id: id, seq: seq, parts: map[string]*partition{}}
	copy(c.ridRaw[:4], db.ridRaw[:])
	binary.BigEndian.PutUint32(c.ridRaw[4:], 0x80000000|seq)
	c.rid = base64.StdEncoding.EncodeToString(c.ridRaw[:])
	return c
}
