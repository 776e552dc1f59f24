package localcosmos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// The kill test: a writer process (this test binary, re-executed with
// envKillDir set; see TestMain) serves a data directory and writes to it
// through the REST API, printing each write before it is sent (INTENT) and
// once it is acknowledged (ACK). The test SIGKILLs it at a random moment,
// again and again, compaction running every few writes, and after each
// kill opens the directory and compares it with the acknowledged writes.
//
// Contract checked: every acknowledged write is there, exactly (same
// _etag); nothing else is, except the single write in flight when the
// process died, which may or may not be there, and a batch in flight is
// there whole or not at all.

const (
	envKillDir  = "COSMOSTEST_KILL_DIR"
	envKillSeed = "COSMOSTEST_KILL_SEED"
	killDB      = "db"
	killColl    = "c"
	killCompact = 2048
)

// killKey is a document of the writer's container.
type killKey struct{ PK, ID string }

// killOp is one write the writer makes: the documents it stores (with
// their new value v) and deletes. A batch is several at once.
type killOp struct {
	Seq  int       `json:"seq"`
	Kind string    `json:"kind"`
	Put  []killPut `json:"put,omitempty"`
	Del  []killKey `json:"del,omitempty"`
}

type killPut struct {
	killKey
	V int `json:"v"`
}

// killAck is what the acknowledgement of op Seq returned.
type killAck struct {
	Seq   int               `json:"seq"`
	ETags map[string]string `json:"etags"` // by killKey.String()
	LSN   int64             `json:"lsn"`
}

func (k killKey) String() string { return k.PK + "/" + k.ID }

// killDoc is the expected state of one document.
type killDoc struct {
	V    int
	ETag string // "" when unknown (the in-flight write)
}

// runKillWriter is the writer process; it never returns normally.
func runKillWriter(dir string) {
	seed, _ := strconv.ParseUint(os.Getenv(envKillSeed), 10, 64)
	out := func(kind string, v any) {
		b, _ := json.Marshal(v)
		_, _ = os.Stdout.Write([]byte(kind + " " + string(b) + "\n"))
	}
	fail := func(err error) {
		out("ERROR", err.Error())
		os.Exit(3)
	}
	s, err := NewServer(&Options{DataDir: dir, CompactAfterBytes: killCompact})
	if err != nil {
		fail(err)
	}
	c, err := s.NewClient(noRetryOptions())
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	if err := createKillContainer(ctx, c); err != nil {
		fail(err)
	}
	ct, _ := c.NewContainer(killDB, killColl)
	docs, err := s.Documents(killDB, killColl)
	if err != nil {
		fail(err)
	}
	w := &killWriter{ct: ct, rng: rand.New(rand.NewPCG(seed, 1)), seed: seed, live: map[string][]string{}}
	for _, d := range docs {
		pk := d["pk"].(string)
		w.live[pk] = append(w.live[pk], d["id"].(string))
	}
	out("READY", nil)
	for seq := 1; ; seq++ {
		op := w.next(seq)
		out("INTENT", op)
		ack, err := w.do(ctx, op)
		if err != nil {
			fail(fmt.Errorf("op %d (%s): %w", seq, op.Kind, err))
		}
		out("ACK", ack)
	}
}

// createKillContainer creates the writer's database and container, unless
// they exist.
func createKillContainer(ctx context.Context, c *azcosmos.Client) error {
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: killDB}, nil); err != nil && status(err) != http.StatusConflict {
		return err
	}
	db, _ := c.NewDatabase(killDB)
	_, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: killColl,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	if err != nil && status(err) != http.StatusConflict {
		return err
	}
	return nil
}

// killWriter chooses and makes the writer's writes.
type killWriter struct {
	ct   *azcosmos.ContainerClient
	rng  *rand.Rand
	seed uint64
	n    int
	live map[string][]string // ids by partition key
}

func (w *killWriter) newKey(pk string) killKey {
	w.n++
	return killKey{PK: pk, ID: fmt.Sprintf("s%d-%d", w.seed, w.n)}
}

// existing picks a live document of partition pk, or ok false.
func (w *killWriter) existing(pk string) (killKey, bool) {
	ids := w.live[pk]
	if len(ids) == 0 {
		return killKey{}, false
	}
	return killKey{PK: pk, ID: ids[w.rng.IntN(len(ids))]}, true
}

func (w *killWriter) next(seq int) killOp {
	pk := fmt.Sprint("p", w.rng.IntN(4))
	op := killOp{Seq: seq}
	k, ok := w.existing(pk)
	switch r := w.rng.IntN(10); {
	case r < 3 || !ok:
		op.Kind = "create"
		op.Put = []killPut{{w.newKey(pk), seq}}
	case r < 5:
		op.Kind = "replace"
		op.Put = []killPut{{k, seq}}
	case r < 7:
		op.Kind = "patch"
		op.Put = []killPut{{k, seq}}
	case r < 8:
		op.Kind = "delete"
		op.Del = []killKey{k}
	default:
		op.Kind = "batch"
		op.Put = []killPut{{w.newKey(pk), seq}, {w.newKey(pk), seq}}
		if other, ok2 := w.existing(pk); ok2 && other != k {
			op.Put = append(op.Put, killPut{other, seq})
		}
		op.Del = []killKey{k}
	}
	return op
}

func killBody(p killPut) []byte {
	b, _ := json.Marshal(map[string]any{"id": p.ID, "pk": p.PK, "v": p.V, "pad": strings.Repeat("x", 64)})
	return b
}

// do makes op and returns its acknowledgement.
func (w *killWriter) do(ctx context.Context, op killOp) (killAck, error) {
	ack := killAck{Seq: op.Seq, ETags: map[string]string{}}
	var r azcosmos.ItemResponse
	var err error
	switch op.Kind {
	case "create":
		p := op.Put[0]
		r, err = w.ct.CreateItem(ctx, azcosmos.NewPartitionKeyString(p.PK), killBody(p), nil)
	case "replace":
		p := op.Put[0]
		r, err = w.ct.ReplaceItem(ctx, azcosmos.NewPartitionKeyString(p.PK), p.ID, killBody(p), nil)
	case "patch":
		p := op.Put[0]
		var ops azcosmos.PatchOperations
		ops.AppendSet("/v", p.V)
		r, err = w.ct.PatchItem(ctx, azcosmos.NewPartitionKeyString(p.PK), p.ID, ops, nil)
	case "delete":
		k := op.Del[0]
		r, err = w.ct.DeleteItem(ctx, azcosmos.NewPartitionKeyString(k.PK), k.ID, nil)
	case "batch":
		return w.doBatch(ctx, op)
	}
	if err != nil {
		return ack, err
	}
	for _, p := range op.Put {
		ack.ETags[p.killKey.String()] = string(r.ETag)
	}
	ack.LSN = sessionLSN(*r.SessionToken)
	w.applied(op)
	return ack, nil
}

func (w *killWriter) doBatch(ctx context.Context, op killOp) (killAck, error) {
	ack := killAck{Seq: op.Seq, ETags: map[string]string{}}
	b := w.ct.NewTransactionalBatch(azcosmos.NewPartitionKeyString(op.Put[0].PK))
	for i, p := range op.Put {
		if i < 2 {
			b.CreateItem(killBody(p), nil)
		} else {
			b.ReplaceItem(p.ID, killBody(p), nil)
		}
	}
	b.DeleteItem(op.Del[0].ID, nil)
	r, err := w.ct.ExecuteTransactionalBatch(ctx, b, nil)
	if err != nil {
		return ack, err
	}
	if !r.Success {
		return ack, fmt.Errorf("batch failed: %+v", r.OperationResults)
	}
	for i, p := range op.Put {
		ack.ETags[p.killKey.String()] = string(r.OperationResults[i].ETag)
	}
	ack.LSN = sessionLSN(r.SessionToken)
	w.applied(op)
	return ack, nil
}

func (w *killWriter) applied(op killOp) {
	for _, k := range op.Del {
		ids := w.live[k.PK]
		for i, id := range ids {
			if id == k.ID {
				w.live[k.PK] = append(ids[:i:i], ids[i+1:]...)
				break
			}
		}
	}
	for _, p := range op.Put {
		if !contains(w.live[p.PK], p.ID) {
			w.live[p.PK] = append(w.live[p.PK], p.ID)
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func sessionLSN(token string) int64 {
	n, _ := strconv.ParseInt(token[strings.LastIndexByte(token, '#')+1:], 10, 64)
	return n
}

// killRun is what one writer process printed before it died.
type killRun struct {
	ready    bool
	acked    []killOp
	acks     []killAck
	inFlight *killOp
	errLine  string
}

// runWriterAndKill starts a writer on dir and SIGKILLs it after ackTarget
// acknowledged writes plus a random pause (or, with ackTarget < 0, at a
// random moment while it starts up).
func runWriterAndKill(t *testing.T, dir string, seed uint64, ackTarget int, pause time.Duration) killRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envKillDir+"="+dir, envKillSeed+"="+strconv.FormatUint(seed, 10))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var run killRun
	var pending *killOp
	var once sync.Once
	kill := func() { once.Do(func() { _ = cmd.Process.Kill() }) }
	// A writer that stops printing (it should not) is killed anyway, so
	// the test fails instead of hanging.
	watchdog := time.AfterFunc(time.Minute, kill)
	defer watchdog.Stop()
	defer func() { // also when the test fails half-way
		kill()
		for range lines {
		}
		_ = cmd.Wait()
	}()
	if ackTarget < 0 {
		time.Sleep(pause)
		kill()
	}
	for line := range lines {
		kind, payload, _ := strings.Cut(line, " ")
		switch kind {
		case "READY":
			run.ready = true
			// The writer holds the directory: this process is refused.
			// (Not when it was killed during start-up: its READY line
			// can arrive after the kill, and then the directory is free.)
			if ackTarget >= 0 {
				if s, err := NewServer(&Options{DataDir: dir}); !errors.Is(err, ErrDataDirInUse) {
					if s != nil {
						s.Close()
					}
					t.Fatalf("opened %s while the writer process serves it: %v, want ErrDataDirInUse", dir, err)
				}
			}
			if ackTarget == 0 {
				time.Sleep(pause)
				kill()
			}
		case "INTENT":
			var op killOp
			if err := json.Unmarshal([]byte(payload), &op); err != nil {
				t.Fatalf("writer printed %q: %v", line, err)
			}
			pending = &op
		case "ACK":
			var ack killAck
			if err := json.Unmarshal([]byte(payload), &ack); err != nil || pending == nil || ack.Seq != pending.Seq {
				t.Fatalf("writer printed %q after intent %+v: %v", line, pending, err)
			}
			run.acked = append(run.acked, *pending)
			run.acks = append(run.acks, ack)
			pending = nil
			if len(run.acked) == ackTarget {
				time.Sleep(pause)
				kill()
			}
		case "ERROR":
			run.errLine = payload
		}
	}
	if run.errLine != "" {
		t.Fatalf("writer failed: %s", run.errLine)
	}
	run.inFlight = pending
	return run
}

// applyKill applies op to state; etags nil means unknown (in flight).
func applyKill(state map[killKey]killDoc, op killOp, etags map[string]string) {
	for _, k := range op.Del {
		delete(state, k)
	}
	for _, p := range op.Put {
		state[p.killKey] = killDoc{V: p.V, ETag: etags[p.killKey.String()]}
	}
}

func copyState(m map[killKey]killDoc) map[killKey]killDoc {
	out := make(map[killKey]killDoc, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// stateMatches reports how got differs from want ("" if it does not); an
// empty ETag in want matches any.
func stateDiff(want, got map[killKey]killDoc) string {
	var diffs []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s missing (want v=%d)", k, w.V))
		case g.V != w.V || (w.ETag != "" && g.ETag != w.ETag):
			diffs = append(diffs, fmt.Sprintf("%s is v=%d %s, want v=%d %s", k, g.V, g.ETag, w.V, w.ETag))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s (v=%d) should not exist", k, g.V))
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "; ")
}

// recoveredState opens dir and reads the writer's container.
func recoveredState(t *testing.T, s *Server) (map[killKey]killDoc, bool) {
	t.Helper()
	docs, err := s.Documents(killDB, killColl)
	if err != nil {
		return map[killKey]killDoc{}, false
	}
	out := map[killKey]killDoc{}
	for _, d := range docs {
		out[killKey{PK: d["pk"].(string), ID: d["id"].(string)}] = killDoc{V: int(d["v"].(float64)), ETag: d["_etag"].(string)}
	}
	return out, true
}

func TestPersistKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	state := map[killKey]killDoc{}
	seenETags := map[string]bool{}
	var maxLSN int64
	inFlightKept, inFlightLost := 0, 0
	for loop := range 30 {
		target, pause := rng.IntN(40), time.Duration(rng.IntN(3000))*time.Microsecond
		if loop%5 == 4 {
			target, pause = -1, time.Duration(rng.IntN(40))*time.Millisecond // during start-up
		}
		run := runWriterAndKill(t, dir, seed+uint64(loop), target, pause)
		want := copyState(state)
		for i, op := range run.acked {
			applyKill(want, op, run.acks[i].ETags)
			for _, e := range run.acks[i].ETags {
				seenETags[e] = true
			}
			maxLSN = max(maxLSN, run.acks[i].LSN)
		}
		s, err := NewServer(&Options{DataDir: dir, CompactAfterBytes: killCompact})
		if err != nil {
			t.Fatalf("loop %d: reopen after SIGKILL: %v", loop, err)
		}
		got, exists := recoveredState(t, s)
		diff := stateDiff(want, got)
		if diff != "" && run.inFlight != nil {
			withFlight := copyState(want)
			applyKill(withFlight, *run.inFlight, nil)
			if d2 := stateDiff(withFlight, got); d2 == "" {
				diff = ""
				inFlightKept++
			} else {
				diff = fmt.Sprintf("without the write in flight (%+v): %s; with it: %s", *run.inFlight, diff, d2)
			}
		} else if run.inFlight != nil {
			inFlightLost++
		}
		if diff != "" {
			s.Close()
			t.Fatalf("loop %d (killed after %d acknowledged writes): recovered state is wrong: %s", loop, len(run.acked), diff)
		}
		if exists {
			checkResumes(t, s, got, seenETags, maxLSN)
		}
		state = got
		s.Close()
	}
	t.Logf("writes in flight at the kill: %d recovered, %d not", inFlightKept, inFlightLost)
}

// checkResumes makes one write after recovery: it must get a session LSN
// beyond every acknowledged one and an ETag never seen, and is added to
// state.
func checkResumes(t *testing.T, s *Server, state map[killKey]killDoc, seenETags map[string]bool, maxLSN int64) {
	t.Helper()
	c, err := s.NewClient(noRetryOptions())
	wantOK(t, err, "client")
	defer c.Close()
	ct, _ := c.NewContainer(killDB, killColl)
	k := killKey{PK: "probe", ID: fmt.Sprint("probe-", len(seenETags))}
	r, err := ct.UpsertItem(testCtx(t), azcosmos.NewPartitionKeyString(k.PK), killBody(killPut{k, -1}), nil)
	wantOK(t, err, "write after recovery")
	if lsn := sessionLSN(*r.SessionToken); lsn <= maxLSN {
		t.Fatalf("write after recovery got session token %s; acknowledged writes had reached LSN %d", *r.SessionToken, maxLSN)
	}
	if seenETags[string(r.ETag)] {
		t.Fatalf("write after recovery reused ETag %s", r.ETag)
	}
	state[k] = killDoc{V: -1, ETag: string(r.ETag)}
}
