package stress

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is one run, as printed by -json (one object per line).
type Result struct {
	System            string  `json:"system"`
	Backend           string  `json:"backend"`
	Workload          string  `json:"workload"`
	Wait              string  `json:"wait"` // "poll-<interval>" or "native"
	InFlight          int     `json:"in_flight"`
	OrchConcurrency   int     `json:"orch_concurrency"`
	WorkerConcurrency int     `json:"worker_concurrency"`
	FanOut            int     `json:"fan_out"`
	ActivityDelayMS   float64 `json:"activity_delay_ms"`
	PayloadBytes      int     `json:"payload_bytes"`
	InjectedLatencyMS float64 `json:"injected_latency_ms,omitempty"`
	DurationS         float64 `json:"duration_s"`
	ElapsedS          float64 `json:"elapsed_s"`
	Launched          int     `json:"launched"`
	Completed         int     `json:"completed"`
	Failed            int     `json:"failed"`
	Errors            int     `json:"errors"`
	OrchPerSec        float64 `json:"orch_per_sec"`
	ActivitiesPerSec  float64 `json:"activities_per_sec"`
	P50MS             float64 `json:"p50_ms"`
	P95MS             float64 `json:"p95_ms"`
	P99MS             float64 `json:"p99_ms"`
	CPUSeconds        float64 `json:"cpu_s"`
	CPUPercent        float64 `json:"cpu_percent"`
	PeakMemMB         float64 `json:"peak_mem_mb"`
	// RequestsPerOrch and RUPerOrch count the runtime's Cosmos requests
	// (not the harness client's starts and status polls); Cosmos only.
	RequestsPerOrch *float64 `json:"requests_per_orch,omitempty"`
	RUPerOrch       *float64 `json:"ru_per_orch,omitempty"`
	// ClientRequestsPerOrch counts the status client's requests (its
	// waits) per completed instance, on a provider of its own; Cosmos
	// backends only.
	ClientRequestsPerOrch *float64 `json:"client_requests_per_orch,omitempty"`
	// OpsPerOrch splits RequestsPerOrch by kind of request.
	OpsPerOrch map[string]float64 `json:"ops_per_orch,omitempty"`
	LoadAvg    string             `json:"load_avg"`
	FirstError string             `json:"first_error,omitempty"`
}

// Fill copies m into r and derives the rates and percentiles.
func (r *Result) Fill(m Measured, cfg Config) {
	r.InFlight = cfg.InFlight
	r.DurationS = cfg.Duration.Seconds()
	r.Wait = "native"
	if cfg.PollInterval > 0 {
		r.Wait = "poll-" + cfg.PollInterval.String()
	}
	r.ElapsedS = m.Elapsed.Seconds()
	r.Launched, r.Completed, r.Failed, r.Errors = m.Launched, m.Completed, m.Failed, m.Errors
	if s := m.Elapsed.Seconds(); s > 0 {
		r.OrchPerSec = float64(m.Completed) / s
		r.ActivitiesPerSec = float64(m.Completed*cfg.ActivitiesPerOrch) / s
		r.CPUPercent = 100 * m.CPU.Seconds() / s
	}
	r.P50MS = ms(Percentile(m.Latencies, 50))
	r.P95MS = ms(Percentile(m.Latencies, 95))
	r.P99MS = ms(Percentile(m.Latencies, 99))
	r.CPUSeconds = m.CPU.Seconds()
	r.PeakMemMB = float64(m.PeakMemBytes) / (1 << 20)
	r.LoadAvg = LoadAvg()
	if m.FirstError != nil {
		r.FirstError = m.FirstError.Error()
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// LoadAvg is the machine's 1/5/15-minute load average ("" where unknown).
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// WriteJSON prints r as one line of JSON.
func WriteJSON(w io.Writer, r Result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// WriteTable prints rs as an aligned table.
func WriteTable(w io.Writer, rs []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tbackend\tworkload\twait\tslots\tfan-out\tdone\tfailed\torch/s\tact/s\tp50 ms\tp95 ms\tp99 ms\tCPU %\tpeak MB\treq/orch\tRU/orch\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%d\t%d\t%d\t%.2f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%.0f\t%s\t%s\t\n",
			r.System, r.Backend, r.Workload, r.Wait, r.OrchConcurrency, r.WorkerConcurrency, r.FanOut,
			r.Completed, r.Failed+r.Errors, r.OrchPerSec, r.ActivitiesPerSec, r.P50MS, r.P95MS, r.P99MS,
			r.CPUPercent, r.PeakMemMB, optf(r.RequestsPerOrch), optf(r.RUPerOrch))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "load average: %s\n", LoadAvg())
}

func optf(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *p)
}
