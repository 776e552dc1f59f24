package stress

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/embedded"
	"github.com/duroxide-go/cdb/memprovider"
	"github.com/duroxide-go/cdb/payload"
)

// Backends of the duroxide-go target.
const (
	BackendMemory     = "memory"
	BackendCosmostest = "cosmostest"
	// BackendEmbedded is the store embedded.Open opens without an
	// account: localcosmos with a data directory (a fresh temporary one,
	// removed at Close), every acknowledged write fsynced to its log, and
	// the provider calling it in process.
	BackendEmbedded = "embedded"
	BackendCosmos   = "cosmos"
)

// Workloads of the duroxide-go target.
const (
	// WorkloadFanout is duroxide's parallel-orchestrations workload.
	WorkloadFanout = "fanout"
	// WorkloadLarge is duroxide's large-payload workload: 20 sequential
	// activities with payloads of 1×, 5× and 10× PayloadBytes, 5
	// sub-orchestrations, 10 more small activities (~100 events).
	WorkloadLarge = "large"
	// WorkloadLongHistory runs Steps sequential activities in one
	// execution, so each turn replays a longer history.
	WorkloadLongHistory = "long-history"
	// WorkloadContinueAsNew runs Steps activities, one per execution,
	// continuing as new after each.
	WorkloadContinueAsNew = "continue-as-new"
)

// DuroxideOptions configures the duroxide-go target.
type DuroxideOptions struct {
	Backend           string
	Workload          string
	FanOut            int
	ActivityDelay     time.Duration
	PayloadBytes      int
	Steps             int
	OrchConcurrency   int
	WorkerConcurrency int
	// InjectedLatency is added to every cosmostest request.
	InjectedLatency time.Duration
	// MinPollInterval, if set, overrides the runtime's idle poll floor.
	MinPollInterval time.Duration
	// FetchAhead is both queues' fetch-ahead option (0: the runtime's
	// default; durable.NoSlots: none).
	FetchAhead int
	// HandOff is the runtime's WorkerHandOff (0: its default, -1: none).
	HandOff int
	// Gzip stores every payload through payload.Gzip (payload.Wrap around
	// both providers); the request stats are the store's, so RU/orch is
	// what the compressed documents cost.
	Gzip bool
	// HexPayload makes the fanout payload hex digits of a fixed
	// pseudo-random sequence, which compresses as typical text does
	// (about half), instead of one repeated byte, which compresses to
	// almost nothing.
	HexPayload bool
}

// Duroxide is the duroxide-go target. Instances are started through the
// runtime's provider, as a service starting its own work would (a start
// through another provider instance is noticed only by the dispatchers'
// idle polling); status polls go through a second provider instance over
// the same store, so that the request counts exclude the harness's polls
// but include the start.
type Duroxide struct {
	opts    DuroxideOptions
	rt      *durable.Runtime
	starter *durable.Client
	client  *durable.Client
	rtProv  *cdb.Provider // Cosmos backends only
	clProv  *cdb.Provider // the status client's, Cosmos backends only
	closers []func()
	input   string
	before  cdb.RequestStats
}

// Orchestration and activity names, as in duroxide's stress tests.
const (
	fanoutOrch   = "FanoutOrchestration"
	subOrch      = "LargePayloadSubOrchestration"
	processTask  = "ProcessTask"
	payloadTask  = "PayloadTask"
	historyOrch  = "HistoryOrchestration"
	canOrch      = "ContinueAsNewOrchestration"
	stepActivity = "Step"
)

// NewDuroxide starts the runtime on opts.Backend.
func NewDuroxide(ctx context.Context, opts DuroxideOptions) (*Duroxide, error) {
	if opts.Workload == "" {
		opts.Workload = WorkloadFanout
	}
	d := &Duroxide{opts: opts}
	runtimeProv, clientProv, err := d.providers(ctx)
	if err == nil && opts.Gzip {
		runtimeProv, clientProv, err = gzipped(runtimeProv, clientProv)
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	reg := durable.NewRegistry()
	if err := d.register(reg); err != nil {
		d.Close()
		return nil, err
	}
	rt, err := durable.Start(ctx, runtimeProv, reg, &durable.Options{
		OrchestrationConcurrency: opts.OrchConcurrency,
		WorkerConcurrency:        opts.WorkerConcurrency,
		MinPollInterval:          opts.MinPollInterval,
		OrchestrationFetchAhead:  opts.FetchAhead,
		WorkerFetchAhead:         opts.FetchAhead,
		WorkerHandOff:            opts.HandOff,
		Logger:                   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		d.Close()
		return nil, err
	}
	d.rt = rt
	d.starter = durable.NewClient(runtimeProv)
	d.client = durable.NewClient(clientProv)
	d.input = d.makeInput()
	if d.rtProv != nil {
		d.before = d.rtProv.RequestStats()
	}
	return d, nil
}

// gzipped puts both providers behind payload.Gzip; over memory they are
// one provider, so one wrapper.
func gzipped(runtimeProv, clientProv duroxide.Provider) (duroxide.Provider, duroxide.Provider, error) {
	rp, err := payload.Wrap(runtimeProv, payload.Gzip())
	if err != nil || clientProv == runtimeProv {
		return rp, rp, err
	}
	cp, err := payload.Wrap(clientProv, payload.Gzip())
	return rp, cp, err
}

// providers opens the runtime's and the client's provider.
func (d *Duroxide) providers(ctx context.Context) (runtimeProv, clientProv duroxide.Provider, err error) {
	switch d.opts.Backend {
	case BackendMemory:
		p := memprovider.New()
		return p, p, nil
	case BackendCosmostest:
		srv, err := cosmostest.NewServer(nil)
		if err != nil {
			return nil, nil, err
		}
		d.closers = append(d.closers, srv.Close)
		if l := d.opts.InjectedLatency; l > 0 {
			srv.SetLatency(l, l)
		}
		return d.cosmosProviders(ctx, cdb.Config{Endpoint: srv.Endpoint(), Key: srv.Key(), Database: "stress", Container: "stress"})
	case BackendEmbedded:
		dir, err := os.MkdirTemp("", "stress-embedded-")
		if err != nil {
			return nil, nil, err
		}
		d.closers = append(d.closers, func() { _ = os.RemoveAll(dir) })
		st, err := embedded.Open(ctx, &embedded.Options{DataDir: dir, Log: io.Discard})
		if err != nil {
			return nil, nil, err
		}
		d.closers = append(d.closers, func() { _ = st.Close() })
		// The status polls' provider shares the store's configuration,
		// in-process transport included.
		cfg := st.Config
		cfg.SkipBootstrap = true
		cp, err := cdb.New(ctx, cfg, nil)
		if err != nil {
			return nil, nil, err
		}
		d.closers = append(d.closers, func() { _ = cp.Close() })
		d.rtProv, d.clProv = st.Provider, cp
		return st.Provider, cp, nil
	case BackendCosmos:
		cfg, err := cdb.ConfigFromEnv()
		if err != nil {
			return nil, nil, err
		}
		return d.cosmosProviders(ctx, cfg)
	}
	return nil, nil, fmt.Errorf("stress: unknown backend %q (want memory, cosmostest, embedded or cosmos)", d.opts.Backend)
}

func (d *Duroxide) cosmosProviders(ctx context.Context, cfg cdb.Config) (duroxide.Provider, duroxide.Provider, error) {
	cfg.ClientOptions = pooledClientOptions(cfg.ClientOptions)
	rp, err := cdb.New(ctx, cfg, nil)
	if err != nil {
		return nil, nil, err
	}
	d.closers = append(d.closers, func() { _ = rp.Close() })
	cfg.SkipBootstrap = true
	cfg.ClientOptions = pooledClientOptions(cfg.ClientOptions)
	cp, err := cdb.New(ctx, cfg, nil)
	if err != nil {
		return nil, nil, err
	}
	d.closers = append(d.closers, func() { _ = cp.Close() })
	d.rtProv, d.clProv = rp, cp
	return rp, cp, nil
}

// pooledClientOptions gives a provider its own HTTP connection pool, large
// enough to keep a connection per concurrent request: the SDK's shared
// default keeps 10 idle connections per host, and with the harness's status
// polls beyond that every request would open a new connection.
func pooledClientOptions(in *azcosmos.ClientOptions) *azcosmos.ClientOptions {
	var o azcosmos.ClientOptions
	if in != nil {
		o = *in
	}
	if o.Transport == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 512, 256
		o.Transport = &http.Client{Transport: tr}
	}
	return &o
}

// register adds the workload's orchestrations and activities.
func (d *Duroxide) register(reg *durable.Registry) error {
	delay := d.opts.ActivityDelay
	sleep := func(ctx durable.ActivityContext) {
		if delay > 0 {
			t := time.NewTimer(delay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
		}
	}
	errs := []error{
		reg.AddActivity(processTask, func(ctx durable.ActivityContext, in string) (string, error) {
			sleep(ctx)
			return in, nil
		}),
		reg.AddActivity(payloadTask, func(ctx durable.ActivityContext, in string) (string, error) {
			sleep(ctx)
			n, _ := strconv.Atoi(in)
			return Payload(n), nil
		}),
		reg.AddActivity(stepActivity, func(ctx durable.ActivityContext, in string) (string, error) {
			sleep(ctx)
			return in, nil
		}),
		reg.AddOrchestration(fanoutOrch, d.fanout),
		reg.AddOrchestration(subOrch, largeSub),
		reg.AddOrchestration(historyOrch, longHistory),
		reg.AddOrchestration(canOrch, continueAsNew),
	}
	return errors.Join(errs...)
}

// fanout is FanoutOrchestration: the fan-out or the large-payload body.
func (d *Duroxide) fanout(ctx *durable.OrchestrationContext, in string) (string, error) {
	if d.opts.Workload == WorkloadLarge {
		return largePayload(ctx, in)
	}
	n, payload, _ := strings.Cut(in, ":")
	tasks, err := strconv.Atoi(n)
	if err != nil {
		return "", fmt.Errorf("bad input %q", in)
	}
	futs := make([]*durable.Future[string], tasks)
	for i := range futs {
		futs[i] = durable.CallActivity[string](ctx, processTask, strconv.Itoa(i)+":"+payload)
	}
	for _, r := range durable.Join(ctx, futs...) {
		if r.Err != nil {
			return "", r.Err
		}
	}
	return strconv.Itoa(tasks), nil
}

// largePayload follows duroxide's large_payload scenario with base size in
// (bytes): small = 1×, medium = 5×, large = 10×.
func largePayload(ctx *durable.OrchestrationContext, in string) (string, error) {
	small, _ := strconv.Atoi(in)
	medium, large := 5*small, 10*small
	sizes := make([]int, 0, 30)
	for i := 0; i < 20; i++ {
		sizes = append(sizes, []int{small, medium, large}[min(i/6, 2)])
	}
	for _, n := range sizes {
		if _, err := durable.CallActivity[string](ctx, payloadTask, strconv.Itoa(n)).Await(); err != nil {
			return "", err
		}
	}
	subs := make([]*durable.Future[string], 5)
	for i := range subs {
		subs[i] = durable.CallSubOrchestration[string](ctx, subOrch, strconv.Itoa(medium))
	}
	for _, r := range durable.Join(ctx, subs...) {
		if r.Err != nil {
			return "", r.Err
		}
	}
	for i := 0; i < 10; i++ {
		if _, err := durable.CallActivity[string](ctx, payloadTask, strconv.Itoa(small)).Await(); err != nil {
			return "", err
		}
	}
	return Payload(large), nil
}

// largeSub runs two payload activities.
func largeSub(ctx *durable.OrchestrationContext, in string) (string, error) {
	for i := 0; i < 2; i++ {
		if _, err := durable.CallActivity[string](ctx, payloadTask, in).Await(); err != nil {
			return "", err
		}
	}
	return "ok", nil
}

// longHistory runs in (a count) sequential activities in one execution.
func longHistory(ctx *durable.OrchestrationContext, in string) (string, error) {
	steps, _ := strconv.Atoi(in)
	for i := 0; i < steps; i++ {
		if _, err := durable.CallActivity[string](ctx, stepActivity, strconv.Itoa(i)).Await(); err != nil {
			return "", err
		}
	}
	return in, nil
}

// continueAsNew runs one activity per execution; in is the steps left.
func continueAsNew(ctx *durable.OrchestrationContext, in string) (string, error) {
	left, _ := strconv.Atoi(in)
	if left <= 0 {
		return "done", nil
	}
	if _, err := durable.CallActivity[string](ctx, stepActivity, in).Await(); err != nil {
		return "", err
	}
	return "", durable.ContinueAsNew(ctx, strconv.Itoa(left-1))
}

// Payload is n bytes of printable filler.
func Payload(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("x", n)
}

// ActivitiesPerOrch is how many activities one instance of the workload runs.
func (d *Duroxide) ActivitiesPerOrch() int {
	switch d.opts.Workload {
	case WorkloadLarge:
		return 20 + 5*2 + 10
	case WorkloadLongHistory, WorkloadContinueAsNew:
		return d.opts.Steps
	}
	return d.opts.FanOut
}

func (d *Duroxide) makeInput() string {
	switch d.opts.Workload {
	case WorkloadLarge:
		return strconv.Itoa(d.opts.PayloadBytes)
	case WorkloadLongHistory, WorkloadContinueAsNew:
		return strconv.Itoa(d.opts.Steps)
	}
	if d.opts.HexPayload {
		return strconv.Itoa(d.opts.FanOut) + ":" + hexPayload(d.opts.PayloadBytes)
	}
	return strconv.Itoa(d.opts.FanOut) + ":" + Payload(d.opts.PayloadBytes)
}

// hexPayload is n hex digits of a fixed pseudo-random sequence.
func hexPayload(n int) string {
	rng := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, (n+1)/2)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return hex.EncodeToString(b)[:n]
}

func (d *Duroxide) orchestration() string {
	switch d.opts.Workload {
	case WorkloadLongHistory:
		return historyOrch
	case WorkloadContinueAsNew:
		return canOrch
	}
	return fanoutOrch
}

// Start implements Target.
func (d *Duroxide) Start(ctx context.Context, id string) error {
	return d.starter.StartOrchestration(ctx, id, d.orchestration(), d.input)
}

// Status implements Target with Client.InstanceInfo: one point read
// of the instance document on Cosmos, where Client.Status reads
// the instance, its history and its custom status.
func (d *Duroxide) Status(ctx context.Context, id string) (done, failed bool, err error) {
	info, err := d.client.InstanceInfo(ctx, id)
	if errors.Is(err, duroxide.ErrInstanceNotFound) {
		return false, false, nil // its first turn has not run yet
	}
	if err != nil {
		return false, false, err
	}
	switch info.Status {
	case "Completed":
		return true, false, nil
	case "Failed":
		return true, true, nil
	}
	return false, false, nil
}

// Wait implements Target with Client.WaitForOrchestration.
func (d *Duroxide) Wait(ctx context.Context, id string) (failed bool, err error) {
	st, err := d.client.WaitForOrchestration(ctx, id, durable.WaitOptions{Timeout: 5 * time.Minute})
	if err != nil {
		return false, err
	}
	return st.State == durable.StateFailed, nil
}

// Cost returns the runtime's Cosmos requests and RU per completed
// instance since the start; ok is false on the memory backend.
func (d *Duroxide) Cost(completed int) (requests, ru float64, ok bool) {
	if d.rtProv == nil || completed == 0 {
		return 0, 0, false
	}
	after := d.rtProv.RequestStats()
	var n int64
	var charge float64
	for op, s := range after {
		n += s.Requests - d.before[op].Requests
		charge += s.RequestCharge - d.before[op].RequestCharge
	}
	return float64(n) / float64(completed), charge / float64(completed), true
}

// opsPerOrch breaks the runtime's requests per completed instance down by
// kind of request.
func (d *Duroxide) opsPerOrch(completed int) map[string]float64 {
	out := map[string]float64{}
	for op, s := range d.rtProv.RequestStats() {
		if n := s.Requests - d.before[op].Requests; n > 0 {
			out[string(op)] = float64(n) / float64(completed)
		}
	}
	return out
}

// Close stops the runtime and releases the backend.
func (d *Duroxide) Close() {
	if d.rt != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = d.rt.Shutdown(ctx)
		cancel()
	}
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
}

// RunDuroxide runs one duroxide-go measurement and returns its Result.
func RunDuroxide(ctx context.Context, opts DuroxideOptions, cfg Config) (Result, error) {
	if opts.Workload == "" {
		opts.Workload = WorkloadFanout
	}
	d, err := NewDuroxide(ctx, opts)
	if err != nil {
		return Result{}, err
	}
	defer d.Close()
	cfg.ActivitiesPerOrch = d.ActivitiesPerOrch()
	m := Run(ctx, cfg, d)
	r := Result{System: "duroxide-go", Backend: opts.Backend, Workload: opts.Workload,
		OrchConcurrency: orDefault(opts.OrchConcurrency, 2), WorkerConcurrency: orDefault(opts.WorkerConcurrency, 2),
		FanOut: opts.FanOut, ActivityDelayMS: ms(opts.ActivityDelay), PayloadBytes: opts.PayloadBytes}
	if opts.Backend == BackendCosmostest {
		r.InjectedLatencyMS = ms(opts.InjectedLatency)
	}
	r.Fill(m, cfg)
	if req, ru, ok := d.Cost(m.Completed); ok {
		r.RequestsPerOrch, r.RUPerOrch = &req, &ru
		r.OpsPerOrch = d.opsPerOrch(m.Completed)
	}
	if d.clProv != nil && m.Completed > 0 {
		var n int64
		for _, s := range d.clProv.RequestStats() {
			n += s.Requests
		}
		per := float64(n) / float64(m.Completed)
		r.ClientRequestsPerOrch = &per
	}
	return r, nil
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
