package localcosmos

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// accountDump is the server's whole account (every database, container,
// offer and document with its system properties, plus the counters behind
// ETags, _rid and session tokens) as bytes, to compare two servers exactly.
func accountDump(s *Server) []byte {
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	return bytes.Join(s.st.snapshotFrames(), nil)
}

// lsnOf is the LSN of a session token "0:-1#<lsn>".
func lsnOf(t testing.TB, token string) int64 {
	t.Helper()
	i := strings.LastIndexByte(token, '#')
	n, err := strconv.ParseInt(token[i+1:], 10, 64)
	if i < 0 || err != nil {
		t.Fatalf("session token %q has no LSN", token)
	}
	return n
}

// reopen closes s and starts a server on the same data directory.
func reopen(t testing.TB, s *Server) *Server {
	t.Helper()
	s.Close()
	return startServer(t, &s.opts)
}

// writeMix makes every kind of change on f's container and returns the
// session token of the last write.
func writeMix(t *testing.T, f *fixture) string {
	t.Helper()
	ctx := testCtx(t)
	for i := range 5 {
		f.create(t, fmt.Sprint("d", i), "i1", "n", i, "text", "<&> ünïcode")
	}
	_, err := f.ct.ReplaceItem(ctx, pkOf("i1"), "d0", item("d0", "i1", "n", 100), nil)
	wantOK(t, err, "replace")
	_, err = f.ct.PatchItem(ctx, pkOf("i1"), "d1", *func() *azcosmos.PatchOperations {
		p := azcosmos.PatchOperations{}
		p.AppendIncrement("/n", 10)
		return &p
	}(), nil)
	wantOK(t, err, "patch")
	_, err = f.ct.DeleteItem(ctx, pkOf("i1"), "d2", nil)
	wantOK(t, err, "delete")
	b := f.ct.NewTransactionalBatch(pkOf("i2"))
	b.CreateItem(item("b1", "i2", "n", 1), nil)
	b.UpsertItem(item("b2", "i2", "n", 2), nil)
	r, err := f.ct.ExecuteTransactionalBatch(ctx, b, nil)
	if err != nil || !r.Success {
		t.Fatalf("batch: %v", err)
	}
	failing := f.ct.NewTransactionalBatch(pkOf("i2"))
	failing.UpsertItem(item("b3", "i2"), nil)
	failing.CreateItem(item("b1", "i2"), nil) // conflict: nothing applies
	r, err = f.ct.ExecuteTransactionalBatch(ctx, failing, nil)
	if err != nil || r.Success {
		t.Fatalf("failing batch: success %v, %v", r.Success, err)
	}
	// Control plane: a second container with throughput, changed and
	// then deleted; the test container's indexing policy replaced.
	_, err = f.db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "gone",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	wantOK(t, err, "create container")
	gone, _ := f.db.NewContainer("gone")
	_, err = gone.CreateItem(ctx, azcosmos.NewPartitionKeyString("x"), []byte(`{"id":"x","pk":"x"}`), nil)
	wantOK(t, err, "create in gone")
	_, err = gone.Delete(ctx, nil)
	wantOK(t, err, "delete container")
	tp := azcosmos.NewManualThroughputProperties(400)
	_, err = f.db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "kept",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}},
		&azcosmos.CreateContainerOptions{ThroughputProperties: &tp})
	wantOK(t, err, "create container with throughput")
	kept, _ := f.db.NewContainer("kept")
	_, err = kept.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(500), nil)
	wantOK(t, err, "replace throughput")
	props, err := f.ct.Read(ctx, nil)
	wantOK(t, err, "read container")
	ttl := int32(3600)
	props.ContainerProperties.DefaultTimeToLive = &ttl
	_, err = f.ct.Replace(ctx, *props.ContainerProperties, nil)
	wantOK(t, err, "replace container")
	last, err := f.ct.UpsertItem(ctx, pkOf("i1"), item("d3", "i1", "n", 33), nil)
	wantOK(t, err, "upsert")
	return *last.SessionToken
}

func TestPersistRestartKeepsAccount(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &Options{DataDir: t.TempDir()})
	token := writeMix(t, f)
	// A query paged before the restart goes on after it.
	pager := f.ct.NewQueryItemsPager("SELECT * FROM c ORDER BY c.id", pkOf("i1"), &azcosmos.QueryOptions{PageSizeHint: 2})
	page, err := pager.NextPage(testCtx(t))
	wantOK(t, err, "first page")
	if page.ContinuationToken == nil {
		t.Fatal("first page has no continuation")
	}
	before := accountDump(f.s)

	s := reopen(t, f.s)
	if after := accountDump(s); !bytes.Equal(before, after) {
		t.Fatalf("account after restart differs:\nbefore %s\nafter  %s", before, after)
	}
	c, err := s.NewClient(noRetryOptions())
	wantOK(t, err, "client")
	t.Cleanup(c.Close)
	ct, _ := c.NewContainer(testDB, testColl)
	rest := ct.NewQueryItemsPager("SELECT * FROM c ORDER BY c.id", pkOf("i1"), &azcosmos.QueryOptions{PageSizeHint: 10, ContinuationToken: page.ContinuationToken})
	next, err := rest.NextPage(testCtx(t))
	wantOK(t, err, "page after restart")
	if got := len(page.Items) + len(next.Items); got != 4 {
		t.Fatalf("pages before and after restart hold %d items, want 4 (d0, d1, d3, d4)", got)
	}
	// Session tokens and ETags go on from where they were.
	old, err := ct.ReadItem(testCtx(t), pkOf("i1"), "d3", nil)
	wantOK(t, err, "read")
	w, err := ct.UpsertItem(testCtx(t), pkOf("i1"), item("d3", "i1", "n", 34), nil)
	wantOK(t, err, "write after restart")
	if lsnOf(t, *w.SessionToken) <= lsnOf(t, token) {
		t.Fatalf("session token after restart %s does not follow %s", *w.SessionToken, token)
	}
	if w.ETag == old.ETag {
		t.Fatalf("write after restart reused ETag %s", w.ETag)
	}
	if _, err := ct.ReplaceItem(testCtx(t), pkOf("i1"), "d3", item("d3", "i1"), &azcosmos.ItemOptions{IfMatchEtag: &old.ETag}); status(err) != http.StatusPreconditionFailed {
		t.Fatalf("replace with the ETag from before the write: status %d, want 412", status(err))
	}
}

func TestPersistCompaction(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := newFixture(t, &Options{DataDir: dir, CompactAfterBytes: 4096})
	ctx := testCtx(t)
	for i := range 60 {
		_, err := f.ct.UpsertItem(ctx, pkOf(fmt.Sprint("i", i%3)), item(fmt.Sprint("d", i%20), fmt.Sprint("i", i%3), "n", i), nil)
		wantOK(t, err, "upsert")
	}
	segs, snaps, err := dirFiles(osFS{}, dir)
	wantOK(t, err, "list")
	if len(snaps) != 1 || len(segs) != 1 || segs[0] != snaps[0] {
		t.Fatalf("after compactions: segments %v, snapshots %v; want one snapshot and its one segment", segs, snaps)
	}
	before := accountDump(f.s)
	s := reopen(t, f.s)
	if !bytes.Equal(before, accountDump(s)) {
		t.Fatal("account after restart from a snapshot differs")
	}
}

func TestPersistDirInUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, &Options{DataDir: dir})
	_, err := NewServer(&Options{DataDir: dir})
	if !errors.Is(err, ErrDataDirInUse) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second server on %s: %v, want ErrDataDirInUse naming the directory", dir, err)
	}
	s.Close()
	s2, err := NewServer(&Options{DataDir: dir})
	wantOK(t, err, "open after close")
	s2.Close()
}

// corruptCase damages a data directory; wantFile names the file the error
// must name ("" when the directory must still open).
type corruptCase struct {
	name   string
	damage func(t *testing.T, dir string) (wantFile string)
}

func segmentFiles(t *testing.T, dir string) []string {
	t.Helper()
	segs, _, err := dirFiles(osFS{}, dir)
	wantOK(t, err, "list")
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = segmentPath(dir, s)
	}
	return out
}

func modify(t *testing.T, path string, fn func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	wantOK(t, err, "read file")
	wantOK(t, os.WriteFile(path, fn(b), 0o644), "write file")
}

func TestPersistDamagedFiles(t *testing.T) {
	t.Parallel()
	lastSeg := func(t *testing.T, dir string) string { s := segmentFiles(t, dir); return s[len(s)-1] }
	cases := []corruptCase{
		{"torn last record is cut off", func(t *testing.T, dir string) string {
			modify(t, lastSeg(t, dir), func(b []byte) []byte { return append(b, frame([]byte(`{"etagSeq":99}`))[:11]...) })
			return ""
		}},
		{"zero tail is cut off", func(t *testing.T, dir string) string {
			modify(t, lastSeg(t, dir), func(b []byte) []byte { return append(b, make([]byte, 100)...) })
			return ""
		}},
		{"flipped byte mid-log", func(t *testing.T, dir string) string {
			p := lastSeg(t, dir)
			modify(t, p, func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b })
			return p
		}},
		{"log truncated mid-record before others", func(t *testing.T, dir string) string {
			p := lastSeg(t, dir)
			modify(t, p, func(b []byte) []byte { return append(b[:20:20], b[40:]...) })
			return p
		}},
		{"snapshot truncated", func(t *testing.T, dir string) string {
			_, snaps, _ := dirFiles(osFS{}, dir)
			p := snapshotPath(dir, snaps[0])
			modify(t, p, func(b []byte) []byte { return b[:len(b)/2] })
			return p
		}},
		{"snapshot without end record", func(t *testing.T, dir string) string {
			_, snaps, _ := dirFiles(osFS{}, dir)
			p := snapshotPath(dir, snaps[0])
			modify(t, p, func(b []byte) []byte {
				frames, _, err := readFrames(p, b, false)
				wantOK(t, err, "frames")
				var out []byte
				for _, fr := range frames[:len(frames)-1] {
					out = append(out, frame(fr)...)
				}
				return out
			})
			return p
		}},
		{"segment missing", func(t *testing.T, dir string) string {
			p := lastSeg(t, dir)
			wantOK(t, os.Remove(p), "remove")
			return p
		}},
		{"torn record in an older segment", func(t *testing.T, dir string) string {
			segs, _, _ := dirFiles(osFS{}, dir)
			next, err := createSegment(osFS{}, dir, segs[len(segs)-1]+1)
			wantOK(t, err, "create segment")
			next.Close()
			p := segmentPath(dir, segs[len(segs)-1])
			modify(t, p, func(b []byte) []byte { return b[:len(b)-3] })
			return p
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			f := newFixture(t, &Options{DataDir: dir, CompactAfterBytes: 8192})
			ctx := testCtx(t)
			for i := range 30 {
				_, err := f.ct.UpsertItem(ctx, pkOf("i1"), item(fmt.Sprint("d", i%10), "i1", "n", i), nil)
				wantOK(t, err, "upsert")
			}
			before := accountDump(f.s)
			f.s.Close()
			wantFile := tc.damage(t, dir)
			s, err := NewServer(&Options{DataDir: dir})
			if wantFile == "" {
				wantOK(t, err, "open")
				defer s.Close()
				if !bytes.Equal(before, accountDump(s)) {
					t.Fatal("account differs after cutting off the torn tail")
				}
				c, _ := s.NewClient(noRetryOptions())
				defer c.Close()
				ct, _ := c.NewContainer(testDB, testColl)
				_, err := ct.UpsertItem(ctx, pkOf("i1"), item("new", "i1"), nil)
				wantOK(t, err, "write after recovery")
				after := accountDump(s)
				s = reopen(t, s)
				if !bytes.Equal(after, accountDump(s)) {
					t.Fatal("write appended after the torn tail was lost")
				}
				return
			}
			if err == nil {
				s.Close()
				t.Fatalf("opened a damaged directory; want an error naming %s", wantFile)
			}
			if !errors.Is(err, ErrDataCorrupt) || !strings.Contains(err.Error(), filepath.Base(wantFile)) {
				t.Fatalf("error %q: want ErrDataCorrupt naming %s", err, wantFile)
			}
		})
	}
}

func TestPersistLogFailureStopsServer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &Options{DataDir: t.TempDir()})
	f.create(t, "a", "i1")
	f.s.st.mu.Lock()
	_ = f.s.st.disk.seg.Close() // the next append fails
	f.s.st.mu.Unlock()
	_, err := f.ct.CreateItem(testCtx(t), pkOf("i1"), item("b", "i1"), nil)
	wantStatus(t, err, http.StatusInternalServerError, "write the log cannot take")
	_, err = f.ct.ReadItem(testCtx(t), pkOf("i1"), "a", nil)
	wantStatus(t, err, http.StatusInternalServerError, "read after the log failed")
}

func TestPersistSnapshotOfManyDocuments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := newFixture(t, &Options{DataDir: dir, CompactAfterBytes: 64 << 10})
	ctx := testCtx(t)
	n := 0
	for range 25 { // 2,500 documents: a snapshot needs several records
		b := f.ct.NewTransactionalBatch(pkOf("i1"))
		for range 100 {
			b.CreateItem(item(fmt.Sprint("d", n), "i1", "n", n), nil)
			n++
		}
		r, err := f.ct.ExecuteTransactionalBatch(ctx, b, nil)
		if err != nil || !r.Success {
			t.Fatalf("batch: %v", err)
		}
	}
	_, snaps, err := dirFiles(osFS{}, dir)
	wantOK(t, err, "list")
	if len(snaps) != 1 {
		t.Fatalf("snapshots %v, want one", snaps)
	}
	data, err := os.ReadFile(snapshotPath(dir, snaps[0]))
	wantOK(t, err, "read snapshot")
	frames, _, err := readFrames("snapshot", data, false)
	wantOK(t, err, "frames")
	if len(frames) < 4 {
		t.Fatalf("snapshot of %d or more documents has %d records; want them split", 2000, len(frames))
	}
	before := accountDump(f.s)
	s := reopen(t, f.s)
	if !bytes.Equal(before, accountDump(s)) {
		t.Fatal("account after restart from a many-record snapshot differs")
	}
	docs, err := s.Documents(testDB, testColl)
	wantOK(t, err, "documents")
	if len(docs) != n {
		t.Fatalf("%d documents after restart, want %d", len(docs), n)
	}
}

func TestPersistDirectUpdates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &Options{DataDir: t.TempDir()})
	f.create(t, "a", "i1", "n", 1)
	f.create(t, "b", "i1", "n", 2)
	err := f.s.UpdateDocuments(testDB, testColl, func(doc map[string]any) bool {
		doc["n"] = 10
		return doc["id"] != "b"
	})
	wantOK(t, err, "update")
	before := accountDump(f.s)
	s := reopen(t, f.s)
	if !bytes.Equal(before, accountDump(s)) {
		t.Fatal("changes made with UpdateDocuments were not kept")
	}
	docs, err := s.Documents(testDB, testColl)
	wantOK(t, err, "documents")
	if len(docs) != 1 || docs[0]["n"] != float64(10) {
		t.Fatalf("documents after restart: %v, want only a with n=10", docs)
	}
}
