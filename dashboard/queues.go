package dashboard

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// sample is one reading of the store's counts, served as JSON to the
// queues page's throughput chart, which polls it and plots the change of
// the terminal count between readings.
type sample struct {
	At                 time.Time `json:"at"`
	OrchestratorQueue  int       `json:"orchestrator_queue"`
	WorkerQueue        int       `json:"worker_queue"`
	TotalInstances     uint64    `json:"total_instances"`
	RunningInstances   uint64    `json:"running_instances"`
	CompletedInstances uint64    `json:"completed_instances"`
	FailedInstances    uint64    `json:"failed_instances"`
	TotalExecutions    uint64    `json:"total_executions"`
	TotalEvents        uint64    `json:"total_events"`
}

// read takes a sample through the Client (QueueDepths and SystemMetrics:
// two admin reads, low priority).
func (h *handler) read(r *http.Request) (*sample, error) {
	ctx := duroxide.LowPriorityUnlessSet(r.Context())
	q, err := h.c.QueueDepths(ctx)
	if err != nil {
		return nil, err
	}
	m, err := h.c.SystemMetrics(ctx)
	if err != nil {
		return nil, err
	}
	return &sample{
		At: time.Now().UTC(), OrchestratorQueue: q.OrchestratorQueue, WorkerQueue: q.WorkerQueue,
		TotalInstances: m.TotalInstances, RunningInstances: m.RunningInstances, CompletedInstances: m.CompletedInstances,
		FailedInstances: m.FailedInstances, TotalExecutions: m.TotalExecutions, TotalEvents: m.TotalEvents,
	}, nil
}

func (h *handler) queues(w http.ResponseWriter, r *http.Request) {
	s, err := h.read(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	h.render(w, http.StatusOK, "queues", map[string]any{"S": s, "SampleURL": h.base + "/api/sample", "Nav": "queues"})
}

// sampleJSON serves one sample. The JSON is for the dashboard's own
// script (same origin; the CSP's connect-src); it holds only counts.
func (h *handler) sampleJSON(w http.ResponseWriter, r *http.Request) {
	s, err := h.read(r)
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	_ = json.NewEncoder(w).Encode(s)
}
