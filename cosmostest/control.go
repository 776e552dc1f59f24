package cosmostest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/duroxide-go/cdb/localcosmos"
)

// FaultSpec is a Fault in JSON, for the control endpoint: what another
// process (a chaos driver, a script with curl) sends to disturb a server it
// does not share memory with.
type FaultSpec struct {
	// Op is the operation to affect (an [Op] value such as "CreateItem" or
	// "Batch"); empty means all operations.
	Op Op `json:"op,omitempty"`
	// WritesOnly narrows the fault to writes: create, upsert, replace,
	// delete, patch and batch.
	WritesOnly bool `json:"writesOnly,omitempty"`
	// Priority is Fault.Priority: "Low", "High" or empty (every request).
	// {"priority": "Low", "status": 429, "subStatus": 3092} sheds
	// low-priority requests, as LowPriorityThrottle does.
	Priority Priority `json:"priority,omitempty"`
	// Probability, in (0, 1], is the chance that a matching request is
	// affected; 0 means always.
	Probability float64 `json:"probability,omitempty"`
	// Status, SubStatus, Headers, ApplyFirst and Times are as in Fault.
	Status     int               `json:"status,omitempty"`
	SubStatus  int               `json:"subStatus,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	ApplyFirst bool              `json:"applyFirst,omitempty"`
	Times      int               `json:"times,omitempty"`
	// DelayMs is Fault.Delay in milliseconds.
	DelayMs int64 `json:"delayMs,omitempty"`
	// Drop is "before" (DropBeforeApply), "after" (DropAfterApply) or empty.
	Drop string `json:"drop,omitempty"`
	// DurationMs, if positive, removes the fault after that many
	// milliseconds: a storm rather than a standing condition.
	DurationMs int64 `json:"durationMs,omitempty"`
}

// writeOps are the operations FaultSpec.WritesOnly selects.
var writeOps = map[Op]bool{OpCreateItem: true, OpUpsertItem: true, OpReplaceItem: true, OpDeleteItem: true, OpPatchItem: true, OpBatch: true}

// knownOps are the operation names a FaultSpec may name.
var knownOps = map[Op]bool{
	OpReadAccount: true, OpCreateDatabase: true, OpQueryDatabases: true, OpReadDatabase: true, OpDeleteDatabase: true,
	OpCreateContainer: true, OpQueryContainers: true, OpReadContainer: true, OpReplaceContainer: true, OpDeleteContainer: true,
	OpReadPartitionKeyRanges: true, OpCreateItem: true, OpUpsertItem: true, OpReadItem: true, OpReplaceItem: true,
	OpDeleteItem: true, OpPatchItem: true, OpQuery: true, OpBatch: true, OpQueryOffers: true, OpReadOffer: true, OpReplaceOffer: true,
}

// Fault converts the spec, rejecting one that is malformed or does nothing.
func (f FaultSpec) Fault() (Fault, error) {
	out := Fault{Status: f.Status, SubStatus: f.SubStatus, Headers: f.Headers, ApplyFirst: f.ApplyFirst,
		Times: f.Times, Delay: time.Duration(f.DelayMs) * time.Millisecond, Op: f.Op, Priority: f.Priority}
	switch f.Drop {
	case "":
	case "before":
		out.Drop = DropBeforeApply
	case "after":
		out.Drop = DropAfterApply
	default:
		return Fault{}, fmt.Errorf(`drop must be "before", "after" or empty, not %q`, f.Drop)
	}
	switch {
	case f.Op != "" && !knownOps[f.Op]:
		return Fault{}, fmt.Errorf("unknown op %q", f.Op)
	case f.Priority != "" && f.Priority != PriorityLow && f.Priority != PriorityHigh:
		return Fault{}, fmt.Errorf(`priority must be "Low", "High" or empty, not %q`, f.Priority)
	case f.WritesOnly && f.Op != "" && !writeOps[f.Op]:
		return Fault{}, fmt.Errorf("op %q is not a write, but writesOnly is set", f.Op)
	case f.Status != 0 && (f.Status < 400 || f.Status > 599):
		return Fault{}, fmt.Errorf("status %d is not an error status (400-599)", f.Status)
	case f.Status != 0 && out.Drop != DropNone:
		return Fault{}, fmt.Errorf("set status or drop, not both")
	case f.ApplyFirst && f.Status == 0:
		return Fault{}, fmt.Errorf("applyFirst needs a status")
	case f.Status == 0 && out.Drop == DropNone && f.DelayMs <= 0:
		return Fault{}, fmt.Errorf("the fault does nothing: set status, drop or delayMs")
	case f.Probability < 0 || f.Probability > 1:
		return Fault{}, fmt.Errorf("probability %v is not in [0, 1]", f.Probability)
	case f.Times < 0 || f.DelayMs < 0 || f.DurationMs < 0:
		return Fault{}, fmt.Errorf("times, delayMs and durationMs must not be negative")
	}
	if f.WritesOnly || (f.Probability > 0 && f.Probability < 1) {
		writes, p := f.WritesOnly, f.Probability
		out.Match = func(r *http.Request) bool {
			if writes && !writeOps[localcosmos.RequestOp(r)] {
				return false
			}
			return p <= 0 || p >= 1 || rand.Float64() < p
		}
	}
	return out, nil
}

// LatencySpec is the added latency in JSON (see Server.SetLatency).
type LatencySpec struct {
	MinMs int64 `json:"minMs"`
	MaxMs int64 `json:"maxMs"`
}

// controlFault is a fault added through the control endpoint.
type controlFault struct {
	ID     uint64
	Spec   FaultSpec
	entry  *faultEntry
	remove func()
	timer  *time.Timer
}

// controller serves ControlHandler.
type controller struct {
	s      *Server
	mu     sync.Mutex
	faults map[uint64]*controlFault
}

// ControlHandler returns an HTTP handler that changes the server's faults
// and latency from another process; cmd/cosmostest serves it on its own
// address. It speaks JSON:
//
//	GET    /faults       faults added here that are still active, with "left" (remaining times, -1 = unlimited)
//	POST   /faults       add a FaultSpec; answers {"id": n}
//	DELETE /faults/{id}  remove one
//	DELETE /faults       remove every fault, including those injected in-process
//	GET    /latency      the added latency, a LatencySpec
//	PUT    /latency      set it (zeros remove it)
//	GET    /stats        requests received per operation
//
// Errors are answered with a status and {"error": "..."}.
func (s *Server) ControlHandler() http.Handler {
	c := &controller{s: s, faults: map[uint64]*controlFault{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /faults", c.listFaults)
	mux.HandleFunc("POST /faults", c.addFault)
	mux.HandleFunc("DELETE /faults", c.clearFaults)
	mux.HandleFunc("DELETE /faults/{id}", c.removeFault)
	mux.HandleFunc("GET /latency", c.getLatency)
	mux.HandleFunc("PUT /latency", c.setLatency)
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) { writeControlJSON(w, http.StatusOK, s.Counts()) })
	return mux
}

func writeControlJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func controlError(w http.ResponseWriter, status int, format string, args ...any) {
	writeControlJSON(w, status, map[string]string{"error": fmt.Sprintf(format, args...)})
}

// decodeControl reads a small JSON body, refusing unknown fields so a typo
// is an error instead of a fault that silently does something else.
func decodeControl(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64*1024))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		controlError(w, http.StatusBadRequest, "bad JSON: %v", err)
		return false
	}
	return true
}

func (c *controller) addFault(w http.ResponseWriter, r *http.Request) {
	var spec FaultSpec
	if !decodeControl(w, r, &spec) {
		return
	}
	f, err := spec.Fault()
	if err != nil {
		controlError(w, http.StatusBadRequest, "%v", err)
		return
	}
	entry, remove := c.s.injectFault(f)
	cf := &controlFault{ID: entry.id, Spec: spec, entry: entry, remove: remove}
	c.mu.Lock()
	c.faults[cf.ID] = cf
	if spec.DurationMs > 0 {
		cf.timer = time.AfterFunc(time.Duration(spec.DurationMs)*time.Millisecond, func() { c.drop(cf.ID) })
	}
	c.mu.Unlock()
	writeControlJSON(w, http.StatusCreated, map[string]uint64{"id": cf.ID})
}

// drop removes a fault added here; it reports whether it was known.
func (c *controller) drop(id uint64) bool {
	c.mu.Lock()
	cf, ok := c.faults[id]
	delete(c.faults, id)
	c.mu.Unlock()
	if ok {
		cf.remove()
		if cf.timer != nil {
			cf.timer.Stop()
		}
	}
	return ok
}

func (c *controller) removeFault(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil || !c.drop(id) {
		controlError(w, http.StatusNotFound, "no fault %q", r.PathValue("id"))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (c *controller) clearFaults(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	for id, cf := range c.faults {
		if cf.timer != nil {
			cf.timer.Stop()
		}
		delete(c.faults, id)
	}
	c.mu.Unlock()
	c.s.ClearFaults()
	w.WriteHeader(http.StatusNoContent)
}

// faultStatus is one entry of GET /faults.
type faultStatus struct {
	ID   uint64    `json:"id"`
	Spec FaultSpec `json:"spec"`
	Left int       `json:"left"`
}

func (c *controller) listFaults(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	list := make([]*controlFault, 0, len(c.faults))
	for _, cf := range c.faults {
		list = append(list, cf)
	}
	c.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	out := []faultStatus{}
	c.s.faultsMu.Lock()
	for _, cf := range list {
		if cf.entry.alive {
			out = append(out, faultStatus{ID: cf.ID, Spec: cf.Spec, Left: cf.entry.left})
		}
	}
	c.s.faultsMu.Unlock()
	writeControlJSON(w, http.StatusOK, out)
}

func (c *controller) getLatency(w http.ResponseWriter, _ *http.Request) {
	lo, hi := c.s.Latency()
	writeControlJSON(w, http.StatusOK, LatencySpec{MinMs: lo.Milliseconds(), MaxMs: hi.Milliseconds()})
}

func (c *controller) setLatency(w http.ResponseWriter, r *http.Request) {
	var spec LatencySpec
	if !decodeControl(w, r, &spec) {
		return
	}
	if spec.MinMs < 0 || spec.MaxMs < 0 {
		controlError(w, http.StatusBadRequest, "latency must not be negative")
		return
	}
	c.s.SetLatency(time.Duration(spec.MinMs)*time.Millisecond, time.Duration(spec.MaxMs)*time.Millisecond)
	c.getLatency(w, r)
}
