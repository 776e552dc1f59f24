package localcosmos

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
)

// Persistence (Options.DataDir).
//
// Every request that changes the account does so under the store's write
// lock, through store.lock/unlock. While it holds the lock the change
// marks what it touched (journal); unlock turns that into ONE log record
// holding the resulting state of every touched document (with its _etag,
// _ts, _rid and LSN, exactly as stored), the container counters behind
// session tokens and _rid, and, for control-plane changes, an image of
// every database and container. The record is appended before the lock is
// released and fsynced (together with those of concurrent writes, see
// groupsync.go) before the response is written: a transactional batch is
// one record, on disk all or nothing as in memory. Replay stores
// the recorded state instead of re-running requests, so it reproduces the
// account exactly. When the current segment outgrows
// Options.CompactAfterBytes the account is written as a snapshot and the
// older files are removed (wal.go describes the files).

// defaultCompactAfter is the default Options.CompactAfterBytes.
const defaultCompactAfter = 64 << 20

// snapshotChunk and snapshotChunkBytes bound the documents of one
// snapshot record.
const (
	snapshotChunk      = 1000
	snapshotChunkBytes = 16 << 20
)

// disk is the open data directory of a store.
type disk struct {
	fs           dataFS
	dir          string
	lock         dirLock
	seg          dataFile // current segment, opened for appending
	segNo        uint64
	segSize      int64
	compactAfter int64
	logf         func(format string, args ...any)
	gs           *groupSync // which appended records are fsynced
}

// diskFailure holds the error that made the server stop serving: a record
// could not be written or synced, so memory is ahead of the disk, or a new
// segment's directory could not be synced, so what is durable is unknown.
type diskFailure struct{ err error }

// journal is what the write in progress changed.
type journal struct {
	catalog bool
	docs    map[*container]map[docKey]struct{}
}

type docKey struct {
	PK string `json:"pk"`
	ID string `json:"id"`
}

// walRecord is the payload of a log or snapshot record.
type walRecord struct {
	ETagSeq uint64         `json:"etagSeq"`
	DBSeq   uint32         `json:"dbSeq"`
	Catalog *catalogImage  `json:"catalog,omitempty"`
	Colls   []collChanges  `json:"colls,omitempty"`
	End     *snapshotTotal `json:"end,omitempty"` // last record of a snapshot
}

// snapshotTotal ends a snapshot, so a snapshot cut short is detected.
type snapshotTotal struct {
	Records int `json:"records"`
}

// catalogImage is every database and container, without documents.
type catalogImage struct {
	DBs []dbImage `json:"dbs"`
}

type dbImage struct {
	ID      string          `json:"id"`
	Seq     uint32          `json:"seq"`
	Body    json.RawMessage `json:"body"`
	CollSeq uint32          `json:"collSeq"`
	Offer   json.RawMessage `json:"offer,omitempty"`
	Colls   []collImage     `json:"colls"`
}

type collImage struct {
	ID     string          `json:"id"`
	Seq    uint32          `json:"seq"`
	Body   json.RawMessage `json:"body"`
	DocSeq uint64          `json:"docSeq"`
	LSN    int64           `json:"lsn"`
	Offer  json.RawMessage `json:"offer,omitempty"`
}

// collChanges is the new state of some documents of one container.
type collChanges struct {
	DB     string     `json:"db"`
	Coll   string     `json:"coll"`
	Seq    uint32     `json:"seq"`
	DocSeq uint64     `json:"docSeq"`
	LSN    int64      `json:"lsn"`
	Put    []docImage `json:"put,omitempty"`
	Del    []docKey   `json:"del,omitempty"`
}

type docImage struct {
	PK   string          `json:"pk"`
	ID   string          `json:"id"`
	Seq  uint64          `json:"seq"`
	LSN  int64           `json:"lsn"`
	ETag string          `json:"etag"`
	TS   int64           `json:"ts"`
	Body json.RawMessage `json:"body"`
}

// lock takes the write lock for a change to the account.
func (st *store) lock() { st.mu.Lock() }

// unlock makes the change durable (when there is a data directory) and
// releases the write lock.
func (st *store) unlock() {
	if st.disk != nil && (st.jr.catalog || len(st.jr.docs) > 0) {
		st.commit()
	}
	st.mu.Unlock()
}

// touched notes that document (pk, id) of c changed.
func (st *store) touched(c *container, pk, id string) {
	if st.disk == nil {
		return
	}
	if st.jr.docs == nil {
		st.jr.docs = map[*container]map[docKey]struct{}{}
	}
	m := st.jr.docs[c]
	if m == nil {
		m = map[docKey]struct{}{}
		st.jr.docs[c] = m
	}
	m[docKey{PK: pk, ID: id}] = struct{}{}
}

// catalogChanged notes a change to databases, containers or offers.
func (st *store) catalogChanged() {
	if st.disk != nil {
		st.jr.catalog = true
	}
}

// errDisk answers a request once the data directory has failed.
func errDisk(err error) *apiError {
	return newError(http.StatusInternalServerError, "%s; the server refuses every request until restarted", err.Error())
}

// failure is the error that stopped the server, or nil.
func (st *store) failure() error {
	if f := st.failed.Load(); f != nil {
		return f.err
	}
	return nil
}

// commit writes the journal as one record (write lock held); the request
// waits for its fsync before it is answered (waitDurable).
// If that fails, memory holds a change the disk lacks: the server answers
// every later request with an error rather than serve state it could lose.
func (st *store) commit() {
	rec := st.journalRecord()
	st.jr = journal{}
	if st.failure() != nil {
		// Nothing more goes to the log: the segment may no longer be the
		// last one (see compact), and the request is refused anyway.
		return
	}
	if err := st.disk.append(marshalJSON(rec)); err != nil {
		st.stop(st.disk.dir, err)
		return
	}
	if st.disk.segSize >= st.disk.compactAfter {
		if err := st.compact(); err != nil {
			// The account is still whole on disk (old snapshot plus
			// segments); compaction is tried again once the new segment
			// has grown as large.
			st.disk.logf("localcosmos: compaction of %s failed: %v", st.disk.dir, err)
		}
	}
}

func (st *store) journalRecord() *walRecord {
	rec := &walRecord{ETagSeq: st.etagSeq, DBSeq: st.dbSeq}
	if st.jr.catalog {
		rec.Catalog = st.catalogImage()
	}
	for c, keys := range st.jr.docs {
		if c.db.colls[c.id] != c || st.dbs[c.db.id] != c.db {
			continue // deleted since
		}
		ch := collChanges{DB: c.db.id, Coll: c.id, Seq: c.seq, DocSeq: c.docSeq, LSN: c.lsn}
		for k := range keys {
			var d *document
			if p := c.parts[k.PK]; p != nil {
				d = p.docs[k.ID]
			}
			if d == nil {
				ch.Del = append(ch.Del, k)
				continue
			}
			ch.Put = append(ch.Put, imageOf(d))
		}
		rec.Colls = append(rec.Colls, ch)
	}
	return rec
}

func imageOf(d *document) docImage {
	return docImage{PK: d.pk, ID: d.id, Seq: d.seq, LSN: d.lsn, ETag: d.etag, TS: d.ts, Body: d.raw}
}

func offerRaw(o map[string]any) json.RawMessage {
	if o == nil {
		return nil
	}
	return marshalJSON(o)
}

func (st *store) catalogImage() *catalogImage {
	img := &catalogImage{DBs: []dbImage{}}
	for _, db := range sortedDatabases(st) {
		di := dbImage{ID: db.id, Seq: db.seq, Body: db.raw, CollSeq: db.collSeq, Offer: offerRaw(db.offer), Colls: []collImage{}}
		for _, c := range sortedContainers(db) {
			di.Colls = append(di.Colls, collImage{ID: c.id, Seq: c.seq, Body: c.raw, DocSeq: c.docSeq, LSN: c.lsn, Offer: offerRaw(c.offer)})
		}
		img.DBs = append(img.DBs, di)
	}
	return img
}

// append writes one record to the current segment (store write lock
// held); the request that made it waits for its fsync before it is
// answered (groupsync.go).
func (d *disk) append(payload []byte) error {
	if len(payload) > maxRecordSize {
		return fmt.Errorf("a change of %d bytes is more than a log record holds (%d)", len(payload), maxRecordSize)
	}
	fr := frame(payload)
	if _, err := d.seg.Write(fr); err != nil {
		return err
	}
	d.gs.appended()
	d.segSize += int64(len(fr))
	return nil
}

// waitDurable returns once every change made before the call is on disk.
// If the log cannot be synced, the server stops serving (as when a record
// cannot be written) and the error is returned.
func (st *store) waitDurable() error {
	if st.wal == nil {
		return nil
	}
	if err := st.wal.wait(); err != nil {
		st.stop(st.wal.dir, err)
		return st.failure()
	}
	return nil
}

// stop makes the server refuse every request from now on because of err,
// a failure of the data directory dir (the first such error is kept).
func (st *store) stop(dir string, err error) {
	st.failed.CompareAndSwap(nil, &diskFailure{err: fmt.Errorf("localcosmos: write-ahead log in %s: %w", dir, err)})
}

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

// close releases the directory.
func (d *disk) close() {
	if d.seg != nil {
		_ = d.seg.Close()
	}
	if d.lock != nil {
		d.lock.Unlock()
	}
}

// closeDisk closes the data directory once no request holds the lock.
func (st *store) closeDisk() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.disk != nil {
		if err := st.disk.gs.switchTo(nil); err != nil {
			st.disk.logf("localcosmos: closing %s: %v", st.disk.dir, err)
		}
		st.disk.close()
		st.disk = nil
	}
}
