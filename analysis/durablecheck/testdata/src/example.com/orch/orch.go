// Package orch has one orchestration per rule, each doing what the rule
// forbids, and the same constructs where they are allowed.
package orch

import (
	crand "crypto/rand"
	"fmt"
	"log"
	"log/slog"
	"math/rand"
	randv2 "math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"example.com/helpers"
	"github.com/duroxide-go/cdb/durable"
	"github.com/google/uuid"
)

var (
	counter int
	cache   = map[string]string{}
	state   struct{ n int }
	mu      sync.Mutex
	hits    atomic.Int64
	ptr     = new(int)
)

func Clock(ctx *durable.OrchestrationContext, _ string) (string, error) {
	start := time.Now()       // want `time\.Now in orchestration code: use ctx\.UTCNow\(\)`
	_ = time.Since(start)     // want `time\.Since in orchestration code: use ctx\.UTCNow\(\)`
	time.Sleep(time.Second)   // want `time\.Sleep in orchestration code: use durable\.NewTimer\(ctx, d\)`
	<-time.After(time.Second) // want `time\.After in orchestration code: use durable\.NewTimer` `channel receive in orchestration code`
	_, err := durable.NewTimer(ctx, time.Second).Await()
	return start.Format(time.RFC3339), err // methods of time.Time are fine
}

func Random(ctx *durable.OrchestrationContext, _ string) (string, error) {
	n := rand.Intn(10)               // want `math/rand\.Intn in orchestration code: take random values from ctx\.NewGUID\(\)`
	r := rand.New(rand.NewSource(1)) // want `math/rand\.New in orchestration code` `math/rand\.NewSource in orchestration code`
	_ = r.Int()                      // want `math/rand\.Int in orchestration code`
	b := make([]byte, 8)
	_, _ = crand.Read(b)         // want `crypto/rand\.Read in orchestration code`
	id := uuid.New()             // want `uuid\.New in orchestration code: use ctx\.NewGUID\(\)`
	_ = uuid.NewString()         // want `uuid\.NewString in orchestration code: use ctx\.NewGUID\(\)`
	parsed, _ := uuid.Parse("x") // parsing is fine
	return fmt.Sprint(n, id.String(), parsed), nil
}

func Concurrency(ctx *durable.OrchestrationContext, _ string) (string, error) {
	ch := make(chan int, 1)
	go func() { ch <- 1 }() // want `go statement in orchestration code: use durable\.Go\(ctx, fn\)` `channel send in orchestration code`
	ch <- 2                 // want `channel send in orchestration code: wait on durable futures`
	v := <-ch               // want `channel receive in orchestration code`
	select {                // want `select statement in orchestration code: use ctx\.Select\(futures\.\.\.\)`
	case ch <- 3:
	case v = <-ch:
	default:
	}
	for x := range ch { // want `range over a channel in orchestration code`
		v += x
	}
	close(ch) // want `close of a channel in orchestration code`
	var local sync.Mutex
	local.Lock()   // want `\(\*sync\.Mutex\)\.Lock in orchestration code: orchestration code runs one block at a time and needs no locks`
	local.Unlock() // want `\(\*sync\.Mutex\)\.Unlock in orchestration code`
	var wg sync.WaitGroup
	wg.Wait()                      // want `\(\*sync\.WaitGroup\)\.Wait in orchestration code`
	_ = hits.Add(1)                // want `\(\*atomic\.Int64\)\.Add in orchestration code`
	atomic.AddInt32(new(int32), 1) // want `atomic\.AddInt32 in orchestration code`
	// The durable way: a block and a select over futures.
	blk := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
		return durable.CallActivity[string](ctx, "A", "").Await()
	})
	ctx.Select(blk, durable.NewTimer(ctx, time.Second))
	return fmt.Sprint(v), nil
}

func MapOrder(ctx *durable.OrchestrationContext, in map[string]string) (string, error) {
	for range in { // want `range over a map that reaches durable\.NewTimer in orchestration code: map order is random; range over the sorted keys`
		durable.NewTimer(ctx, time.Second)
	}
	for k := range in { // want `range over a map that reaches durable\.CallActivity\[string\] in orchestration code`
		durable.CallActivity[string](ctx, k, nil)
	}
	for k := range in { // want `range over a map that reaches notify in orchestration code`
		notify(ctx, k)
	}
	n := 0
	for k, v := range in { // order does not reach history: fine
		n += len(k) + len(v)
		ctx.TraceInfo(k)
		_, _, _ = durable.KVValue[string](ctx, k)
		_, _ = ctx.KVValue(k)
		_ = ctx.KVKeys()
		_ = ctx.KVValues()
		_ = ctx.KVLen()
		_, _ = ctx.CustomStatus()
	}
	return fmt.Sprint(n), nil
}

func notify(ctx *durable.OrchestrationContext, k string) { ctx.SetKVValue(k, "seen") }

const shipChange = "ship-receipt"

// Patches: a change id must be a constant.
func Patches(ctx *durable.OrchestrationContext, in string) (string, error) {
	if ctx.Patched("receipt") && ctx.Patched(shipChange) && ctx.Patched("a"+"b") {
		ctx.DeprecatePatch("older")
	}
	if ctx.Patched(in) { // want `ctx\.Patched with a non-constant change id in orchestration code: pass a constant`
		ctx.DeprecatePatch("v" + in) // want `ctx\.DeprecatePatch with a non-constant change id in orchestration code`
	}
	id := "computed"
	_ = ctx.Patched(id)                // want `ctx\.Patched with a non-constant change id`
	for k := range map[string]bool{} { // sizes record nothing: fine
		_ = ctx.HistorySize().Bytes + int64(len(k))
		_ = ctx.ContinueAsNewSuggested()
	}
	return "", nil
}

func IO(ctx *durable.OrchestrationContext, _ string) (string, error) {
	home := os.Getenv("HOME")               // want `os\.Getenv in orchestration code: do I/O in an activity \(durable\.CallActivity\)`
	_, _ = os.LookupEnv("X")                // want `os\.LookupEnv in orchestration code`
	data, _ := os.ReadFile("/etc/hosts")    // want `os\.ReadFile in orchestration code`
	_ = os.WriteFile("/tmp/x", data, 0o600) // want `os\.WriteFile in orchestration code`
	f, err := os.Open("/etc/hosts")         // want `os\.Open in orchestration code`
	if os.IsNotExist(err) {                 // error predicates are fine
		return "", err
	}
	_ = f.Close()                     // want `\(\*os\.File\)\.Close in orchestration code`
	conn, _ := net.Dial("tcp", "x:1") // want `net\.Dial in orchestration code`
	_ = conn
	_ = os.Environ()                // want `os\.Environ in orchestration code`
	_ = randv2.N(10)                // want `math/rand/v2\.N in orchestration code`
	resp, _ := http.Get("http://x") // want `net/http\.Get in orchestration code`
	_ = resp
	fmt.Println(home)                      // want `fmt\.Println in orchestration code: use ctx\.Logger\(\) or ctx\.TraceInfo`
	log.Printf("%s", home)                 // want `log\.Printf in orchestration code: use ctx\.Logger\(\)`
	slog.Info("home", "dir", home)         // want `slog\.Info in orchestration code: use ctx\.Logger\(\)`
	ctx.Logger().Info("home", "dir", home) // the replay-safe logger is fine
	return fmt.Sprintf("%s", home), nil    // formatting is fine
}

func Globals(ctx *durable.OrchestrationContext, _ string) (string, error) {
	counter++             // want `write to package-level variable counter in orchestration code: keep state in locals`
	counter = counter + 1 // want `write to package-level variable counter in orchestration code`
	cache["k"] = "v"      // want `write to package-level variable cache in orchestration code`
	state.n = 1           // want `write to package-level variable state in orchestration code`
	*ptr = 2              // want `write to package-level variable ptr in orchestration code`
	helpers.Mode = "x"    // want `write to package-level variable Mode in orchestration code`
	local := counter      // reading is not a write
	local++
	mu.Lock()         // want `\(\*sync\.Mutex\)\.Lock in orchestration code`
	defer mu.Unlock() // want `\(\*sync\.Mutex\)\.Unlock in orchestration code`
	return fmt.Sprint(local), nil
}

// Reach: helpers of the same package that orchestration code calls, or
// hands as a function value, are checked; so are literals it holds.
func Reach(ctx *durable.OrchestrationContext, _ string) (string, error) {
	stamp()
	run(tick)
	s := &svc{}
	s.step()
	f := func() { _ = time.Now() } // want `time\.Now in orchestration code`
	f()
	blk := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (int, error) {
		time.Sleep(time.Millisecond) // want `time\.Sleep in orchestration code`
		return 0, nil
	})
	_, err := blk.Await()
	return "", err
}

func stamp() { _ = time.Now().Unix() } // want `time\.Now in orchestration code: use ctx\.UTCNow\(\), .* \(orch\.stamp is reached from orch\.Reach\)$`

func run(f func()) { f() }

func tick() { counter++ } // want `write to package-level variable counter in orchestration code: .* \(orch\.tick is reached from orch\.Reach\)`

type svc struct{}

func (s *svc) step() { _ = rand.Int() } // want `math/rand\.Int in orchestration code`

// CrossPackage calls helpers of another package of the module: the calls
// that reach a nondeterministic construct are reported here, where they
// become orchestration code.
func CrossPackage(ctx *durable.OrchestrationContext, _ string) (string, error) {
	t := helpers.Stamp()   // want `call to helpers\.Stamp reaches time\.Now \(helpers\.go:\d+\) in orchestration code: use ctx\.UTCNow\(\)`
	_ = helpers.Indirect() // want `call to helpers\.Indirect reaches time\.Now \(helpers\.go:\d+\) in orchestration code`
	c := helpers.Counter{}
	c.Bump()                    // want `call to \(\*helpers\.Counter\)\.Bump reaches \(\*sync\.Mutex\)\.Lock`
	_ = helpers.Replays()       // its read is ignored where it is: fine
	_ = helpers.Pure("x")       // deterministic helper: fine
	_, _ = helpers.WithCtx(ctx) // orchestration code by signature: reported in its own package
	return t.String(), nil
}

// Registered orchestrations: literals and method values.
func Register(r *durable.Registry) {
	_ = durable.RegisterOrchestration(r, "Lit", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return time.Now().String(), nil // want `time\.Now in orchestration code`
	})
	w := &worker{}
	_ = r.AddOrchestration("Method", w.Orchestrate)
	_ = r.AddOrchestrationVersion("Var", "2.0.0", varOrch)
	_ = r.AddActivity("Act", func(ctx durable.ActivityContext, in string) (string, error) {
		return time.Now().String(), nil // activities may read the clock
	})
	_ = durable.RegisterActivity(r, "Act2", activity)
}

type worker struct{ last time.Time }

func (w *worker) Orchestrate(ctx *durable.OrchestrationContext, in string) (string, error) {
	w.last = time.Now() // want `time\.Now in orchestration code`
	return in, nil
}

var varOrch = func(ctx *durable.OrchestrationContext, in string) (string, error) {
	return os.Getenv(in), nil // want `os\.Getenv in orchestration code`
}

// Activity code is not orchestration code, even when an orchestration of
// the package names it.
func activity(ctx durable.ActivityContext, in int) (string, error) {
	counter++
	go func() {}()
	_, err := os.ReadFile("x")
	return time.Now().String(), err
}

// Outside orchestration code everything is allowed.
func NotAnOrchestration() { // want NotAnOrchestration:`reaches write to package-level variable counter`
	counter++
	ch := make(chan int, 1)
	go func() { ch <- 1 }()
	<-ch
	_ = time.Now()
	_ = rand.Int()
	_ = os.Getenv("HOME")
	mu.Lock()
	mu.Unlock()
}

// Deliberate nondeterminism, such as a test of the runtime's replay
// checks, is silenced line by line with the directive and a reason.
func Deliberate(ctx *durable.OrchestrationContext, _ string) (string, error) {
	//durablecheck:ignore counts replays on purpose
	counter++
	hits.Add(1) //durablecheck:ignore counts replays on purpose
	return "", nil
}
