package localcosmos

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Lagging replicas.
//
// The service writes to a quorum of a partition's four replicas and, under
// Session consistency, serves a read from any replica unless the read
// carries a session token: a replica that has not applied the token's LSN
// does not serve it. So a read without a token (or with an old one) may
// miss recent writes, while writes and their ETag checks always go to the
// primary. The emulators have one replica and never show this. With
// [Options].Replicas the server does: every write request on a logical partition
// is remembered with an undo record, and a read or query may be served from
// the partition as it was a few writes ago, never older than its session
// token allows and never missing a write older than the lag window. A batch
// is one write, so no read sees half of one.

// ReplicaPolicy models the replicas of every logical partition
// ([Options].Replicas): how far behind the primary a replica may be, and
// which replica serves each read. Package cosmostest implements it with a
// seeded random choice (cosmostest.LagOptions).
type ReplicaPolicy interface {
	// Bounds returns how many of a logical partition's latest write
	// requests a read without a covering session token may miss (at least
	// 1), and how long a write can stay invisible: one older than window
	// (wall clock) has reached every replica. The server asks once.
	Bounds() (versions int, window time.Duration)
	// Behind picks the replica that serves a read: how many of the n (at
	// least 1) newest writes it may miss it has not applied, from 0 (up
	// to date) to n. Concurrent reads call it concurrently; a query calls
	// it once per logical partition, in a fixed order, so a seeded choice
	// repeats for the same order of requests.
	Behind(n int) int
}

// lagState is the server-wide part of the mode.
type lagState struct {
	versions int
	window   time.Duration
	policy   ReplicaPolicy
}

func newLagState(p ReplicaPolicy) *lagState {
	if p == nil {
		return nil
	}
	v, w := p.Bounds()
	return &lagState{versions: max(v, 1), window: w, policy: p}
}

// lagEntry is one write request on a logical partition.
type lagEntry struct {
	before, after int64 // container LSN before and after the write
	at            time.Time
	undo          []undoEntry // in the order applied
}

// recordWrite remembers a write request on partition pk (under the write
// lock). undo lists the documents it changed with their previous versions.
func (s *Server) recordWrite(c *container, pk string, before int64, undo ...undoEntry) {
	if s.lag == nil || len(undo) == 0 {
		return
	}
	if c.lag == nil {
		c.lag = map[string][]lagEntry{}
	}
	now := time.Now()
	log := append(c.lag[pk], lagEntry{before: before, after: c.lsn, at: now, undo: undo})
	// Keep only what a read may still miss.
	drop := 0
	for drop < len(log) && (len(log)-drop > s.lag.versions || now.Sub(log[drop].at) >= s.lag.window) {
		drop++
	}
	c.lag[pk] = append([]lagEntry(nil), log[drop:]...)
}

// forgetLag marks everything written so far as replicated (direct writes
// from tests bypass the undo records).
func (c *container) forgetLag() { c.lag = nil }

// sessionFloor is the LSN a read's session token guarantees (0 for none):
// the highest global LSN among its "<range>:<version>#<lsn>..." entries.
func sessionFloor(r *http.Request) int64 {
	var floor int64
	for _, part := range strings.Split(r.Header.Get("x-ms-session-token"), ",") {
		i := strings.IndexByte(part, ':')
		if i < 0 {
			continue
		}
		f := strings.Split(part[i+1:], "#")
		if len(f) < 2 {
			continue
		}
		if n, err := strconv.ParseInt(f[1], 10, 64); err == nil && n > floor {
			floor = n
		}
	}
	return floor
}

// staleView picks the replica that serves a read of partition pk: it
// returns the undo records to apply (newest first) and the LSN that
// replica has applied (0 when it is up to date). The caller holds the
// store lock.
func (s *Server) staleView(c *container, pk string, floor int64) ([]lagEntry, int64) {
	if s.lag == nil {
		return nil, 0
	}
	log := c.lag[pk]
	now := time.Now()
	n := 0
	for i := len(log) - 1; i >= 0; i-- {
		e := log[i]
		if e.after <= floor || now.Sub(e.at) >= s.lag.window || n >= s.lag.versions {
			break
		}
		n++
	}
	if n == 0 {
		return nil, 0
	}
	k := min(max(s.lag.policy.Behind(n), 0), n)
	if k == 0 {
		return nil, 0
	}
	undone := make([]lagEntry, k)
	for i := range k {
		undone[i] = log[len(log)-1-i]
	}
	return undone, undone[k-1].before
}

// staleOverrides maps the ids changed by the undone writes to the version
// the lagging replica has (nil: absent there).
func staleOverrides(undone []lagEntry) map[string]*document {
	out := map[string]*document{}
	for _, e := range undone { // newest first: older records overwrite
		for i := len(e.undo) - 1; i >= 0; i-- {
			u := e.undo[i]
			out[u.id] = u.prev
		}
	}
	return out
}

// laggedGet is c.get as served by a possibly lagging replica; lsn is the
// replica's progress for the session token (0: up to date).
func (s *Server) laggedGet(c *container, pk, id string, floor int64) (d *document, lsn int64) {
	undone, lsn := s.staleView(c, pk, floor)
	if undone == nil {
		return c.get(pk, id), 0
	}
	if prev, ok := staleOverrides(undone)[id]; ok {
		if prev == nil || c.expired(prev, c.db.st.now()) {
			return nil, lsn
		}
		return prev, lsn
	}
	return c.get(pk, id), lsn
}

// laggedDocs turns the (live, creation-ordered) documents a query reads
// into what lagging replicas serve: each logical partition in the query's
// scope independently. inScope says whether a document older replicas
// still have belongs to the query's scope. lsn is the lowest progress of
// the replicas used (0: all up to date).
func (s *Server) laggedDocs(c *container, docs []*document, floor int64, inScope func(*document) bool) ([]*document, int64) {
	if s.lag == nil || len(c.lag) == 0 {
		return docs, 0
	}
	over := map[string]map[string]*document{}
	var lsn int64
	// In a fixed order, so that a seeded run draws the same replicas.
	pks := make([]string, 0, len(c.lag))
	for pk := range c.lag {
		pks = append(pks, pk)
	}
	sort.Strings(pks)
	for _, pk := range pks {
		undone, l := s.staleView(c, pk, floor)
		if undone == nil {
			continue
		}
		over[pk] = staleOverrides(undone)
		if lsn == 0 || l < lsn {
			lsn = l
		}
	}
	if len(over) == 0 {
		return docs, 0
	}
	now := c.db.st.now()
	out := make([]*document, 0, len(docs))
	seen := map[string]map[string]bool{}
	for _, d := range docs {
		o, ok := over[d.pk][d.id]
		if !ok {
			out = append(out, d)
			continue
		}
		if seen[d.pk] == nil {
			seen[d.pk] = map[string]bool{}
		}
		seen[d.pk][d.id] = true
		if o != nil && !c.expired(o, now) {
			out = append(out, o)
		}
	}
	for pk, m := range over {
		for id, o := range m {
			if o == nil || seen[pk][id] || c.expired(o, now) || !inScope(o) {
				continue
			}
			out = append(out, o)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out, lsn
}

// readSessionToken is the token of a read served by a replica at lsn (0:
// up to date, the container's latest).
func readSessionToken(c *container, lsn int64) string {
	if lsn == 0 {
		return sessionToken(c)
	}
	return "0:-1#" + strconv.FormatInt(lsn, 10)
}
