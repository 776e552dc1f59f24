package durable

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/duroxide-go/cdb/duroxide"
)

// Updates travel on duroxide's own model, so histories stay duroxide
// histories: a client's request is a message of the persistent queue
// updateQueue (ExternalSubscribedPersistent / ExternalEventPersistent in
// history), and every outcome is a KV key of the instance,
// updateKeyPrefix + the update's id (KeyValueSet), which clients read.
// The key is written once when the request is refused (no handler, or its
// validator said no) and twice when it is accepted: "accepted", then the
// handler's result or error. A request whose id already has a key is a
// duplicate and is dropped, so an update runs at most once per id.
const (
	updateQueue     = "__duroxide_update"
	updateKeyPrefix = "__duroxide_update:"
	// maxRetainedUpdates bounds the update keys an instance keeps (its KV
	// store holds MaxKVKeys in all): past it the oldest answered ones are
	// cleared, and a retry of one of those would run it again.
	maxRetainedUpdates = 64
)

// Update states as recorded in the update's KV key.
const (
	updateAccepted  = "accepted"
	updateCompleted = "completed"
	updateFailed    = "failed"
	updateRejected  = "rejected"
	updateUnknown   = "unknown"
)

// updateRequest is the queue message Client's Update sends.
type updateRequest struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Input string `json:"input"`
}

// updateRecord is an update's KV value.
type updateRecord struct {
	State string `json:"state"`
	Name  string `json:"name"`
	// Execution is the execution that accepted the update: one that
	// continued as new before answering never will.
	Execution uint64 `json:"execution,omitempty"`
	Result    string `json:"result,omitempty"`
	Error     string `json:"error,omitempty"`
	// Seq numbers the instance's records in the order they were taken
	// (across executions), so the oldest are cleared first; it is read
	// from the records themselves, which replay alike (a KV write's time
	// does not: it is the clock of the turn that runs the code).
	Seq uint64 `json:"seq"`
}

func (r updateRecord) answered() bool { return r.State != updateAccepted }

func (r updateRecord) encode() string {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // strings and a number only
	}
	return string(b)
}

func decodeUpdateRecord(s string) (updateRecord, error) {
	var r updateRecord
	err := json.Unmarshal([]byte(s), &r)
	return r, err
}

// rewoundUpdateRecord returns set, a KeyValueSet of failed execution
// from's history, as it goes into the prefix of execution next, which
// rewinds from: an update record naming from names next. Replaying the
// prefix, next's code writes its own execution id into the records it
// takes (takeUpdate), and a handler still running when from failed runs
// on in next, so a client must not read its "accepted" record as left by
// an execution that ended before answering.
func rewoundUpdateRecord(set duroxide.KeyValueSet, from, next uint64) duroxide.KeyValueSet {
	if !strings.HasPrefix(set.Key, updateKeyPrefix) {
		return set
	}
	r, err := decodeUpdateRecord(set.Value)
	if err != nil || r.Execution != from {
		return set
	}
	r.Execution = next
	set.Value = r.encode()
	return set
}

// updateHandler is one registered handler, typed away.
type updateHandler struct {
	validate func(input string) error
	run      func(input string) (string, error)
}

// updateHandlers is an orchestration context's handlers by name.
type updateHandlers struct {
	byName map[string]updateHandler
}

// UpdateHandlerOptions configures SetUpdateHandler.
type UpdateHandlerOptions[In any] struct {
	// Validator, when set, runs before the handler and may refuse the
	// request by returning an error: the handler does not run, no
	// "accepted" record is written, and the caller's Update returns an
	// error matching ErrUpdateRejected with the validator's text. It
	// must only read orchestration state, not wait or schedule anything
	// (it runs in the loop that takes the requests). A panic is a
	// rejection too.
	Validator func(ctx *OrchestrationContext, in In) error
}

// SetUpdateHandler registers handler for the updates named name that
// clients send with Update; a second registration of a name replaces the
// first. The first registration starts, when the orchestration next
// waits, a loop that takes the instance's update requests in arrival
// order: for each, an unknown name is refused (ErrUnknownUpdate for the
// caller), the validator runs, and an accepted request's handler runs as
// a Go block of its own (handlers may wait on activities, timers and
// events, and several may be in flight); its result or error is recorded
// durably for the caller. Register handlers from the orchestration
// function before it first waits, so no request meets an empty registry;
// an execution that ends (completes, fails, continues as new) stops the
// handlers still running, whose callers then get ErrUpdateUnanswered.
// Requests not yet taken when the execution continues as new are carried
// to the next execution, like every persistent queue message.
func SetUpdateHandler[In, Out any](ctx *OrchestrationContext, name string, handler func(ctx *OrchestrationContext, in In) (Out, error), opts ...UpdateHandlerOptions[In]) {
	o := lastOption(opts)
	h := updateHandler{
		validate: func(input string) error {
			in, err := Decode[In](input)
			if err != nil {
				return fmt.Errorf("update input: %v", err)
			}
			if o.Validator == nil {
				return nil
			}
			return callValidator(func() error { return o.Validator(ctx, in) })
		},
		run: func(input string) (string, error) {
			in, err := Decode[In](input)
			if err != nil {
				return "", err
			}
			out, err := handler(ctx, in)
			if err != nil {
				return "", err
			}
			return Encode(out)
		},
	}
	if ctx.updates == nil {
		ctx.updates = &updateHandlers{byName: map[string]updateHandler{}}
		goBlock(ctx, serveUpdates, false)
	}
	ctx.updates.byName[name] = h
}

// callValidator runs a validator, turning a panic into its rejection.
func callValidator(v func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("validator panicked: %s", panicMessage(r))
		}
	}()
	return v()
}

// serveUpdates is the loop SetUpdateHandler starts: it never returns,
// and ends with the execution.
func serveUpdates(ctx *OrchestrationContext) (struct{}, error) {
	for {
		raw, err := ctx.dequeueEvent(updateQueue).Await()
		if err != nil {
			return struct{}{}, err
		}
		var req updateRequest
		if json.Unmarshal([]byte(raw), &req) != nil || req.ID == "" {
			ctx.log().Warn("durable: dropped a malformed update request", "instance_id", ctx.instanceID)
			continue
		}
		takeUpdate(ctx, req)
	}
}

// takeUpdate judges one request and starts its handler if accepted.
func takeUpdate(ctx *OrchestrationContext, req updateRequest) {
	key := updateKeyPrefix + req.ID
	if _, seen := ctx.KVValue(key); seen {
		return // a duplicate: the update was taken before
	}
	seq := retainUpdates(ctx)
	h, ok := ctx.updates.byName[req.Name]
	if !ok {
		ctx.SetKVValue(key, updateRecord{State: updateUnknown, Name: req.Name, Error: fmt.Sprintf("no handler for update %q", req.Name), Seq: seq}.encode())
		return
	}
	if err := h.validate(req.Input); err != nil {
		ctx.SetKVValue(key, updateRecord{State: updateRejected, Name: req.Name, Error: err.Error(), Seq: seq}.encode())
		return
	}
	ctx.SetKVValue(key, updateRecord{State: updateAccepted, Name: req.Name, Execution: ctx.executionID, Seq: seq}.encode())
	goBlock(ctx, func(ctx *OrchestrationContext) (struct{}, error) {
		out, err := h.run(req.Input)
		rec := updateRecord{State: updateCompleted, Name: req.Name, Execution: ctx.executionID, Result: out, Seq: seq}
		if err != nil {
			rec = updateRecord{State: updateFailed, Name: req.Name, Execution: ctx.executionID, Error: err.Error(), Seq: seq}
		}
		ctx.SetKVValue(key, rec.encode())
		return struct{}{}, nil
	}, false)
}

// retainUpdates clears the oldest answered update records (by Seq, then
// key) so that with the one about to be written the instance keeps at
// most maxRetainedUpdates, and its KV store at most MaxKVKeys (an
// orchestration's own keys come first: the turn would fail past the
// limit). It returns the next record's Seq.
func retainUpdates(ctx *OrchestrationContext) uint64 {
	type old struct {
		key string
		seq uint64
	}
	var answered []old
	n, next := 0, uint64(1)
	for k, v := range ctx.kv {
		if !strings.HasPrefix(k, updateKeyPrefix) {
			continue
		}
		n++
		r, err := decodeUpdateRecord(v)
		if err == nil {
			next = max(next, r.Seq+1)
		}
		if err != nil || r.answered() {
			answered = append(answered, old{k, r.Seq})
		}
	}
	sort.Slice(answered, func(i, j int) bool {
		a, b := answered[i], answered[j]
		return a.seq < b.seq || (a.seq == b.seq && a.key < b.key)
	})
	total := len(ctx.kv)
	for _, o := range answered {
		if n < maxRetainedUpdates && total < MaxKVKeys {
			break
		}
		ctx.ClearKVValue(o.key)
		n, total = n-1, total-1
	}
	return next
}
