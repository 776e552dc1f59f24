package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestSmokeJSON runs a one-second stress run per backend and checks the
// JSON object it prints: the fields a reader of the results relies on are
// present and consistent with one another.
func TestSmokeJSON(t *testing.T) {
	for _, backend := range []string{"memory", "cosmostest", "embedded"} {
		t.Run(backend, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := []string{"-backend", backend, "-duration", "1s", "-inflight", "4", "-fanout", "3", "-activity-delay", "1ms", "-json"}
			if err := run(t.Context(), args, &out, &errOut); err != nil {
				t.Fatalf("run: %v\nstderr:\n%s", err, errOut.String())
			}
			lines := nonEmptyLines(out.String())
			if len(lines) != 1 {
				t.Fatalf("want one JSON line, got %d:\n%s", len(lines), out.String())
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
				t.Fatalf("bad JSON %q: %v", lines[0], err)
			}
			for _, k := range []string{"system", "backend", "completed", "failed", "orch_per_sec", "activities_per_sec", "p50_ms", "p95_ms", "p99_ms"} {
				if _, ok := m[k]; !ok {
					t.Errorf("field %q missing in %s", k, lines[0])
				}
			}
			_, hasReq := m["requests_per_orch"]
			_, hasRU := m["ru_per_orch"]
			if cosmos := backend != "memory"; hasReq != cosmos || hasRU != cosmos {
				t.Errorf("requests_per_orch/ru_per_orch present = %v/%v, want %v", hasReq, hasRU, cosmos)
			}
			if m["system"] != "duroxide-go" || m["backend"] != backend {
				t.Errorf("system/backend = %v/%v", m["system"], m["backend"])
			}
			completed, _ := m["completed"].(float64)
			if completed < 1 || m["failed"] != 0.0 || m["errors"] != 0.0 {
				t.Errorf("completed %v failed %v errors %v (first error %v)", m["completed"], m["failed"], m["errors"], m["first_error"])
			}
			if act, orch := m["activities_per_sec"].(float64), m["orch_per_sec"].(float64); math.Abs(act-3*orch) > 1e-9*act {
				t.Errorf("activities_per_sec %v != 3 × orch_per_sec %v", act, orch)
			}
			if p50, p99 := m["p50_ms"].(float64), m["p99_ms"].(float64); p50 <= 0 || p99 < p50 {
				t.Errorf("p50 %v p99 %v", p50, p99)
			}
			if !strings.Contains(errOut.String(), "run 1/1") {
				t.Errorf("no progress on stderr: %q", errOut.String())
			}
		})
	}
}

// TestBadFlags checks that bad input is refused with a clear error.
func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-concurrency", "0/2"},
		{"-fanout", "x"},
		{"-latency", "5"},
		{"-backend", "nope", "-duration", "1ms"},
	} {
		var out, errOut bytes.Buffer
		if err := run(t.Context(), append(args, "-quiet"), &out, &errOut); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

func nonEmptyLines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}
