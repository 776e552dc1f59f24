package localcosmos

import (
	"encoding/json"
	"fmt"
	"net/http"
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
// older files are removed (wal.go describes the files). This file writes
// the log; persist_recover.go opens a directory and replays it,
// persist_compact.go writes snapshots.

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
