package localcosmos

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// maxDocumentSize is the largest serialized item the service accepts
// (2 MB, measured on the JSON the client sends).
const maxDocumentSize = 2 * 1024 * 1024

// maxIDLength is the longest database or container id (characters);
// maxItemIDBytes the longest item id (UTF-8 bytes), as the service's
// per-item limits document.
const (
	maxIDLength    = 255
	maxItemIDBytes = 1023
)

// systemProperties are the properties the service owns on every item; values
// a client sends for them are replaced.
var systemProperties = []string{"_rid", "_self", "_etag", "_attachments", "_ts"}

// store is the whole account state. Every request that reads takes mu for
// reading, every request that writes (including a whole transactional batch)
// takes it for writing, so writes are linearizable and a batch is never
// visible half-applied. Documents are immutable once stored: a write stores a
// new *document, so readers may keep using a document after releasing mu.
type store struct {
	mu      sync.RWMutex
	dbs     map[string]*database
	dbSeq   uint32
	etagSeq uint64
	now     func() int64 // server clock, Unix seconds
	ranges  int          // partition key ranges per container (ranges.go)
	// fullScan makes queries read every document instead of the index
	// (index.go); tests set it to compare the two.
	fullScan bool

	// Persistence (persist.go): nil disk keeps everything in memory only.
	disk   *disk
	wal    *groupSync                  // set with disk, never cleared: requests wait on it
	jr     journal                     // changes of the write in progress
	failed atomic.Pointer[diskFailure] // set when a change could not be logged
}

type database struct {
	st      *store
	id      string
	seq     uint32
	ridRaw  [4]byte
	rid     string
	body    map[string]any // properties including system properties
	raw     []byte
	colls   map[string]*container
	collSeq uint32
	offer   map[string]any // throughput offer, nil when none
}

type container struct {
	db         *database
	id         string
	seq        uint32
	ridRaw     [8]byte
	rid        string
	body       map[string]any // properties including system properties
	raw        []byte
	pk         pkDefinition
	uniqueKeys [][][]string // unique key constraints: list of path lists (segments)
	defaultTTL *int64       // nil: time to live off; -1: on, no default expiry
	parts      map[string]*partition
	all        []*document            // every document, ordered by seq (creation order)
	byType     map[string][]*document // index.go: documents by type, each ordered by seq
	docSeq     uint64
	lsn        int64
	offer      map[string]any
	// lag holds, per logical partition, the recent write requests a
	// lagging replica may not have applied yet (lag.go).
	lag map[string][]lagEntry
}

type partition struct {
	docs    map[string]*document
	ordered []*document // ordered by seq
}

// document is one stored item. It is never modified after it is stored.
type document struct {
	id   string
	pk   string // canonical partition key (see pkKey)
	seq  uint64 // creation order; kept by replace, new on create
	lsn  int64
	etag string
	ts   int64
	body map[string]any // includes system properties; numbers are float64
	raw  []byte         // body serialized
}

// pkDefinition is a container's partition key definition.
type pkDefinition struct {
	paths []string
	segs  [][]string
	kind  string
}

// undefinedValue marks a partition key component whose property is absent
// from the document (the "undefined" partition, header value {}).
type undefinedValue struct{}

func newStore(now func() int64) *store { return &store{dbs: map[string]*database{}, now: now} }

// nextETag returns a new quoted, GUID-shaped ETag, unique in this server.
func (st *store) nextETag(ts int64) string {
	st.etagSeq++
	return fmt.Sprintf("\"%08x-0000-0d00-0000-%08x0000\"", uint32(st.etagSeq), uint32(ts))
}

func (st *store) database(id string) (*database, *apiError) {
	db := st.dbs[id]
	if db == nil {
		return nil, newError(http.StatusNotFound, msgResourceNotFound)
	}
	return db, nil
}

// container finds a container for an operation on its items: a missing
// database or container is 404 with substatus 1003, as the service answers.
func (st *store) container(dbID, collID string) (*container, *apiError) {
	db := st.dbs[dbID]
	if db == nil {
		return nil, errOwnerNotFound()
	}
	c := db.colls[collID]
	if c == nil {
		return nil, errOwnerNotFound()
	}
	return c, nil
}

// get returns the live document (pk, id), or nil; an expired document is
// treated as absent.
func (c *container) get(pk, id string) *document {
	p := c.parts[pk]
	if p == nil {
		return nil
	}
	d := p.docs[id]
	if d == nil || c.expired(d, c.db.st.now()) {
		return nil
	}
	return d
}

// expired reports whether d has outlived its time to live at time now: the
// container's defaultTtl unless the item's own ttl overrides it, with -1
// meaning never. With no defaultTtl on the container, items never expire.
func (c *container) expired(d *document, now int64) bool {
	if c.defaultTTL == nil {
		return false
	}
	ttl := *c.defaultTTL
	if v, ok := d.body["ttl"].(float64); ok && v == float64(int64(v)) && (v > 0 || v == -1) {
		ttl = int64(v)
	}
	return ttl > 0 && d.ts+ttl <= now
}

// live filters out expired documents, returning a new slice.
func (c *container) live(ds []*document) []*document {
	now := c.db.st.now()
	out := make([]*document, 0, len(ds))
	for _, d := range ds {
		if !c.expired(d, now) {
			out = append(out, d)
		}
	}
	return out
}

// put stores d, replacing the document with the same partition key and id.
// It returns the replaced document, if any.
func (c *container) put(d *document) *document {
	p := c.parts[d.pk]
	if p == nil {
		p = &partition{docs: map[string]*document{}}
		c.parts[d.pk] = p
	}
	prev := p.docs[d.id]
	if prev != nil && prev.seq != d.seq {
		p.ordered = removeSorted(p.ordered, prev.seq)
		c.all = removeSorted(c.all, prev.seq)
	}
	p.docs[d.id] = d
	p.ordered = putSorted(p.ordered, d)
	c.all = putSorted(c.all, d)
	c.indexPut(d, prev)
	c.db.st.touched(c, d.pk, d.id)
	return prev
}

// remove deletes the document with the given partition key and id and returns it.
func (c *container) remove(pk, id string) *document {
	p := c.parts[pk]
	if p == nil {
		return nil
	}
	prev := p.docs[id]
	if prev == nil {
		return nil
	}
	delete(p.docs, id)
	c.db.st.touched(c, pk, id)
	p.ordered = removeSorted(p.ordered, prev.seq)
	c.all = removeSorted(c.all, prev.seq)
	c.indexRemove(prev)
	if len(p.docs) == 0 {
		delete(c.parts, pk)
	}
	return prev
}

// partitionDocs returns the documents of one logical partition in creation order.
// The slice must not be modified; it stays valid after the lock is released
// only if copied, which callers do.
func (c *container) partitionDocs(pk string) []*document {
	p := c.parts[pk]
	if p == nil {
		return nil
	}
	return p.ordered
}

func putSorted(s []*document, d *document) []*document {
	i := sort.Search(len(s), func(i int) bool { return s[i].seq >= d.seq })
	if i < len(s) && s[i].seq == d.seq {
		s[i] = d
		return s
	}
	s = append(s, nil)
	copy(s[i+1:], s[i:])
	s[i] = d
	return s
}

func removeSorted(s []*document, seq uint64) []*document {
	i := sort.Search(len(s), func(i int) bool { return s[i].seq >= seq })
	if i < len(s) && s[i].seq == seq {
		copy(s[i:], s[i+1:])
		s[len(s)-1] = nil
		s = s[:len(s)-1]
	}
	return s
}

// newDocument builds the stored form of body: the system properties are set
// and the result serialized. prev is the document it replaces (its creation
// order and _rid are kept) or nil.
func (c *container) newDocument(st *store, id, pk string, body map[string]any, prev *document, ts int64) *document {
	d := &document{id: id, pk: pk, ts: ts}
	if prev != nil {
		d.seq = prev.seq
	} else {
		c.docSeq++
		d.seq = c.docSeq
	}
	c.lsn++
	d.lsn = c.lsn
	d.etag = st.nextETag(ts)
	var rid [16]byte
	copy(rid[:8], c.ridRaw[:])
	binary.BigEndian.PutUint64(rid[8:], d.seq)
	ridStr := base64.StdEncoding.EncodeToString(rid[:])
	for _, k := range systemProperties {
		delete(body, k)
	}
	body["_rid"] = ridStr
	body["_self"] = "dbs/" + c.db.rid + "/colls/" + c.rid + "/docs/" + ridStr + "/"
	body["_etag"] = d.etag
	body["_attachments"] = "attachments/"
	body["_ts"] = float64(ts)
	d.body = body
	d.raw = marshalJSON(body)
	return d
}

// marshalJSON serializes v the way the service does: no HTML escaping.
func marshalJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Values here come from encoding/json decoding; they always encode.
		panic(fmt.Sprintf("localcosmos: marshal: %v", err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// decodeJSON decodes data into v; numbers become float64, as the query
// engine expects.
func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("unexpected data after JSON value")
	}
	if _, err := dec.Token(); err == nil {
		return fmt.Errorf("unexpected data after JSON value")
	}
	return nil
}

// deepCopy copies a decoded JSON value.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, e := range t {
			s[i] = deepCopy(e)
		}
		return s
	default:
		return v
	}
}

// splitPath splits a partition key or unique key path such as "/a/b".
func splitPath(p string) ([]string, bool) {
	if !strings.HasPrefix(p, "/") || len(p) < 2 {
		return nil, false
	}
	segs := strings.Split(p[1:], "/")
	for i, s := range segs {
		if s == "" {
			return nil, false
		}
		if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
			segs[i] = s[1 : len(s)-1]
		}
	}
	return segs, true
}

// lookup follows path segments in a document; ok is false when a segment is missing.
func lookup(doc map[string]any, segs []string) (any, bool) {
	var cur any = doc
	for _, s := range segs {
		m, isMap := cur.(map[string]any)
		if !isMap {
			return nil, false
		}
		v, ok := m[s]
		if !ok {
			return nil, false
		}
		cur = v
	}
	return cur, true
}

// docPK extracts the partition key components of a document.
func (c *container) docPK(doc map[string]any) []any {
	vals := make([]any, len(c.pk.segs))
	for i, segs := range c.pk.segs {
		v, ok := lookup(doc, segs)
		switch v.(type) {
		case string, float64, bool, nil:
		default:
			ok = false
		}
		if !ok {
			vals[i] = undefinedValue{}
			continue
		}
		vals[i] = v
	}
	return vals
}

// pkKey is the canonical string form of partition key components; two
// partition keys are equal exactly when their keys are equal.
func pkKey(vals []any) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, v := range vals {
		if i > 0 {
			b.WriteByte(',')
		}
		if _, ok := v.(undefinedValue); ok {
			b.WriteString("{}")
			continue
		}
		b.Write(marshalJSON(v))
	}
	b.WriteByte(']')
	return b.String()
}

// parsePKHeader parses the x-ms-documentdb-partitionkey header (a JSON array).
// When exact is true the number of components must match the definition.
func (c *container) parsePKHeader(h string, exact bool) ([]any, *apiError) {
	if h == "" {
		return nil, errBadRequest(msgPKMissing)
	}
	var raw []any
	if s, ok := plainStringPK(h); ok {
		raw = []any{s}
	} else if err := decodeJSON([]byte(h), &raw); err != nil {
		return nil, errBadRequest(msgPKFormat)
	}
	vals := make([]any, len(raw))
	for i, v := range raw {
		switch t := v.(type) {
		case string, float64, bool, nil:
			vals[i] = v
		case map[string]any:
			if len(t) != 0 {
				return nil, errBadRequest(msgPKFormat)
			}
			vals[i] = undefinedValue{}
		default:
			return nil, errBadRequest(msgPKFormat)
		}
	}
	switch {
	case len(vals) > len(c.pk.segs):
		return nil, errBadRequest(msgPKMore)
	case len(vals) < len(c.pk.segs) && (exact || len(vals) == 0):
		return nil, errBadRequest(msgPKFewer)
	}
	return vals, nil
}

// isPKPath reports whether the JSON pointer segments address (a prefix of)
// a partition key path.
func (c *container) isPKPath(segs []string) bool {
	for _, p := range c.pk.segs {
		if len(segs) > len(p) {
			continue
		}
		match := true
		for i := range segs {
			if segs[i] != p[i] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// checkUnique enforces the container's unique key policy for a document about
// to be stored in partition pk (replacing the document with the same id).
func (c *container) checkUnique(pk, id string, body map[string]any) *apiError {
	if len(c.uniqueKeys) == 0 {
		return nil
	}
	p := c.parts[pk]
	if p == nil {
		return nil
	}
	now := c.db.st.now()
	for _, paths := range c.uniqueKeys {
		mine := uniqueTuple(body, paths)
		for _, other := range p.ordered {
			if other.id == id || c.expired(other, now) {
				continue
			}
			if uniqueTuple(other.body, paths) == mine {
				return newError(http.StatusConflict, msgUniqueConflict)
			}
		}
	}
	return nil
}

func uniqueTuple(body map[string]any, paths [][]string) string {
	var b strings.Builder
	for _, segs := range paths {
		v, ok := lookup(body, segs)
		if !ok {
			b.WriteString("u;")
			continue
		}
		b.Write(marshalJSON(v))
		b.WriteByte(';')
	}
	return b.String()
}

// validateID checks a database or container id.
func validateID(id string) *apiError {
	bad := id == "" || len([]rune(id)) > maxIDLength || strings.ContainsAny(id, `/\?#`)
	if bad {
		return errBadRequest("The input name '%s' is invalid. Ensure to provide a unique non-empty string less than '%d' characters.", id, maxIDLength)
	}
	return nil
}

// validateItemID checks an item id at create time, as the gateway does
// (the .NET SDK's id-encoding tests against the service, CosmosItemIdEncodingTests):
// '\' is refused with 400, but '/', '#' and a trailing space are ACCEPTED,
// leaving an item that can then not be read, replaced, patched or deleted
// by id (see urlItemIDError); '?' works everywhere.
func validateItemID(id string) *apiError {
	bad := id == "" || len(id) > maxItemIDBytes || strings.ContainsRune(id, '\\')
	if bad {
		return errBadRequest("The input name '%s' is invalid. Ensure to provide a unique non-empty string less than '%d' characters.", id, maxItemIDBytes+1)
	}
	return nil
}

// urlItemIDError is what the gateway answers to a point operation whose
// URL carries id: 404 when the id contains '/' (the decoded path has one
// segment too many), 401 when it contains '#' or ends with a space (the
// signature the gateway recomputes from the mangled path no longer
// matches), as the .NET SDK's id-encoding tests record. Queries and
// transactional batches carry ids in the body and are not affected.
func urlItemIDError(id string) *apiError {
	switch {
	case strings.ContainsRune(id, '/'):
		return errNotFound()
	case strings.ContainsRune(id, '#'), strings.HasSuffix(id, " "):
		return newError(http.StatusUnauthorized, "The input authorization token can't serve the request. The wrong key is being used or the expected payload is not built as per the protocol.")
	}
	return nil
}

// sortedDatabases lists the databases in creation order.
func sortedDatabases(st *store) []*database {
	out := make([]*database, 0, len(st.dbs))
	for _, db := range st.dbs {
		out = append(out, db)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// sortedContainers lists a database's containers in creation order.
func sortedContainers(db *database) []*container {
	out := make([]*container, 0, len(db.colls))
	for _, c := range db.colls {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// plainStringPK reads the common header ["value"] without the JSON decoder
// when value needs no unescaping: no quote, backslash or control
// character, valid UTF-8. Anything else goes through decodeJSON.
func plainStringPK(h string) (string, bool) {
	if len(h) < 4 || !strings.HasPrefix(h, `["`) || !strings.HasSuffix(h, `"]`) {
		return "", false
	}
	v := h[2 : len(h)-2]
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '"' || c == '\\' || c < 0x20 {
			return "", false
		}
	}
	if !utf8.ValidString(v) {
		return "", false
	}
	return v, true
}
