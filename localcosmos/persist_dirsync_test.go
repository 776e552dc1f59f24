package localcosmos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// errSimDirSync is the error of the directory fsync a dirSyncFault fails.
var errSimDirSync = errors.New("simulated directory fsync failure")

// dirSyncFault is a simFS whose directory fsync fails once, the first
// one after a compaction (once armed) has created its new segment, while
// the power stays on. The failing fsync does its work before it returns
// the error: after a failed fsync nothing tells what of the directory is
// durable, and the new segment being there is the case that matters.
type dirSyncFault struct {
	*simFS
	mu       sync.Mutex
	armed    bool // the next segment created sets failNext
	failNext bool
	fired    bool
}

func (f *dirSyncFault) arm() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed = true
}

func (f *dirSyncFault) hasFired() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired
}

func (f *dirSyncFault) OpenFile(name string, flag int) (dataFile, error) {
	file, err := f.simFS.OpenFile(name, flag)
	if err == nil && flag&os.O_EXCL != 0 && strings.HasPrefix(filepath.Base(name), walPrefix) {
		f.mu.Lock()
		f.failNext, f.armed = f.armed, false
		f.mu.Unlock()
	}
	return file, err
}

func (f *dirSyncFault) SyncDir(dir string) error {
	if err := f.simFS.SyncDir(dir); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failNext {
		f.failNext, f.fired = false, true
		return errSimDirSync
	}
	return nil
}

// loseNextCall makes the power go at the next call of the file system.
func (s *simFS) loseNextCall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.crashAt = s.calls
}

// dirSyncWriter upserts a few documents over and over, keeping what was
// acknowledged.
type dirSyncWriter struct {
	ct    *azcosmos.ContainerClient
	seq   int
	acked map[killKey]killDoc
}

// write upserts the next value; an error leaves it in flight (returned).
func (w *dirSyncWriter) write(ctx context.Context) (killOp, error) {
	w.seq++
	p := killPut{killKey{PK: "p", ID: fmt.Sprint("d", w.seq%8)}, w.seq}
	op := killOp{Seq: w.seq, Kind: "upsert", Put: []killPut{p}}
	r, err := w.ct.UpsertItem(ctx, azcosmos.NewPartitionKeyString(p.PK), killBody(p), nil)
	if err == nil {
		w.acked[p.killKey] = killDoc{V: p.V, ETag: string(r.ETag)}
	}
	return op, err
}

// dirSyncWrites is more than three segments' worth of dirSyncWriter's
// writes (each record is over 250 bytes).
const dirSyncWrites = 3 * powerCompact / 250

// segmentState is the current segment of s and its size.
func segmentState(s *Server) (seg uint64, size int64) {
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	return s.st.disk.segNo, s.st.disk.segSize
}

// dirSyncRun is a server on a dirSyncFault whose fault has fired.
type dirSyncRun struct {
	sim      *dirSyncFault
	opts     *Options
	s        *Server
	c        *azcosmos.Client
	w        *dirSyncWriter
	inFlight []killOp // writes answered with an error
}

// startDirSync opens a server on a dirSyncFault and writes until a
// compaction's directory fsync has failed.
func startDirSync(t *testing.T) *dirSyncRun {
	t.Helper()
	ctx := testCtx(t)
	r := &dirSyncRun{sim: &dirSyncFault{simFS: newSimFS(-1, rand.New(rand.NewPCG(29, 14)))}}
	r.opts = &Options{DataDir: powerDir, CompactAfterBytes: powerCompact, fs: r.sim}
	var err error
	r.s, err = NewServer(r.opts)
	wantOK(t, err, "open")
	r.c = powerClient(t, r.s)
	wantOK(t, createKillContainer(ctx, r.c), "container")
	ct, _ := r.c.NewContainer(killDB, killColl)
	r.w = &dirSyncWriter{ct: ct, acked: map[killKey]killDoc{}}
	r.sim.arm()
	for !r.sim.hasFired() {
		if r.w.seq == 100 {
			t.Fatal("no compaction in 100 writes")
		}
		if op, err := r.w.write(ctx); err != nil {
			r.inFlight = append(r.inFlight, op)
		}
	}
	return r
}

// powerLoss closes the server and the client after the power was lost
// (now, if nothing the test did made a call since loseNextCall) and
// brings the power back.
func (r *dirSyncRun) powerLoss() {
	if off, _ := r.sim.powerLost(); !off {
		r.sim.cut()
	}
	r.c.Close()
	r.s.Close()
	r.sim.reboot()
}

// TestPersistCompactionDirSyncFailure: the directory fsync after a
// compaction created its new segment fails (the power stays on). Either
// the server stops serving, or it keeps serving and compacting; and a
// power loss that tears the next write must leave a directory that opens
// with every acknowledged write, and compacts again.
func TestPersistCompactionDirSyncFailure(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	r := startDirSync(t)
	s, w, sim, opts := r.s, r.w, r.sim, r.opts
	served, refused := 0, 0
	for range dirSyncWrites {
		op, err := w.write(ctx)
		if err != nil {
			r.inFlight, refused = append(r.inFlight, op), refused+1
			continue
		}
		served++
	}
	if seg, size := segmentState(s); served > 0 && size > 2*powerCompact {
		t.Errorf("after the failed directory fsync the server served %d writes (refused %d) but never compacted again: segment %d holds %d bytes (compaction after %d)",
			served, refused, seg, size, powerCompact)
	}
	sim.loseNextCall()
	if op, err := w.write(ctx); err == nil {
		t.Fatal("a write acknowledged after the power loss")
	} else {
		r.inFlight = append(r.inFlight, op)
	}
	r.powerLoss()

	s, err := NewServer(opts)
	if err != nil {
		t.Fatalf("after the failed directory fsync and a power loss the directory does not open: %v", err)
	}
	defer func() { s.Close() }()
	got, _ := recoveredState(t, s)
	if diff := inFlightKeyDiff(w.acked, got, r.inFlight); diff != "" {
		t.Fatalf("recovered documents are not the acknowledged ones: %s", diff)
	}

	// The reopened directory compacts again.
	c := powerClient(t, s)
	defer c.Close()
	w.ct, _ = c.NewContainer(killDB, killColl)
	for k, d := range got {
		w.acked[k] = d
	}
	start, _ := segmentState(s)
	for range dirSyncWrites {
		_, err := w.write(ctx)
		wantOK(t, err, "write after reopening")
	}
	segs, snaps, err := dirFiles(sim, powerDir)
	wantOK(t, err, "list")
	if len(snaps) != 1 || snaps[0] <= start+1 || len(segs) != 1 || segs[0] != snaps[0] {
		t.Fatalf("after reopening at segment %d and writing three segments' worth: segments %v, snapshots %v; want one newer snapshot and its one segment", start, segs, snaps)
	}
	c.Close()
	s.Close()
	s, err = NewServer(opts)
	wantOK(t, err, "reopen after compacting")
	again, _ := recoveredState(t, s)
	if diff := stateDiff(w.acked, again); diff != "" {
		t.Fatalf("after compacting and reopening: %s", diff)
	}
}

// TestPersistStoppedServerAppendsNothing: a write that passed the
// server's check for a failed data directory just before a compaction's
// directory fsync failed, and then takes the write lock, appends nothing:
// the segment it would append to may no longer be the last one, so a
// power loss tearing its record would leave a directory that does not
// open.
func TestPersistStoppedServerAppendsNothing(t *testing.T) {
	t.Parallel()
	r := startDirSync(t)
	if r.s.st.failure() == nil {
		t.Fatal("the server serves on after the failed directory fsync")
	}
	r.sim.loseNextCall()
	// What a request that was already past the check does under the
	// write lock: a change of the catalog is one log record.
	r.s.st.lock()
	r.s.st.catalogChanged()
	r.s.st.unlock()
	r.powerLoss()
	s, err := NewServer(r.opts)
	if err != nil {
		t.Fatalf("after the late write and a power loss the directory does not open: %v", err)
	}
	defer s.Close()
	got, _ := recoveredState(t, s)
	if diff := inFlightKeyDiff(r.w.acked, got, r.inFlight); diff != "" {
		t.Fatalf("recovered documents are not the acknowledged ones: %s", diff)
	}
}

// inFlightKeyDiff is how got differs from acked, where each document
// may instead hold the value of a write in flight ("" if it does not).
// The writes in flight are too many for inFlightDiff's every subset.
func inFlightKeyDiff(acked, got map[killKey]killDoc, inFlight []killOp) string {
	maybe := map[killKey]map[int]bool{}
	for _, op := range inFlight {
		for _, p := range op.Put {
			if maybe[p.killKey] == nil {
				maybe[p.killKey] = map[int]bool{}
			}
			maybe[p.killKey][p.V] = true
		}
	}
	var diffs []string
	for k, g := range got {
		a, ok := acked[k]
		if (!ok || g.V != a.V || g.ETag != a.ETag) && !maybe[k][g.V] {
			diffs = append(diffs, fmt.Sprintf("%s is v=%d %s, acknowledged v=%d %s", k, g.V, g.ETag, a.V, a.ETag))
		}
	}
	for k, a := range acked {
		if _, ok := got[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s missing (acknowledged v=%d)", k, a.V))
		}
	}
	return strings.Join(diffs, "; ")
}
