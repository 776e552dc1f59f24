package localcosmos

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// The power-loss test: a workload runs on a data directory of a simFS
// (simfs_test.go) whose power is lost at file system call k, for every k
// the workload makes; then the power comes back and the directory must
// open, holding exactly what was acknowledged. SIGKILL (TestPersistKill)
// keeps the page cache, so it cannot show a write that was never fsynced;
// this does.
//
// The workload opens a directory that does not exist yet (two levels of
// it), creates a database and a container, and makes writes of every kind
// (persist_kill_test.go's killWriter) with compaction every few writes, so
// it crosses appends, group commits (three writes sharing fsyncs),
// compactions, snapshots and their renames, removals of old files, and a
// clean restart in the middle.

var powerLossSeed = flag.Uint64("powerloss.seed", 0, "seed of TestPersistPowerLoss (0: from the clock)")

const (
	powerDir     = "/sim/data"
	powerCompact = 4096
	powerWrites  = 28
	powerRestart = 15 // the workload restarts the server before this write
)

// powerRun is what a workload had acknowledged when the power was lost.
type powerRun struct {
	containerAcked bool
	acked          []killOp
	acks           []killAck
	inFlight       []killOp // answered with an error: whole or not at all
	groups         int      // group commits all of whose writes were acknowledged
}

func powerOptions(sim *simFS) *Options {
	return &Options{DataDir: powerDir, CompactAfterBytes: powerCompact, fs: sim}
}

// powerClient is an in-process client of s that makes one try per
// request.
func powerClient(t *testing.T, s *Server) *azcosmos.Client {
	t.Helper()
	opts := noRetryOptions()
	opts.Transport = &http.Client{Transport: s.InProcessTransport()}
	c, err := s.NewClient(opts)
	wantOK(t, err, "client")
	return c
}

// runPowerWorkload runs the workload on sim until a request fails (the
// power is lost) or it is done, and closes its server.
func runPowerWorkload(t *testing.T, sim *simFS, seed uint64) powerRun {
	t.Helper()
	var run powerRun
	ctx := testCtx(t)
	s, err := NewServer(powerOptions(sim))
	if err != nil {
		return run
	}
	c := powerClient(t, s)
	defer func() { // both nil after a failed restart
		if s != nil {
			c.Close()
			s.Close()
		}
	}()
	if err := createKillContainer(ctx, c); err != nil {
		return run
	}
	run.containerAcked = true
	ct, _ := c.NewContainer(killDB, killColl)
	w := &killWriter{ct: ct, rng: rand.New(rand.NewPCG(seed, 1)), seed: seed, live: map[string][]string{}}
	var groupSeg uint64
	restarted := false
	for seq := 1; seq <= powerWrites; seq++ {
		if seq >= powerRestart && !restarted {
			restarted = true
			c.Close()
			s.Close()
			if s, err = NewServer(powerOptions(sim)); err != nil {
				s = nil
				return run
			}
			c = powerClient(t, s)
			w.ct, _ = c.NewContainer(killDB, killColl)
		}
		// One group commit per segment, where its records fit.
		if seg, ok := groupFits(s); ok && seg != groupSeg && seq+2 <= powerWrites {
			groupSeg = seg
			if !run.group(ctx, t, s, sim, w, seq) {
				return run
			}
			run.groups++
			seq += 2
			continue
		}
		op := w.next(seq)
		ack, err := w.do(ctx, op)
		if err != nil {
			run.inFlight = append(run.inFlight, op)
			return run
		}
		run.acked, run.acks = append(run.acked, op), append(run.acks, ack)
	}
	return run
}

// groupSize is the three records of a group commit, with room to spare.
const groupSize = 3 * 800

// groupFits reports whether a group commit's three records fit in the
// current segment, seg, before it is compacted: a compaction in the middle
// of the group would wait for the held fdatasync with the store locked.
func groupFits(s *Server) (seg uint64, ok bool) {
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	return s.st.disk.segNo, s.st.disk.segSize+groupSize < powerCompact
}

// group makes three creates that share fsyncs: the first one's fdatasync
// is held until the other two have appended their records, so it covers
// the first record only and one fdatasync covers the other two. It
// reports whether all three were acknowledged.
func (r *powerRun) group(ctx context.Context, t *testing.T, s *Server, sim *simFS, w *killWriter, seq int) bool {
	t.Helper()
	ops := make([]killOp, 3)
	for i := range ops {
		pk := fmt.Sprint("p", i)
		ops[i] = killOp{Seq: seq + i, Kind: "create", Put: []killPut{{w.newKey(pk), seq + i}}}
	}
	type result struct {
		ack killAck
		err error
	}
	results := make([]chan result, len(ops))
	start := func(i int) {
		results[i] = make(chan result, 1)
		go func() {
			ack, err := createOnly(ctx, w.ct, ops[i])
			results[i] <- result{ack, err}
		}()
	}
	held := sim.holdNextSync()
	start(0)
	select {
	case <-held.started:
		calls := sim.callCount()
		start(1)
		start(2)
		// Both append (one write call each) while the first fdatasync
		// waits, unless the power is lost first.
		err := sim.waitCalls(ctx, calls+2)
		if err == nil {
			// Each appends under the store's write lock, and counts its
			// record for the fdatasync only after the write call: once
			// the lock is free, both records are counted.
			s.st.mu.Lock()
			s.st.mu.Unlock()
		}
		close(held.release)
		if err != nil {
			t.Fatal(err)
		}
	case res := <-results[0]: // failed before its fdatasync
		sim.dropHold()
		results[0] <- res
		ops, results = ops[:1], results[:1]
	}
	all := true
	for i, ch := range results {
		res := <-ch
		if res.err != nil {
			r.inFlight = append(r.inFlight, ops[i])
			all = false
			continue
		}
		w.applied(ops[i])
		r.acked, r.acks = append(r.acked, ops[i]), append(r.acks, res.ack)
	}
	return all
}

// createOnly makes create op, like killWriter.do but without touching
// the writer (the group's creates run at once).
func createOnly(ctx context.Context, ct *azcosmos.ContainerClient, op killOp) (killAck, error) {
	p := op.Put[0]
	r, err := ct.CreateItem(ctx, azcosmos.NewPartitionKeyString(p.PK), killBody(p), nil)
	if err != nil {
		return killAck{}, err
	}
	return killAck{Seq: op.Seq, ETags: map[string]string{p.killKey.String(): string(r.ETag)}, LSN: sessionLSN(*r.SessionToken)}, nil
}

func TestPersistPowerLoss(t *testing.T) {
	t.Parallel()
	seed := *powerLossSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-powerloss.seed to repeat)", seed)
	// A run without a power loss counts the calls the workload makes; it
	// makes the same ones (in the same order) each time.
	dry := newSimFS(-1, rand.New(rand.NewPCG(seed, 0)))
	full := runPowerWorkload(t, dry, seed)
	if len(full.acked) != powerWrites || len(full.inFlight) != 0 {
		t.Fatalf("without a power loss %d of %d writes were acknowledged (%d failed)", len(full.acked), powerWrites, len(full.inFlight))
	}
	calls := dry.callCount()
	checkCovered(t, dry, full)
	failed := 0
	for k := 0; k <= calls; k++ {
		ok := t.Run(fmt.Sprintf("crash_at_%03d", k), func(t *testing.T) {
			sim := newSimFS(k, rand.New(rand.NewPCG(seed, uint64(k)+1)))
			run := runPowerWorkload(t, sim, seed)
			if k == calls {
				sim.cut()
			}
			off, at := sim.powerLost()
			if !off {
				t.Fatalf("the power was to be lost at call %d of %d, but the workload made other calls: %s", k, calls, traceDiff(dry.trace, sim.trace))
			}
			sim.reboot()
			checkRecovered(t, sim, run, at)
		})
		if !ok {
			failed++
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d crash points failed (seed %d)", failed, calls+1, seed)
	}
}

// traceDiff is where two runs' calls part.
func traceDiff(a, b []string) string {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			at := func(t []string) string {
				if i < len(t) {
					return t[i]
				}
				return "(no more calls)"
			}
			return fmt.Sprintf("call %d is %q, was %q; before it: %s", i, at(b), at(a), strings.Join(a[max(0, i-8):i], "; "))
		}
	}
	return "none"
}

// checkCovered fails the test unless the workload (run, on sim without a
// power loss) made group commits, compactions and a restart that
// truncated the log: the calls the power-loss test must crash at.
func checkCovered(t *testing.T, sim *simFS, run powerRun) {
	t.Helper()
	count := func(prefix string) int {
		n := 0
		for _, c := range sim.trace {
			if strings.HasPrefix(c, prefix) {
				n++
			}
		}
		return n
	}
	if run.groups < 2 || count("rename snapshot-") < 2 || count("remove wal-") < 2 || count("truncate wal-") < 1 {
		t.Fatalf("the workload made %d group commits, %d snapshots, %d segment removals and %d truncations; want 2, 2, 2 and 1 at least:\n%s",
			run.groups, count("rename snapshot-"), count("remove wal-"), count("truncate wal-"), strings.Join(sim.trace, "\n"))
	}
}

// checkRecovered opens the rebooted sim and compares it with what run had
// acknowledged; at names the call the power was lost at.
func checkRecovered(t *testing.T, sim *simFS, run powerRun, at string) {
	t.Helper()
	s, err := NewServer(powerOptions(sim))
	if err != nil {
		t.Fatalf("power lost at %s: the directory does not open: %v", at, err)
	}
	defer func() { s.Close() }()
	want := map[killKey]killDoc{}
	seenETags := map[string]bool{}
	var maxLSN int64
	for i, op := range run.acked {
		applyKill(want, op, run.acks[i].ETags)
		for _, e := range run.acks[i].ETags {
			seenETags[e] = true
		}
		maxLSN = max(maxLSN, run.acks[i].LSN)
	}
	got, exists := recoveredState(t, s)
	if run.containerAcked && !exists {
		t.Fatalf("power lost at %s: the acknowledged container is gone", at)
	}
	if diff := inFlightDiff(want, got, run.inFlight); diff != "" {
		t.Fatalf("power lost at %s: recovered documents are not the acknowledged ones (%d writes, %d in flight): %s", at, len(run.acked), len(run.inFlight), diff)
	}
	if !exists {
		return
	}
	checkResumes(t, s, got, seenETags, maxLSN)
	// What recovery cut off and appended is on disk too.
	s.Close()
	if s, err = NewServer(powerOptions(sim)); err != nil {
		t.Fatalf("power lost at %s: reopening after recovery: %v", at, err)
	}
	again, _ := recoveredState(t, s)
	if diff := stateDiff(got, again); diff != "" {
		t.Fatalf("power lost at %s: a restart after recovery changed the documents: %s", at, diff)
	}
}

// inFlightDiff is how got differs from want with every subset of the
// writes in flight applied, in order ("" if it equals one of them).
func inFlightDiff(want, got map[killKey]killDoc, inFlight []killOp) string {
	first := ""
	for mask := 0; mask < 1<<len(inFlight); mask++ {
		w := copyState(want)
		for i, op := range inFlight {
			if mask&(1<<i) != 0 {
				applyKill(w, op, nil)
			}
		}
		d := stateDiff(w, got)
		if d == "" {
			return ""
		}
		if mask == 0 {
			first = d
		}
	}
	return first
}
